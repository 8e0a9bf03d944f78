//! A streaming model through the CLI, as a voice-activity pipeline uses it: the LSTM step of
//! `tests/golden/onnx_streaming/` (state as graph inputs and outputs, as Silero VAD's) quantized
//! with its initial state fixed at zero (`--input-value`), calibrated on a stream (the default:
//! the samples in order as one sequence), then `microquant run` over a stream of frames follows
//! ONNX Runtime running that stream with the state fed back; `run --reset-state` follows ONNX
//! Runtime's zero-state runs instead; `--calib-reset-state` calibrates each sample from zero.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn golden(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden/onnx_streaming").join(file)
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("microquant-cli-streaming-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn microquant(args: &[OsString]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_microquant")).args(args).output().expect("run microquant")
}

fn ok(args: &[OsString]) -> String {
    let out = microquant(args);
    assert!(out.status.success(), "microquant {args:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn npy(path: &Path) -> Vec<f32> {
    microquant::npy::Npy::parse(&std::fs::read(path).unwrap()).unwrap().to_f32()
}

fn sqnr(want: &[f32], got: &[f32]) -> f64 {
    assert_eq!(want.len(), got.len());
    let (mut s, mut n) = (0f64, 0f64);
    for (&a, &b) in want.iter().zip(got) {
        s += f64::from(a) * f64::from(a);
        n += f64::from(a - b) * f64::from(a - b);
    }
    10.0 * (s / n.max(1e-30)).log10()
}

fn quantize(out: &Path, extra: &[&str]) {
    let zeros = vec!["0"; 16].join(",");
    let mut args: Vec<OsString> = vec![
        "quantize".into(),
        golden("lstm_stream.onnx").into(),
        "--calib".into(),
        golden("calibration.npy").into(),
        "--input-value".into(),
        format!("h0={zeros}").into(),
        "--input-value".into(),
        format!("c0={zeros}").into(),
        "--output-name".into(),
        "y".into(),
    ];
    args.extend(extra.iter().map(OsString::from));
    args.extend(["-o".into(), out.into()]);
    ok(&args);
}

fn run(model: &Path, out: &Path, extra: &[&str]) -> Vec<f32> {
    let mut args: Vec<OsString> = vec![
        "run".into(),
        model.into(),
        "--input".into(),
        golden("stream.npy").into(),
        "--dequantize".into(),
        "-o".into(),
        out.into(),
    ];
    args.extend(extra.iter().map(OsString::from));
    ok(&args);
    npy(out)
}

#[test]
fn a_stream_runs_as_onnx_runtime_streams_it() {
    let model = tmp("stream.mq");
    quantize(&model, &[]);
    let streamed = run(&model, &tmp("streamed.npy"), &[]);
    let s = sqnr(&npy(&golden("expected_streamed.npy")), &streamed);
    println!("run over the stream vs ONNX Runtime's stream: SQNR {s:.1} dB");
    assert!(s >= 25.0, "{s:.1} dB");
    // Each frame from the zero state: ONNX Runtime's stateless runs.
    let stateless = run(&model, &tmp("stateless.npy"), &["--reset-state"]);
    let s0 = sqnr(&npy(&golden("expected_stateless.npy")), &stateless);
    println!("run --reset-state vs ONNX Runtime's zero-state runs: SQNR {s0:.1} dB");
    assert!(s0 >= 20.0, "{s0:.1} dB");
    assert!(sqnr(&npy(&golden("expected_streamed.npy")), &stateless) < 5.0, "the state matters in this model");

    // Calibrated from the zero state each sample, the stream's ranges are missed.
    let independent = tmp("independent.mq");
    quantize(&independent, &["--calib-reset-state"]);
    let s1 = sqnr(&npy(&golden("expected_streamed.npy")), &run(&independent, &tmp("ind.npy"), &[]));
    assert!(s1 < s - 10.0, "{s1:.1} dB against {s:.1} dB");

    // QEMU runs the samples as one sequence; --reset-state is the host's.
    let out = microquant(&[
        "run".into(),
        model.clone().into(),
        "--input".into(),
        golden("stream.npy").into(),
        "-o".into(),
        tmp("q.npy").into(),
        "--reset-state".into(),
        "--target".into(),
        "qemu-m4".into(),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--reset-state runs on the host only"), "{err}");
}
