#![no_main]
//! `npy_read`: core's `.npy` reader (`microquant::npy`, which the CLI and the npm package read
//! with) and every conversion of what it reads.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    microquant_fuzz::npy_read(data);
});
