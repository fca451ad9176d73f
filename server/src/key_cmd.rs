//! `idem key derive`: one payload, or JSON lines with `--batch`.

use crate::cli::CatalogArgs;
use idem_core::{Catalog, KeyDeriver, Payload, RulesVersion, TenantId};
use std::borrow::Cow;
use std::io::{BufRead, Read, Write};
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
        .derive(catalog, &tenant, &parsed.action, &parsed.payload, version)
        .map(|d| d.key)
        .map_err(|e| e.to_string())
}

fn batch(catalog: &Catalog, deriver: &KeyDeriver, version: Option<RulesVersion>) -> ExitCode {
    let stdin = std::io::stdin();
    let mut input = std::io::BufReader::with_capacity(1 << 20, stdin.lock());
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 20, stdout.lock());
    let mut buf = Vec::with_capacity(4096);
    let mut all_ok = true;
    let mut last_tenant = None;
    loop {
        buf.clear();
        match input.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                eprintln!("error: reading stdin: {e}");
                return ExitCode::from(2);
            }
        }
        let bytes = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        let result = std::str::from_utf8(bytes)
            .map_err(|_| "the line is not valid UTF-8".to_owned())
            .and_then(|line| derive_line(line, catalog, deriver, version, &mut last_tenant));
        let written = match result {
            Ok(key) => writeln!(out, "{key}"),
            Err(msg) => {
                all_ok = false;
                // One output line per input line, whatever the message says.
                writeln!(out, "error: {}", msg.replace(['\n', '\r'], " "))
            }
        };
        if written.is_err() {
            // The reader went away (e.g. `| head`): stop quietly.
            return ExitCode::from(1);
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
