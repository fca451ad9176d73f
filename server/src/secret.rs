//! Where the HMAC secret comes from.

use anyhow::Context;
use idem_core::Secret;
use std::path::Path;

/// The environment variable holding the secret. Its UTF-8 bytes are the HMAC
/// key, exactly as a Python service reading `os.environ[...].encode()` uses it.
pub const ENV: &str = "IDEMPOTENCY_HMAC_KEY";

/// The file `serve` keeps a generated secret in, inside the data directory.
pub const FILE: &str = "hmac.key";

/// The secret from the environment, or a clear error.
pub fn from_env() -> anyhow::Result<Secret> {
    match std::env::var(ENV) {
        Ok(v) if !v.is_empty() => Ok(Secret::new(v.into_bytes())?),
        _ => anyhow::bail!(
            "{ENV} is not set: keys are HMAC-SHA256 under that secret, and deriving one without it \
             would give keys no other service can reproduce. Export the secret your services share \
             (for a local `idem serve`, `export {ENV}=$(cat data/{FILE})`)."
        ),
    }
}

/// The secret in `path` (its text, trimmed), naming the file in any error.
pub fn from_file(path: &Path) -> anyhow::Result<Secret> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the HMAC secret file {}", path.display()))?;
    Secret::new(text.trim().as_bytes().to_vec())
        .with_context(|| format!("the HMAC secret file {} is empty", path.display()))
}

/// Whether `IDEMPOTENCY_HMAC_KEY` holds a secret.
pub fn in_env() -> bool {
    std::env::var(ENV).is_ok_and(|v| !v.is_empty())
}

/// The secret for `serve`: the environment's, else the one in the data
/// directory, else a new random 32-byte secret written there (mode 0600)
/// as 64 hex characters. Returns whether it was created.
pub fn for_serve(data_dir: &Path) -> anyhow::Result<(Secret, bool)> {
    if let Ok(s) = from_env() {
        return Ok((s, false));
    }
    let path = data_dir.join(FILE);
    if path.exists() {
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        return Ok((Secret::new(text.trim().as_bytes().to_vec())?, false));
    }
    let bytes: [u8; 32] = rand::random();
    let text = hex::encode(bytes);
    write_private(&path, text.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
    Ok((Secret::new(text.into_bytes())?, true))
}

#[cfg(unix)]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

#[cfg(not(unix))]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(path, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serve_creates_a_private_secret_once() {
        if std::env::var(ENV).is_ok() {
            return; // the environment's secret takes precedence; nothing to test
        }
        let dir = tempfile::tempdir().unwrap();
        let (a, created) = for_serve(dir.path()).unwrap();
        assert!(created);
        let (b, created_again) = for_serve(dir.path()).unwrap();
        assert!(!created_again);
        assert_eq!(a.expose(), b.expose());
        assert_eq!(a.expose().len(), 64);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
