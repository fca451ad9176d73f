//! Logging: one `tracing` subscriber to standard error, filtered by
//! `IDEM_LOG` (default `info,sqlx=warn`).

/// Installs the subscriber once; later calls do nothing.
pub fn init_tracing() {
    use std::io::IsTerminal;
    use tracing_subscriber::EnvFilter;
    let filter =
        EnvFilter::try_from_env("IDEM_LOG").unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour codes only for a person at a terminal, never into log files.
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}
