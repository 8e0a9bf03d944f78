#![no_main]
//! `npy_read`: both `.npy` readers on the same bytes, compiled from their own source files:
//! the wasm package's (`wasm/src/npy.rs`, pure Rust on bytes) and the CLI's (`cli/src/npy.rs`,
//! npyz on a file).
use libfuzzer_sys::fuzz_target;

thread_local! {
    static PATH: std::path::PathBuf = {
        let dir = if std::path::Path::new("/dev/shm").is_dir() { "/dev/shm".into() } else { std::env::temp_dir() };
        dir.join(format!("microquant-fuzz-npy-{}.npy", std::process::id()))
    };
}

fuzz_target!(|data: &[u8]| {
    PATH.with(|p| microquant_fuzz::npy_read(data, p));
});
