//! `idem key derive`: one payload, or JSON lines with `--batch`.

use super::options::CatalogArgs;
use idem_core::{Catalog, KeyDeriver, Payload, RulesVersion, TenantId};
use std::borrow::Cow;
use std::io::{Read, Write};
use std::process::ExitCode;

/// Options of `idem key derive`.
#[derive(Debug, clap::Args)]
pub struct DeriveArgs {
    /// Tenant id (single-payload mode).
    #[arg(long, required_unless_present = "batch")]
    tenant: Option<String>,
    /// Action type, e.g. pix.cobranca (single-payload mode).
    #[arg(long, required_unless_present = "batch")]
    action: Option<String>,
    /// Rules version to derive with, overriding the catalog's (1 or 2).
    #[arg(long, value_name = "N")]
    rules_version: Option<u32>,
    /// Read JSON lines {"tenant","action","payload"} and print one line each:
    /// the key, or `error: <message>`.
    #[arg(long, conflicts_with_all = ["tenant", "action"])]
    batch: bool,
    #[command(flatten)]
    catalog: CatalogArgs,
}

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

/// Runs the command.
pub fn run(args: &DeriveArgs) -> ExitCode {
    let catalog = match args.catalog.load() {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let version = match args.rules_version.map(RulesVersion::try_from).transpose() {
        Ok(v) => v,
        Err(e) => return fail(e),
    };
    let deriver = match crate::secret::from_env() {
        Ok(s) => KeyDeriver::new(&s),
        Err(e) => return fail(e),
    };
    if args.batch {
        return batch(&catalog, &deriver, version);
    }
    let (Some(tenant), Some(action)) = (&args.tenant, &args.action) else {
        return fail("--tenant and --action are required without --batch");
    };
    let tenant = match TenantId::try_from(tenant.as_str()) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    let mut text = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut text) {
        return fail(format!("cannot read the payload from stdin: {e}"));
    }
    let derived = Payload::from_json(text.trim())
        .and_then(|p| deriver.derive(&catalog, &tenant, action, &p, version));
    match derived {
        Ok(d) => {
            println!("{}", d.key);
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}

#[derive(serde::Deserialize)]
struct Line<'a> {
    #[serde(borrow)]
    tenant: Cow<'a, str>,
    #[serde(borrow)]
    action: Cow<'a, str>,
    #[serde(borrow)]
    payload: Payload<'a>,
    #[serde(default)]
    rules_version: Option<u32>,
}

/// Derives one line's key, reusing the previous line's parsed tenant.
fn derive_line(
    line: &str,
    catalog: &Catalog,
    deriver: &KeyDeriver,
    version: Option<RulesVersion>,
    last_tenant: &mut Option<TenantId>,
) -> Result<idem_core::IdempotencyKey, String> {
    if line.trim().is_empty() {
        return Err("empty line".into());
    }
    idem_core::json::check_depth(line.as_bytes(), idem_core::json::MAX_DEPTH)
        .map_err(|e| e.to_string())?;
    let parsed: Line<'_> = serde_json::from_str(line)
        .map_err(|e| format!("not a JSON line with tenant, action and payload: {e}"))?;
    let tenant = match last_tenant {
        Some(t) if t.as_str() == parsed.tenant => t.clone(),
        _ => {
            let t = TenantId::try_from(parsed.tenant.as_ref()).map_err(|e| e.to_string())?;
            *last_tenant = Some(t.clone());
            t
        }
    };
    let version = match parsed.rules_version {
        Some(n) => Some(RulesVersion::try_from(n).map_err(|e| e.to_string())?),
        None => version,
    };
    deriver
        .derive_key(catalog, &tenant, &parsed.action, &parsed.payload, version)
        .map(|(key, _)| key)
        .map_err(|e| e.to_string())
}

/// Bytes of input handed to one worker at a time.
const CHUNK: usize = 2 << 20;

/// Reads up to about `CHUNK` bytes ending at a line boundary (or at end of
/// input). `carry` holds the partial line left over from the last read.
fn next_chunk(input: &mut impl Read, carry: &mut Vec<u8>) -> std::io::Result<Option<Vec<u8>>> {
    let mut chunk = std::mem::take(carry);
    chunk.reserve(CHUNK + 4096);
    let mut eof = false;
    while chunk.len() < CHUNK {
        let start = chunk.len();
        chunk.resize(start + 64 * 1024, 0);
        let n = input.read(&mut chunk[start..])?;
        chunk.truncate(start + n);
        if n == 0 {
            eof = true;
            break;
        }
    }
    if chunk.is_empty() {
        return Ok(None);
    }
    if !eof {
        match chunk.iter().rposition(|&b| b == b'\n') {
            Some(i) => *carry = chunk.split_off(i + 1),
            // One line longer than a chunk: keep reading until it ends.
            None => {
                *carry = chunk;
                return next_chunk(input, carry).map(|c| c.or_else(|| Some(std::mem::take(carry))));
            }
        }
    }
    Ok(Some(chunk))
}

/// Derives every line of a chunk; returns the output and whether all succeeded.
fn process_chunk(
    chunk: &[u8],
    catalog: &Catalog,
    deriver: &KeyDeriver,
    version: Option<RulesVersion>,
) -> (Vec<u8>, bool) {
    let mut out = Vec::with_capacity(chunk.len() / 2);
    let mut all_ok = true;
    let mut last_tenant = None;
    let body = chunk.strip_suffix(b"\n").unwrap_or(chunk);
    let mut emit = |result: Result<idem_core::IdempotencyKey, String>| match result {
        Ok(key) => {
            out.extend_from_slice(key.as_str().as_bytes());
            out.push(b'\n');
        }
        Err(msg) => {
            all_ok = false;
            // One output line per input line, whatever the message says.
            out.extend_from_slice(b"error: ");
            out.extend_from_slice(msg.replace(['\n', '\r'], " ").as_bytes());
            out.push(b'\n');
        }
    };
    match std::str::from_utf8(body) {
        // The common case: validate the whole chunk once and split with the
        // standard library's memchr-based search.
        Ok(text) => {
            for line in text.split('\n') {
                let line = line.strip_suffix('\r').unwrap_or(line);
                emit(derive_line(
                    line,
                    catalog,
                    deriver,
                    version,
                    &mut last_tenant,
                ));
            }
        }
        // Some line is not UTF-8: go line by line so only that one fails.
        Err(_) => {
            for raw in body.split(|&b| b == b'\n') {
                let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
                let result = std::str::from_utf8(raw)
                    .map_err(|_| "the line is not valid UTF-8".to_owned())
                    .and_then(|line| {
                        derive_line(line, catalog, deriver, version, &mut last_tenant)
                    });
                emit(result);
            }
        }
    }
    (out, all_ok)
}

/// Batch mode: chunks of lines derived on every core, written in input order.
fn batch(catalog: &Catalog, deriver: &KeyDeriver, version: Option<RulesVersion>) -> ExitCode {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 16);
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut carry = Vec::new();
    let mut all_ok = true;
    loop {
        let mut round = Vec::with_capacity(workers);
        for _ in 0..workers {
            match next_chunk(&mut input, &mut carry) {
                Ok(Some(c)) => round.push(c),
                Ok(None) => break,
                Err(e) => {
                    eprintln!("error: reading stdin: {e}");
                    return ExitCode::from(2);
                }
            }
        }
        if round.is_empty() {
            break;
        }
        let results: Vec<(Vec<u8>, bool)> = std::thread::scope(|s| {
            let handles: Vec<_> = round[1..]
                .iter()
                .map(|c| s.spawn(move || process_chunk(c, catalog, deriver, version)))
                .collect();
            let mut results = vec![process_chunk(&round[0], catalog, deriver, version)];
            for h in handles {
                results.push(
                    h.join()
                        .unwrap_or_else(|_| (b"error: internal failure\n".to_vec(), false)),
                );
            }
            results
        });
        for (bytes, ok) in results {
            all_ok &= ok;
            if out.write_all(&bytes).is_err() {
                // The reader went away (e.g. `| head`): stop quietly.
                return ExitCode::from(1);
            }
        }
    }
    if out.flush().is_err() {
        return ExitCode::from(1);
    }
    if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
