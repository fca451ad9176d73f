//! `idem audit` on small fixture projects: every line marked `EXPECT:` is
//! found, with its source, and nothing else is; the exit codes.

use idem_server::cli::audit::{scan, Source};
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/audit")
}

fn source_name(s: Source) -> String {
    serde_json::to_value(s)
        .unwrap()
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn every_expected_finding_and_no_other() {
    let mut want = Vec::new();
    for entry in walk(&fixtures()) {
        let text = std::fs::read_to_string(&entry).unwrap();
        for (i, line) in text.lines().enumerate() {
            if let Some((_, kind)) = line.split_once("EXPECT: ") {
                want.push((entry.clone(), i + 1, kind.trim().to_owned()));
            }
        }
    }
    want.sort();
    let mut got: Vec<(PathBuf, usize, String)> = scan(&fixtures())
        .unwrap()
        .into_iter()
        .map(|f| (f.file, f.line, source_name(f.source)))
        .collect();
    got.sort();
    assert_eq!(got, want);
    // Every language and every source is covered by the fixtures.
    for lang in ["python", "node", "go", "java", "rust"] {
        assert!(
            want.iter()
                .any(|(p, ..)| p.to_string_lossy().contains(lang)),
            "{lang}"
        );
    }
    for kind in ["random_id", "clock", "delivery_id", "model_output_hash"] {
        assert!(want.iter().any(|(_, _, k)| k == kind), "{kind}");
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn idem(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_idem"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn exit_codes_and_output() {
    let root = fixtures();
    let (code, stdout, _) = idem(&["audit", root.join("python").to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        stdout.contains("worker.py:11: idempotency key from `uuid.uuid4(` (assigned on line 10): a random id is new on every attempt"),
        "{stdout}"
    );
    let (code, stdout, stderr) = idem(&["audit", root.join("clean").to_str().unwrap()]);
    assert_eq!((code, stdout.as_str()), (0, ""), "{stderr}");
    let (code, stdout, _) = idem(&["audit", "--json", root.join("go").to_str().unwrap()]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 2);
    assert_eq!(v[0]["source"], "random_id");
    assert_eq!(v[0]["via_line"], 10);
    let (code, _, stderr) = idem(&["audit", "/nonexistent/idem-audit"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("does not exist"));
}
