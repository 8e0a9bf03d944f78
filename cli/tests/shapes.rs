//! `microquant quantize --input-shape / --input-value`: ONNX models with dynamic axes and a
//! non-float side input (`tests/golden/onnx/shapes/`, written by `tests/gen/gen_onnx_shapes.py`)
//! quantize once their shapes and values are fixed; without them, the error line says which
//! option fixes what.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "../../tests/support/npy_v1.rs"]
mod npy_v1;

fn model(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden/onnx/shapes").join(file)
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("microquant-cli-shapes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn microquant(args: &[OsString]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_microquant")).args(args).output().expect("run microquant")
}

/// Seeded samples in [-2, 2) (a small LCG: the values only need to vary).
fn write_samples(path: &Path, shape: &[usize]) {
    let n: usize = shape.iter().product();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let data: Vec<u8> = (0..n)
        .flat_map(|_| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            ((state >> 40) as f32 / (1u64 << 24) as f32 * 4.0 - 2.0).to_le_bytes()
        })
        .collect();
    std::fs::write(path, npy_v1::npy_v1("<f4", &npy_v1::tuple(shape), &data)).unwrap();
}

fn args(file: &str, calib: &Path, out: &Path, extra: &[&str]) -> Vec<OsString> {
    let mut v: Vec<OsString> = vec!["quantize".into(), model(file).into(), "--calib".into(), calib.into()];
    v.extend(extra.iter().map(OsString::from));
    v.extend(["-o".into(), out.into()]);
    v
}

fn ok(args: &[OsString]) -> String {
    let out = microquant(args);
    assert!(out.status.success(), "microquant {args:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn fails(args: &[OsString]) -> String {
    let out = microquant(args);
    assert!(!out.status.success(), "microquant {args:?} succeeded");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    err
}

/// The report's output SQNR (dB).
fn sqnr(report: &Path) -> f64 {
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(report).unwrap()).unwrap();
    v["model"]["output_sqnr_db"].as_f64().unwrap()
}

#[test]
fn dynamic_spatial_axes_are_fixed_by_input_shape() {
    let calib = tmp("dyn.npy");
    write_samples(&calib, &[8, 3, 12, 10]);
    let (mq, report, qdq) = (tmp("dyn.mq"), tmp("dyn.json"), tmp("dyn_qdq.onnx"));
    let r = report.to_str().unwrap();
    let q = qdq.to_str().unwrap();
    let stdout =
        ok(&args("dyn_conv_opset13.onnx", &calib, &mq, &["--input-shape", "x=1x3x12x10", "--report", r, "--qdq", q]));
    assert!(stdout.contains("Conv2d") && stdout.contains("FullyConnected"), "{stdout}");
    assert!(sqnr(&report) > 30.0, "{stdout}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(v["inputs"][0]["shape"], serde_json::json!([1, 12, 10, 3]), "{v}");
    assert!(std::fs::metadata(&mq).unwrap().len() > 0 && std::fs::metadata(&qdq).unwrap().len() > 0);
    // Without the option: the input, the axis, its name and the option.
    let e = fails(&args("dyn_conv_opset13.onnx", &calib, &mq, &[]));
    assert!(
        e.contains("axis 2") && e.contains("\"height\"") && e.contains("--input-shape x=1x3x<height>x<width>"),
        "{e}"
    );
    // A shape that contradicts the model, and one that does not parse.
    let e = fails(&args("dyn_conv_opset13.onnx", &calib, &mq, &["--input-shape", "x=1x4x12x10"]));
    assert!(e.contains("static extent 3 on axis 1"), "{e}");
    let bad = microquant(&args("dyn_conv_opset13.onnx", &calib, &mq, &["--input-shape", "x=1x3xHxW"]));
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("\"H\" is not a positive integer"));
    // The samples must have the fixed shape.
    let e = fails(&args("dyn_conv_opset13.onnx", &calib, &mq, &["--input-shape", "x=1x3x8x8"]));
    assert!(e.contains("does not fit the model input") && e.contains("[N, 3, 8, 8]"), "{e}");
}

#[test]
fn a_non_float_input_is_fixed_by_input_value() {
    let calib = tmp("audio.npy");
    write_samples(&calib, &[8, 160]);
    let (mq, report) = (tmp("audio.mq"), tmp("audio.json"));
    let r = report.to_str().unwrap();
    let extra = ["--input-shape", "x=1x160", "--input-value", "sr=16000", "--input-value", "gain=-0.5", "--report", r];
    let stdout = ok(&args("audio_sr.onnx", &calib, &mq, &extra));
    // sr folded: hop 16 -> 10 frames.
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(v["outputs"][0]["shape"], serde_json::json!([1, 10]), "{stdout}");
    assert!(sqnr(&report) > 30.0, "{stdout}");
    // Without the value: the option that fixes it; a value that is not a whole number.
    let e = fails(&args("audio_sr.onnx", &calib, &mq, &["--input-shape", "x=1x160", "--input-value", "gain=1"]));
    assert!(e.contains("\"sr\" is INT64") && e.contains("--input-value sr="), "{e}");
    let e = fails(&args(
        "audio_sr.onnx",
        &calib,
        &mq,
        &["--input-shape", "x=1x160", "--input-value", "gain=1", "--input-value", "sr=16000.5"],
    ));
    assert!(e.contains("16000.5") && e.contains("whole number"), "{e}");
    // An input the model does not have.
    let e = fails(&args("audio_sr.onnx", &calib, &mq, &["--input-value", "rate=16000"]));
    assert!(e.contains("\"rate\"") && e.contains("no input of that name"), "{e}");
}

#[test]
fn tflite_models_take_no_input_options() {
    let calib = tmp("tfl.npy");
    write_samples(&calib, &[2, 4]);
    let tfl = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden/models/tiny_m0_int8.tflite");
    let v: Vec<OsString> = vec![
        "quantize".into(),
        tfl.into(),
        "--calib".into(),
        calib.into(),
        "--input-shape".into(),
        "x=1x4".into(),
        "-o".into(),
        tmp("tfl.mq").into(),
    ];
    let e = fails(&v);
    assert!(e.contains("apply to ONNX models"), "{e}");
}
