//! The `idem` binary. Everything lives in the library so tests can call it.

fn main() -> std::process::ExitCode {
    idem_server::cli::main()
}
