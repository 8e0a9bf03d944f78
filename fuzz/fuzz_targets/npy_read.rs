#![no_main]
//! `npy_read`: both `.npy` readers on the same bytes, compiled from their own source files:
//! the wasm package's (`wasm/src/npy.rs`, pure Rust on bytes) and the CLI's (`cli/src/npy.rs`,
//! npyz on a file).
use libfuzzer_sys::fuzz_target;

extern crate alloc;

#[path = "../../wasm/src/npy.rs"]
#[allow(dead_code)]
mod wasm_npy;

/// The CLI's error type, as `cli/src/main.rs` defines it (the CLI is a binary crate).
pub struct CliError(pub String);

impl CliError {
    pub fn io(path: &std::path::Path, e: std::io::Error) -> Self {
        CliError(format!("{}: {e}", path.display()))
    }
}

#[path = "../../cli/src/npy.rs"]
#[allow(dead_code)]
mod cli_npy;

thread_local! {
    static PATH: std::path::PathBuf = {
        let dir = if std::path::Path::new("/dev/shm").is_dir() { "/dev/shm".into() } else { std::env::temp_dir() };
        dir.join(format!("microquant-fuzz-npy-{}.npy", std::process::id()))
    };
}

fuzz_target!(|data: &[u8]| {
    let _ = wasm_npy::parse(data, "fuzz.npy");
    PATH.with(|p| {
        if std::fs::write(p, data).is_ok() {
            let _ = cli_npy::read(p);
        }
    });
});
