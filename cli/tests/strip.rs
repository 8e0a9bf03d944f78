//! `microquant strip`: the KWS model without names, metadata and per-channel scales; `inspect`
//! and `run` read the stripped file (names shown as `t12`/`op3`), its outputs are the full
//! file's, byte for byte; a damaged file is refused in one line.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("microquant-cli-strip-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn microquant(args: &[&Path]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_microquant")).args(args).output().expect("run microquant")
}

fn ok(args: &[&Path]) -> String {
    let out = microquant(args);
    assert!(out.status.success(), "microquant {args:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn strip_kws_runs_the_same() {
    let p = Path::new;
    let (full, lean) = (tmp("kws.mq"), tmp("kws_lean.mq"));
    let tflite = repo().join("models/mlperf-tiny/kws_ref_model_int8.tflite");
    ok(&[p("import"), &tflite, p("-o"), &full]);
    let said = ok(&[p("strip"), &full, p("-o"), &lean]);
    assert!(said.contains("55172 -> 33412 bytes"), "{said}");
    let lean_len = std::fs::metadata(&lean).unwrap().len();
    assert!(lean_len <= 33_412, "stripped KWS is {lean_len} B");

    let text = ok(&[p("inspect"), &lean]);
    assert!(text.contains("stripped: no names or metadata"), "{text}");
    assert!(text.contains(" op0\n") && text.contains(" t0\n"), "{text}");
    assert!(text.contains("per-channel axis 0 (64, stripped)"), "{text}");
    assert!(!text.contains("source_file"), "metadata left: {text}");
    let json = ok(&[p("inspect"), &lean, p("--json")]);
    assert!(json.contains("\"stripped\": true"), "{json}");

    let samples = repo().join("models/examples/kws_samples.npy");
    let (y_full, y_lean) = (tmp("y_full.npy"), tmp("y_lean.npy"));
    ok(&[p("run"), &full, p("--input"), &samples, p("-o"), &y_full]);
    // A stripped model's input is named by index.
    let named = std::ffi::OsString::from(format!("t0={}", samples.display()));
    ok(&[p("run"), &lean, p("--input"), Path::new(&named), p("-o"), &y_lean]);
    assert_eq!(std::fs::read(&y_full).unwrap(), std::fs::read(&y_lean).unwrap());

    // Stripping again changes nothing.
    let again = tmp("kws_again.mq");
    ok(&[p("strip"), &lean, p("-o"), &again]);
    assert_eq!(std::fs::read(&lean).unwrap(), std::fs::read(&again).unwrap());

    // A damaged file: one line, naming the file.
    let mut bytes = std::fs::read(&lean).unwrap();
    let n = bytes.len();
    bytes[n - 7] ^= 0x40;
    let bad = tmp("kws_bad.mq");
    std::fs::write(&bad, &bytes).unwrap();
    let out = microquant(&[p("strip"), &bad, p("-o"), &tmp("never.mq")]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("kws_bad.mq") && err.contains("CRC"), "{err}");
}
