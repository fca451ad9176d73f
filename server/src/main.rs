//! The `idem` binary: parse the command line, dispatch. Everything else
//! lives in the library so tests can call it.

use clap::Parser;

/// mimalloc: the server allocates small, short-lived buffers per request
/// (headers, JSON, keys) from many threads, where glibc's malloc showed up
/// as the largest item in the profile (docs/PERFORMANCE.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    idem_server::cli::run(idem_server::cli::Cli::parse())
}
