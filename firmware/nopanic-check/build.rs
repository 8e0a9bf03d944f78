//! A memory map for the link (any board of the target will do: nothing runs; on thumbv6m the
//! micro:bit's map with a larger flash, since this image links every kernel of the crate).
use std::{env, fs, path::PathBuf};
fn main() {
    let target = env::var("TARGET").unwrap();
    let board = if target.starts_with("thumbv6m") {
        "microbit"
    } else if target.starts_with("thumbv8m") {
        "mps2-an505"
    } else {
        "mps2-an386"
    };
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let map = fs::read_to_string(format!("../memory/{board}.x")).unwrap();
    let map = if board == "microbit" { map.replace("LENGTH = 256K", "LENGTH = 1024K") } else { map };
    fs::write(out.join("memory.x"), map).unwrap();
    println!("cargo:rerun-if-changed=../memory/{board}.x");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed=build.rs");

    // A real model for the interpreter path: the tiny M0 test model, converted here.
    let tflite = "../../tests/golden/models/tiny_m0_int8.tflite";
    println!("cargo:rerun-if-changed={tflite}");
    let graph = microquant::tflite::import(&fs::read(tflite).unwrap()).unwrap();
    let c = microquant::compile::compile(&graph, &Default::default()).unwrap();
    fs::write(out.join("model.mq"), c.bytes).unwrap();
}
