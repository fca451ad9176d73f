//! `idem audit PATH`: the Monday check as a tool. It reads a codebase
//! (Python, TypeScript/JavaScript, Go, Java, Rust) and reports idempotency
//! keys built from values that change on every attempt: a fresh UUID, the
//! clock, a message or delivery id, a hash of the model's output. Each such
//! key is new on redelivery, so it deduplicates nothing.
//!
//! It is a linter, not a compiler: per file, it remembers which variables
//! were assigned from a per-attempt value, then flags every line that builds
//! or sends an idempotency key from such a value or variable. A line can
//! opt out with a comment containing `idem-audit: ok`.

use regex::Regex;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::LazyLock;

/// `idem audit` options.
#[derive(Debug, Clone, clap::Args)]
pub struct AuditArgs {
    /// A file or directory to scan (hidden directories, `node_modules`,
    /// `target`, `vendor`, `dist` and `build` are skipped).
    pub path: PathBuf,
    /// Print the findings as JSON (one array) instead of lines.
    #[arg(long)]
    pub json: bool,
}

/// What kind of per-attempt value a key came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A random UUID or id (uuid4, randomUUID, nanoid...).
    RandomId,
    /// The clock (now(), time(), Date.now()...).
    Clock,
    /// A message or delivery id (delivery tag, receipt handle...).
    DeliveryId,
    /// A hash of the model's output.
    ModelOutputHash,
}

impl Source {
    /// Why a key from this source breaks on redelivery.
    pub fn why(self) -> &'static str {
        match self {
            Source::RandomId => "a random id is new on every attempt, so a redelivered message gets a new key and the action runs again",
            Source::Clock => "the clock moves between attempts, so a retry gets a new key and the action runs again",
            Source::DeliveryId => "a delivery tag, receipt handle or attempt id changes on every redelivery, so the key does too",
            Source::ModelOutputHash => "the model's output varies between attempts (rephrased text, another amount), so its hash is a new key; derive the key from the recorded intent instead",
        }
    }
}

/// One idempotency key built from a per-attempt value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The file, as given or found under the scanned path.
    pub file: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// What the key came from.
    pub source: Source,
    /// The expression that produced the value (as written).
    pub value: String,
    /// Where that value was assigned, when it reached the key through a
    /// variable (1-based line).
    pub via_line: Option<usize>,
    /// Why it breaks on redelivery.
    pub why: &'static str,
}

fn re(s: &str) -> Regex {
    Regex::new(s).unwrap_or_else(|e| unreachable!("a constant pattern: {e}"))
}

/// Lines that build or send an idempotency key.
static KEY_CONTEXT: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)idempot\w*[_\- ]?key|idempotency|dedup\w*[_\-]?(key|id)|\bidem_?key\b")
});

static SOURCES: LazyLock<Vec<(Source, Regex)>> = LazyLock::new(|| {
    vec![
        (
            Source::RandomId,
            re(
                r"\buuid\.?uuid[14]\s*\(|\buuid[14]\s*\(|\buuid\.v[14]\s*\(|\buuidv[14]\s*\(|\brandomUUID\s*\(|Uuid::new_v[47]\s*\(|\buuid\.New(String)?\s*\(|\bnanoid\s*\(|\bulid\s*\(|\bsecrets\.token_\w+\s*\(|\bos\.urandom\s*\(|\bMath\.random\s*\(|\brand\.(Int|Read)\w*\s*\(|\brandom\.(random|randint|getrandbits)\s*\(",
            ),
        ),
        (
            Source::Clock,
            re(
                r"\btime\.time(_ns)?\s*\(|\bdatetime\.(datetime\.)?(now|utcnow)\s*\(|\bDate\.now\s*\(|\bnew Date\s*\(|\bperformance\.now\s*\(|\btime\.Now\s*\(|\bSystem\.(currentTimeMillis|nanoTime)\s*\(|\b(Instant|LocalDateTime|OffsetDateTime|ZonedDateTime)\.now\s*\(|\bSystemTime::now\s*\(|\b(Utc|Local)::now\s*\(|\btime\.monotonic\s*\(",
            ),
        ),
        (
            Source::DeliveryId,
            re(
                r"(?i)\bdelivery_?tag\b|\breceipt_?handle\b|\bdelivery_?id\b|\battempt_?(id|number|num|no|count)\b|\b(retry|redelivery)_?count\b|\bmessage_?id\b|\bmsg_?id\b|\bMessageId\b",
            ),
        ),
    ]
});

/// A hash call over something that names the model's output.
static MODEL_HASH: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)(sha\d*|md5|hash\w*|digest|createHash|blake\w*)\W.*\b(completion|choices|llm|model_?output|model_?response|response\.(text|content|output)|output_text|generated|extraction|extracted)\b",
    )
});

static ASSIGN: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^\s*(?:(?:export\s+)?(?:let|const|var|val|final|auto)\s+)?(?:mut\s+)?(?:[\w.<>\[\], ]+\s+)??([A-Za-z_][A-Za-z0-9_]*)\s*(?::\s*[^=]+?)?\s*(?::=|=)\s*([^=].*)$",
    )
});

static OK_MARK: LazyLock<Regex> = LazyLock::new(|| re(r"idem-audit:\s*ok"));

/// A function starts: what was assigned in the previous one is out of scope.
static FUNCTION_START: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^\s*(?:pub(?:\([\w:]+\))?\s+)?(?:async\s+)?(?:def|func|fn|function|export\s+(?:async\s+)?function|public|private|protected|static|void)\b",
    )
});

/// Whether `line` uses the variable `name` (not a field of that name, as in
/// `intent.key`).
fn mentions(line: &str, name: &str) -> bool {
    // Plain byte checks: this runs for every tainted variable on every
    // line, where compiling a pattern each time would dominate the scan.
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let bytes = line.as_bytes();
    line.match_indices(name).any(|(at, _)| {
        let before = at.checked_sub(1).map(|i| bytes[i]);
        let after = bytes.get(at + name.len()).copied();
        !before.is_some_and(|b| word(b) || b == b'.') && !after.is_some_and(word)
    })
}

fn source_of(text: &str) -> Option<(Source, String)> {
    if let Some(m) = MODEL_HASH.find(text) {
        return Some((Source::ModelOutputHash, m.as_str().trim().to_owned()));
    }
    SOURCES
        .iter()
        .find_map(|(s, r)| r.find(text).map(|m| (*s, m.as_str().trim().to_owned())))
}

fn is_comment(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with('#') || t.starts_with("//") || t.starts_with('*') || t.starts_with("/*")
}

/// The languages scanned, by file extension.
pub fn scanned(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("py" | "ts" | "tsx" | "js" | "jsx" | "mjs" | "cjs" | "go" | "java" | "kt" | "rs")
    )
}

/// Findings in one file's text.
pub fn scan_text(file: &Path, text: &str) -> Vec<Finding> {
    // Variables assigned from a per-attempt value: name -> (source, value, line).
    let mut tainted: Vec<(String, Source, String, usize)> = Vec::new();
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if is_comment(line) || OK_MARK.is_match(line) {
            continue;
        }
        if FUNCTION_START.is_match(line) {
            tainted.clear();
        }
        let direct = source_of(line);
        let in_key_context = KEY_CONTEXT.is_match(line);
        if in_key_context {
            if let Some((source, value)) = &direct {
                out.push(Finding {
                    file: file.to_owned(),
                    line: n,
                    source: *source,
                    value: value.clone(),
                    via_line: None,
                    why: source.why(),
                });
            } else if let Some((_, source, value, at)) =
                tainted.iter().find(|(name, ..)| mentions(line, name))
            {
                out.push(Finding {
                    file: file.to_owned(),
                    line: n,
                    source: *source,
                    value: value.clone(),
                    via_line: Some(*at),
                    why: source.why(),
                });
            }
        }
        if let Some(c) = ASSIGN.captures(line) {
            let name = c.get(1).map_or("", |m| m.as_str()).to_owned();
            let rhs = c.get(2).map_or("", |m| m.as_str());
            // A reassignment from a stable value clears the variable.
            tainted.retain(|(t, ..)| *t != name);
            let from_var = tainted
                .iter()
                .find(|(t, ..)| mentions(rhs, t))
                .map(|(_, s, v, at)| (*s, v.clone(), *at));
            match (source_of(rhs), from_var) {
                (Some((s, v)), _) => tainted.push((name, s, v, n)),
                (None, Some((s, v, at))) => tainted.push((name, s, v, at)),
                (None, None) => {}
            }
        }
    }
    out
}

const SKIPPED_DIRS: [&str; 6] = [
    "node_modules",
    "target",
    "vendor",
    "dist",
    "build",
    "__pycache__",
];

/// Findings under a path (a file or a directory), in path order.
pub fn scan(path: &Path) -> std::io::Result<Vec<Finding>> {
    let mut files = Vec::new();
    if path.is_file() {
        files.push(path.to_owned());
    } else {
        let walker = walkdir::WalkDir::new(path)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| {
                let name = e.file_name().to_string_lossy();
                e.depth() == 0 || !(name.starts_with('.') || SKIPPED_DIRS.contains(&name.as_ref()))
            });
        for entry in walker {
            let entry = entry.map_err(std::io::Error::other)?;
            if entry.file_type().is_file() && scanned(entry.path()) {
                files.push(entry.into_path());
            }
        }
    }
    let mut out = Vec::new();
    for f in files {
        // Not UTF-8 (generated or binary): nothing a key is written in.
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        out.extend(scan_text(&f, &text));
    }
    Ok(out)
}

/// Runs `idem audit`: exit 0 when clean, 1 with findings, 2 when the path
/// cannot be read.
pub fn run(a: &AuditArgs) -> ExitCode {
    if !a.path.exists() {
        eprintln!("error: {} does not exist", a.path.display());
        return ExitCode::from(2);
    }
    let findings = match scan(&a.path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", a.path.display());
            return ExitCode::from(2);
        }
    };
    if a.json {
        match serde_json::to_string_pretty(&findings) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        for f in &findings {
            let via = f
                .via_line
                .map(|l| format!(" (assigned on line {l})"))
                .unwrap_or_default();
            println!(
                "{}:{}: idempotency key from `{}`{via}: {}",
                f.file.display(),
                f.line,
                f.value,
                f.why
            );
        }
        if findings.is_empty() {
            eprintln!("idem audit: no idempotency key built from a per-attempt value");
        } else {
            eprintln!(
                "idem audit: {} finding(s). Derive the key from the recorded intent's frozen payload instead (see the manual: Key derivation).",
                findings.len()
            );
        }
    }
    if findings.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<(usize, Source)> {
        scan_text(Path::new("x"), text)
            .into_iter()
            .map(|f| (f.line, f.source))
            .collect()
    }

    #[test]
    fn direct_and_through_a_variable() {
        let py = "import uuid\nkey = str(uuid.uuid4())\nrequests.post(url, headers={'Idempotency-Key': key})\n";
        assert_eq!(lines(py), vec![(3, Source::RandomId)]);
        let f = &scan_text(Path::new("x"), py)[0];
        assert_eq!((f.via_line, f.value.as_str()), (Some(2), "uuid.uuid4("));
        assert_eq!(
            lines("const idempotencyKey = `${Date.now()}-${order.id}`;\n"),
            vec![(1, Source::Clock)]
        );
        // Two hops: a -> b -> header.
        assert_eq!(
            lines("let t = Date.now();\nlet k = 'c-' + t;\nfetch(u, {headers: {'Idempotency-Key': k}});\n"),
            vec![(3, Source::Clock)]
        );
    }

    #[test]
    fn stable_keys_comments_and_opt_outs_are_not_findings() {
        assert!(lines("idempotency_key = derive_key(intent.payload)\n").is_empty());
        assert!(lines("request_id = uuid.uuid4()  # for logs only\nlog(request_id)\n").is_empty());
        assert!(lines("# idempotency_key = uuid.uuid4()  was the bug\n").is_empty());
        assert!(lines("idempotency_key = uuid.uuid4()  # idem-audit: ok (test data)\n").is_empty());
        // Reassigned from a stable value before use.
        assert!(lines("k = uuid4()\nk = intent.key\nsend(idempotency_key=k)\n").is_empty());
    }

    #[test]
    fn model_output_hash_and_delivery_ids() {
        assert_eq!(
            lines("key = hashlib.sha256(completion.choices[0].message.content.encode()).hexdigest()\npay(idempotency_key=key)\n"),
            vec![(2, Source::ModelOutputHash)]
        );
        assert_eq!(
            lines("charge(ctx, IdempotencyKey: msg.DeliveryTag)\n"),
            vec![(1, Source::DeliveryId)]
        );
    }
}
