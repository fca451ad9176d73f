//! `idem-site WASM OUT_DIR NAME`: runs wasm-bindgen over the app's wasm for
//! the web, as cargo-leptos does, writing `NAME.js` and `NAME_bg.wasm` to
//! `OUT_DIR`. It links wasm-bindgen's own library at the version Cargo.lock
//! pins for the `wasm-bindgen` crate, so the glue always matches the wasm,
//! and a fresh machine compiles this (about a minute) instead of
//! wasm-bindgen's CLI with its test runner and HTTP client.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [wasm, out_dir, name] = args.as_slice() else {
        eprintln!("usage: idem-site WASM OUT_DIR NAME");
        return ExitCode::from(2);
    };
    match bindgen(PathBuf::from(wasm), PathBuf::from(out_dir), name) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("idem-site: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn bindgen(wasm: PathBuf, out_dir: PathBuf, name: &str) -> anyhow::Result<()> {
    let mut output = wasm_bindgen_cli_support::Bindgen::new()
        .input_path(wasm)
        .out_name(name)
        .web(true)?
        .debug(false)
        .keep_debug(false)
        .typescript(false)
        .generate_output()?;
    output.emit(out_dir)
}
