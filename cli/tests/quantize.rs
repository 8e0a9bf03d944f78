//! `microquant quantize`: float ONNX and TFLite models with calibration samples become `.mq`
//! models, reports and QDQ ONNX models; bad input is one clear error line. Runs the binary on
//! the committed digits models and data (`tests/golden/peers/`).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "../../tests/support/npy_v1.rs"]
mod npy_v1;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn peers(file: &str) -> PathBuf {
    repo().join("tests/golden/peers").join(file)
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("microquant-cli-quantize-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn microquant<S: AsRef<OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_microquant")).args(args).output().expect("run microquant")
}

fn ok<S: AsRef<OsStr> + std::fmt::Debug>(args: &[S]) -> String {
    let out = microquant(args);
    assert!(out.status.success(), "microquant {args:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The error line of a failing run (exactly one line on stderr).
fn fails<S: AsRef<OsStr> + std::fmt::Debug>(args: &[S]) -> String {
    let out = microquant(args);
    assert!(!out.status.success(), "microquant {args:?} succeeded");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    assert!(err.starts_with("microquant: error: "), "{err}");
    err
}

/// A float32 .npy (format 1.0).
fn write_npy_f32(path: &Path, shape: &[usize], data: &[f32]) {
    std::fs::write(
        path,
        npy_v1::npy_v1("<f4", &npy_v1::tuple(shape), &data.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()),
    )
    .unwrap();
}

#[test]
fn quantizes_an_onnx_model_with_report_and_qdq() {
    let (mq, report, qdq) = (tmp("cnn.mq"), tmp("cnn.json"), tmp("cnn_qdq.onnx"));
    let stdout = ok(&[
        "quantize".as_ref(),
        peers("cnn_nchw.onnx").as_os_str(),
        "--calib".as_ref(),
        peers("calib_nchw.npy").as_os_str(),
        "--labels".as_ref(),
        peers("calib_labels.npy").as_os_str(),
        "-o".as_ref(),
        mq.as_os_str(),
        "--report".as_ref(),
        report.as_os_str(),
        "--qdq".as_ref(),
        qdq.as_os_str(),
        "--observer".as_ref(),
        "minmax".as_ref(),
    ]);
    // The table: model line, accuracies, one line per layer.
    assert!(stdout.contains("mode static int8 | 200 samples"), "{stdout}");
    assert!(stdout.contains("accuracy: float"), "{stdout}");
    assert!(stdout.contains("SQNR dB"), "{stdout}");
    for layer in ["/conv1/Conv", "/conv2/Conv", "/fc/Gemm"] {
        assert!(stdout.contains(layer), "{layer} missing:\n{stdout}");
    }
    // The report as JSON.
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(v["model"]["samples"], 200);
    assert_eq!(v["layers"].as_array().unwrap().len(), 5);
    assert!(v["model"]["int8_accuracy"].as_f64().unwrap() > 0.95);
    // The QDQ model is what the library writes (tests/host/qdq.rs checks it against ONNX Runtime).
    let committed = std::fs::read(repo().join("tests/golden/qdq/export/cnn_minmax.onnx")).unwrap();
    assert_eq!(std::fs::read(&qdq).unwrap(), committed, "QDQ export differs from the committed one");
    // The .mq loads and runs: inspect it.
    let inspect = ok(&["inspect".as_ref(), mq.as_os_str()]);
    assert!(inspect.contains("CONV_2D"), "{inspect}");
}

#[test]
fn the_portable_qdq_export_reads_back_and_the_exact_one_says_so() {
    let (mq, exact, portable) = (tmp("rt.mq"), tmp("rt_qdq.onnx"), tmp("rt_portable.onnx"));
    let calib = peers("calib_nchw.npy");
    let stdout = ok(&[
        "quantize".as_ref(),
        peers("cnn_nchw.onnx").as_os_str(),
        "--calib".as_ref(),
        calib.as_os_str(),
        "-o".as_ref(),
        mq.as_os_str(),
        "--qdq".as_ref(),
        exact.as_os_str(),
        "--qdq-portable".as_ref(),
        portable.as_os_str(),
    ]);
    assert!(stdout.contains("QDQ ONNX (portable):"), "{stdout}");
    assert_ne!(std::fs::read(&exact).unwrap(), std::fs::read(&portable).unwrap());
    // The portable form is a QDQ model microquant reads with its scales.
    let again = tmp("rt_again.mq");
    let out = ok(&[
        "quantize".as_ref(),
        portable.as_os_str(),
        "--calib".as_ref(),
        calib.as_os_str(),
        "-o".as_ref(),
        again.as_os_str(),
    ]);
    assert!(std::fs::metadata(&again).unwrap().len() > 1000, "{out}");
    // The exact form computes integers in float ops for ONNX Runtime: the error says which to use.
    let err = fails(&[
        "quantize".as_ref(),
        exact.as_os_str(),
        "--calib".as_ref(),
        calib.as_os_str(),
        "-o".as_ref(),
        again.as_os_str(),
    ]);
    assert!(err.contains("--qdq-portable"), "{err}");
}

#[test]
fn every_observer_and_option() {
    for observer in ["minmax", "moving-average", "histogram", "entropy", "percentile", "percentile:99.9"] {
        let mq = tmp(&format!("mlp_{observer}.mq"));
        let out = ok(&[
            "quantize".as_ref(),
            peers("mlp_nhwc.onnx").as_os_str(),
            "--calib".as_ref(),
            peers("calib_nhwc.npy").as_os_str(),
            "--observer".as_ref(),
            observer.as_ref(),
            "-o".as_ref(),
            mq.as_os_str(),
        ]);
        let name = observer.split(':').next().unwrap();
        assert!(out.contains(&format!("observer {name}")), "{out}");
        assert!(std::fs::metadata(&mq).unwrap().len() > 1000);
    }
    // Per-tensor weights, single rounding, a per-layer observer, no bias correction.
    let mq = tmp("dscnn_options.mq");
    let out = ok(&[
        "quantize".as_ref(),
        peers("dscnn_nchw.onnx").as_os_str(),
        "--calib".as_ref(),
        peers("calib_nchw.npy").as_os_str(),
        "--per-tensor".as_ref(),
        "--rounding".as_ref(),
        "single".as_ref(),
        "--layer-observer".as_ref(),
        "/pw1/Conv=entropy".as_ref(),
        "--no-bias-correction".as_ref(),
        "-o".as_ref(),
        mq.as_os_str(),
    ]);
    assert!(out.contains("per-tensor weights"), "{out}");
    assert!(out.lines().any(|l| l.contains("/pw1/Conv") && l.contains("entropy")), "{out}");
    let inspect = ok(&["inspect".as_ref(), mq.as_os_str()]);
    assert!(inspect.contains("single"), "{inspect}");
}

#[test]
fn int16_layers_and_their_qdq_model() {
    let (mq, qdq) = (tmp("dscnn16.mq"), tmp("dscnn16.onnx"));
    let out = ok(&[
        "quantize".as_ref(),
        peers("dscnn_nchw.onnx").as_os_str(),
        "--calib".as_ref(),
        peers("calib_nchw.npy").as_os_str(),
        "--int16".as_ref(),
        "/pw1/Conv".as_ref(),
        "/Add".as_ref(),
        "-o".as_ref(),
        mq.as_os_str(),
        "--qdq".as_ref(),
        qdq.as_os_str(),
    ]);
    assert!(out.contains("static int8 + 16x8 layers"), "{out}");
    assert!(out.lines().any(|l| l.contains("/Add") && l.contains("i16")), "{out}");
    let inspect = ok(&["inspect".as_ref(), mq.as_os_str()]);
    assert!(inspect.contains("QUANTIZE"), "{inspect}");
    // int16 QuantizeLinear needs opset 21: the QDQ model says so.
    let bytes = std::fs::read(&qdq).unwrap();
    let model = microquant_onnx_opset(&bytes);
    assert_eq!(model, 21);
}

/// The default-domain opset of an ONNX model (ModelProto field 8, OperatorSetIdProto field 2),
/// read with a minimal protobuf walk.
fn microquant_onnx_opset(bytes: &[u8]) -> u64 {
    fn varint(b: &[u8], i: &mut usize) -> u64 {
        let mut v = 0u64;
        let mut s = 0;
        loop {
            let x = b[*i];
            *i += 1;
            v |= u64::from(x & 0x7f) << s;
            if x < 0x80 {
                return v;
            }
            s += 7;
        }
    }
    let mut i = 0;
    while i < bytes.len() {
        let key = varint(bytes, &mut i);
        let (field, wire) = (key >> 3, key & 7);
        match wire {
            0 => {
                varint(bytes, &mut i);
            }
            2 => {
                let len = varint(bytes, &mut i) as usize;
                if field == 8 {
                    let sub = &bytes[i..i + len];
                    let mut j = 0;
                    let mut version = 0;
                    let mut domain_empty = true;
                    while j < sub.len() {
                        let k = varint(sub, &mut j);
                        match (k >> 3, k & 7) {
                            (1, 2) => {
                                let l = varint(sub, &mut j) as usize;
                                domain_empty = l == 0;
                                j += l;
                            }
                            (2, 0) => version = varint(sub, &mut j),
                            (_, 0) => {
                                varint(sub, &mut j);
                            }
                            (_, 2) => {
                                let l = varint(sub, &mut j) as usize;
                                j += l;
                            }
                            _ => panic!("unexpected wire type"),
                        }
                    }
                    if domain_empty {
                        return version;
                    }
                }
                i += len;
            }
            5 => i += 4,
            1 => i += 8,
            _ => panic!("unexpected wire type {wire}"),
        }
    }
    panic!("no default-domain opset")
}

#[test]
fn quantizes_a_float_tflite_model() {
    // MLPerf Tiny's anomaly-detection autoencoder (float32 TFLite), SYNTHETIC calibration data:
    // uniform over its input range.
    let calib = tmp("ad_calib.npy");
    let mut r = 12345u64;
    let data: Vec<f32> = (0..16 * 640)
        .map(|_| {
            r = r.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((r >> 40) as f32 / (1u64 << 24) as f32) * 100.0 - 35.0
        })
        .collect();
    write_npy_f32(&calib, &[16, 640], &data);
    let mq = tmp("ad.mq");
    let out = ok(&[
        "quantize".as_ref(),
        repo().join("models/mlperf-tiny/ad01_float32.tflite").as_os_str(),
        "--calib".as_ref(),
        calib.as_os_str(),
        "-o".as_ref(),
        mq.as_os_str(),
    ]);
    assert!(out.contains("(TFLite, "), "{out}");
    assert!(out.contains("FullyConnected"), "{out}");
}

/// `microquant quantize MODEL --mode MODE EXTRA... -o OUT` (weight-only or dynamic): its stdout.
fn quantize_hybrid(model: &Path, mode: &str, extra: &[&OsStr], out: &Path) -> String {
    let mut args: Vec<&OsStr> = vec!["quantize".as_ref(), model.as_os_str(), "--mode".as_ref(), mode.as_ref()];
    args.extend_from_slice(extra);
    args.extend(["-o".as_ref(), out.as_os_str()]);
    ok(&args)
}

#[test]
fn weight_only_writes_the_onnx_model_and_measures_it() {
    // Without samples: the model only (tests/host/weight_only.rs checks it against ONNX Runtime).
    let out = tmp("digits_wo.onnx");
    let digits = repo().join("web-demo/examples/digits_cnn.onnx");
    let stdout = quantize_hybrid(&digits, "weight-only", &[], &out);
    assert!(stdout.contains("weight-only int8, 5 layers, per-channel weights"), "{stdout}");
    let committed = std::fs::read(repo().join("tests/golden/hybrid/digits.onnx")).unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), committed, "weight-only export differs from the committed one");
    // With samples and labels: the report, printed and as JSON.
    let (out, report) = (tmp("cnn_wo.onnx"), tmp("cnn_wo.json"));
    let (calib, labels) = (peers("calib_nchw.npy"), peers("calib_labels.npy"));
    let extra = [
        "--calib".as_ref(),
        calib.as_os_str(),
        "--labels".as_ref(),
        labels.as_os_str(),
        "--report".as_ref(),
        report.as_os_str(),
    ];
    let stdout = quantize_hybrid(&peers("cnn_nchw.onnx"), "weight-only", &extra, &out);
    assert!(stdout.contains("mode weight-only int8 | 200 samples"), "{stdout}");
    assert!(stdout.contains("accuracy: float"), "{stdout}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(v["model"]["mode"], "weight-only int8");
    assert_eq!(v["layers"].as_array().unwrap().len(), 5);
    assert!(v["layers"][0]["scale"].is_null(), "{}", v["layers"][0]);
    assert!(v["model"]["int8_accuracy"].as_f64().unwrap() > 0.95);
    let committed = std::fs::read(repo().join("tests/golden/hybrid/cnn.onnx")).unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), committed);
}

#[test]
fn dynamic_writes_the_onnx_model_onnx_runtime_writes() {
    // tests/host/hybrid.rs checks the model: ONNX Runtime runs it as its own quantize_dynamic model.
    let out = tmp("cnn_dynamic.onnx");
    let calib = peers("calib_nchw.npy");
    let stdout = quantize_hybrid(
        &peers("cnn_nchw.onnx"),
        "dynamic",
        &["--per-tensor".as_ref(), "--calib".as_ref(), calib.as_os_str()],
        &out,
    );
    assert!(stdout.contains("dynamic int8, 3 layers, per-tensor weights"), "{stdout}");
    assert!(stdout.contains("mode dynamic int8 | 200 samples"), "{stdout}");
    let committed = std::fs::read(repo().join("tests/golden/hybrid/dynamic_cnn_per_tensor.onnx")).unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), committed);
}

#[test]
fn errors_are_one_clear_line() {
    let model = peers("cnn_nchw.onnx");
    let calib = peers("calib_nchw.npy");
    let out = tmp("err.mq");
    let base = |extra: &[&OsStr]| -> Vec<std::ffi::OsString> {
        let mut v: Vec<std::ffi::OsString> =
            vec!["quantize".into(), model.clone().into(), "--calib".into(), calib.clone().into()];
        v.extend(extra.iter().map(|s| s.to_os_string()));
        v.push("-o".into());
        v.push(out.clone().into());
        v
    };
    // Calibration data that does not fit the model.
    let wrong = tmp("wrong.npy");
    write_npy_f32(&wrong, &[4, 8, 8], &[0.0; 256]);
    let e = fails(&[
        "quantize".as_ref(),
        model.as_os_str(),
        "--calib".as_ref(),
        wrong.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert!(e.contains("does not fit the model input") && e.contains("[N, 1, 8, 8]"), "{e}");
    // A missing file.
    let e = fails(&[
        "quantize".as_ref(),
        model.as_os_str(),
        "--calib".as_ref(),
        "/no/such.npy".as_ref(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert!(e.contains("/no/such.npy"), "{e}");
    // Not a model.
    let e = fails(&[
        "quantize".as_ref(),
        calib.as_os_str(),
        "--calib".as_ref(),
        calib.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert!(e.contains("calib_nchw.npy") && e.contains("ONNX"), "{e}");
    // Modes the runtime cannot run.
    let e = fails(&base(&["--mode".as_ref(), "dynamic".as_ref()]));
    assert!(e.contains("--mode dynamic writes an ONNX model") && e.contains("no .mq form"), "{e}");
    // Weight-only writes ONNX, not .mq; static needs samples.
    let e = fails(&base(&["--mode".as_ref(), "weight-only".as_ref()]));
    assert!(e.contains("err.mq") && e.contains("no .mq form") && e.contains("*.onnx"), "{e}");
    let e = fails(&["quantize".as_ref(), model.as_os_str(), "-o".as_ref(), out.as_os_str()]);
    assert!(e.contains("--mode static needs calibration samples"), "{e}");
    let wo = tmp("err_wo.onnx");
    let e = fails(&[
        "quantize".as_ref(),
        model.as_os_str(),
        "--mode".as_ref(),
        "weight-only".as_ref(),
        "--int16-all".as_ref(),
        "-o".as_ref(),
        wo.as_os_str(),
    ]);
    assert!(e.contains("--int16") && e.contains("--mode static only"), "{e}");
    // An int16 layer that does not exist.
    let e = fails(&base(&["--int16".as_ref(), "nope".as_ref()]));
    assert!(e.contains("int16 layer \"nope\""), "{e}");
    // Labels that do not match.
    let labels = tmp("labels.npy");
    std::fs::write(&labels, npy_i64(&[1, 2, 3])).unwrap();
    let e = fails(&base(&["--labels".as_ref(), labels.as_os_str()]));
    assert!(e.contains("3 labels for 200 calibration samples"), "{e}");
    // A per-layer observer for a layer that does not exist.
    let e = fails(&base(&["--layer-observer".as_ref(), "nope=entropy".as_ref()]));
    assert!(e.contains("nope"), "{e}");
    // An unknown observer: clap's message names the choices.
    let bad = microquant(&base(&["--observer".as_ref(), "max".as_ref()]));
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown observer \"max\""));
}

fn npy_i64(v: &[i64]) -> Vec<u8> {
    npy_v1::npy_v1("<i8", &npy_v1::tuple(&[v.len()]), &v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>())
}

/// `microquant run` takes and gives data in the source model's layout (NCHW for this ONNX model,
/// whose tensors the .mq keeps NHWC), takes the .mq's own layout too, and refuses a sample shape
/// that is neither (the same element count in another order would be silent garbage).
#[test]
fn run_takes_and_gives_the_source_models_layout() {
    let model = repo().join("tests/golden/onnx/binary/prelu_opset13.onnx"); // [1,3,6,6] -> [1,4,6,6]
    let (n, c, h, w) = (16usize, 3usize, 6usize, 6usize);
    let nchw: Vec<f32> = (0..n * c * h * w).map(|i| ((i * 7919 % 1000) as f32 / 500.0) - 1.0).collect();
    let mut nhwc = vec![0f32; nchw.len()];
    for s in 0..n {
        for ch in 0..c {
            for y in 0..h {
                for x in 0..w {
                    nhwc[((s * h + y) * w + x) * c + ch] = nchw[((s * c + ch) * h + y) * w + x];
                }
            }
        }
    }
    let (calib, calib_nhwc, wrong) = (tmp("layout_nchw.npy"), tmp("layout_nhwc.npy"), tmp("layout_wrong.npy"));
    write_npy_f32(&calib, &[n, c, h, w], &nchw);
    write_npy_f32(&calib_nhwc, &[n, h, w, c], &nhwc);
    write_npy_f32(&wrong, &[n, h, c, w], &nchw);
    let mq = tmp("layout.mq");
    ok(&["quantize".as_ref(), model.as_os_str(), "--calib".as_ref(), calib.as_os_str(), "-o".as_ref(), mq.as_os_str()]);
    let inspect = ok(&["inspect".as_ref(), "--json".as_ref(), mq.as_os_str()]);
    assert!(inspect.contains("\"input0_source_perm\": \"0,2,3,1\""), "{inspect}");
    assert!(inspect.contains("\"output0_source_shape\": \"1x4x6x6\""), "{inspect}");
    let (y1, y2) = (tmp("layout_y1.npy"), tmp("layout_y2.npy"));
    ok(&["run".as_ref(), mq.as_os_str(), "--input".as_ref(), calib.as_os_str(), "-o".as_ref(), y1.as_os_str()]);
    ok(&["run".as_ref(), mq.as_os_str(), "--input".as_ref(), calib_nhwc.as_os_str(), "-o".as_ref(), y2.as_os_str()]);
    let (a, b) = (std::fs::read(&y1).unwrap(), std::fs::read(&y2).unwrap());
    assert_eq!(a, b, "the NCHW and NHWC inputs give different outputs");
    let header = String::from_utf8_lossy(&a[..a.len().min(128)]).into_owned();
    assert!(header.contains("(16, 1, 4, 6, 6)"), "output not in the source layout: {header}");
    let err =
        fails(&["run".as_ref(), mq.as_os_str(), "--input".as_ref(), wrong.as_os_str(), "-o".as_ref(), y2.as_os_str()]);
    assert!(err.contains("does not match the model") && err.contains("source model's layout"), "{err}");
}

/// A model with two inputs (a GRU whose initial state is a graph input) quantizes with one
/// calibration file per input (`--calib NAME=FILE`) and runs with one input file per input;
/// calibration samples may carry the whole input shape (`[N, 4, 3, 2]` for an input `[4, 3, 2]`
/// whose first axis is time, not a batch). A model with two outputs writes each (`-o NAME=FILE`):
/// a one-step GRU's `Y_h` is its `Y` reshaped. Missing or unnamed files are one clear error.
#[test]
fn several_inputs_and_outputs() {
    let dir = repo().join("tests/golden/onnx_recurrent");
    let model = dir.join("gru_l0_s4_b3_i2_h3_init_input_lbr0.onnx"); // x [4, 3, 2], h0 [1, 3, 3]
    let n = 24;
    let values = |len: usize, seed: usize| -> Vec<f32> {
        (0..len).map(|i| (((i + seed) * 7919 % 1000) as f32 / 500.0) - 1.0).collect()
    };
    let (x, h0) = (tmp("gru_x.npy"), tmp("gru_h0.npy"));
    write_npy_f32(&x, &[n, 4, 3, 2], &values(n * 24, 1));
    write_npy_f32(&h0, &[n, 1, 3, 3], &values(n * 9, 2));
    let (calib_x, calib_h0) = (format!("x={}", x.display()), format!("h0={}", h0.display()));
    let mq = tmp("gru2.mq");
    let quantize = |calib: &[&str]| {
        let mut args: Vec<String> =
            vec!["quantize".into(), model.display().to_string(), "-o".into(), mq.display().to_string()];
        for c in calib {
            args.extend(["--calib".to_string(), c.to_string()]);
        }
        args
    };
    ok(&quantize(&[&calib_x, &calib_h0]));
    let err = fails(&quantize(&[&calib_x]));
    assert!(err.contains("no file for the model input \"h0\""), "{err}");
    let err = fails(&quantize(&[&x.display().to_string()]));
    assert!(err.contains("the model has 2 inputs (\"x\", \"h0\")") && err.contains("NAME=FILE"), "{err}");
    let err = fails(&quantize(&[&calib_x, &calib_x.replace("x=", "h0=")]));
    assert!(err.contains("does not fit the model input \"h0\""), "{err}");
    let y = tmp("gru2_y.npy");
    let run = |inputs: &[&str]| {
        let mut args: Vec<String> = vec!["run".into(), mq.display().to_string(), "-o".into(), y.display().to_string()];
        for i in inputs {
            args.extend(["--input".to_string(), i.to_string()]);
        }
        args
    };
    ok(&run(&[&calib_h0, &calib_x]));
    let header = String::from_utf8_lossy(&std::fs::read(&y).unwrap()[..100]).into_owned();
    assert!(header.contains("(24, 4, 1, 3, 3)"), "{header}");
    let err = fails(&run(&[&calib_x]));
    assert!(err.contains("no file for the model input \"h0\""), "{err}");

    let one_step = dir.join("gru_l0_s1_b2_i3_h4_yh_lbr0.onnx"); // x [1, 2, 3] -> Y [1, 1, 2, 4], Y_h [1, 2, 4]
    let xs = tmp("gru_yh_x.npy");
    write_npy_f32(&xs, &[n, 1, 2, 3], &values(n * 6, 3));
    let mq1 = tmp("gru_yh.mq");
    ok(&[
        "quantize".as_ref(),
        one_step.as_os_str(),
        "--calib".as_ref(),
        xs.as_os_str(),
        "-o".as_ref(),
        mq1.as_os_str(),
    ]);
    let (ya, yb) = (tmp("gru_yh_y.npy"), tmp("gru_yh_yh.npy"));
    let (oa, ob) = (format!("Y={}", ya.display()), format!("Y_h={}", yb.display()));
    let out = ok(&["run", &mq1.display().to_string(), "--input", &xs.display().to_string(), "-o", &ob, "-o", &oa]);
    assert!(out.contains("output \"Y_h\""), "{out}");
    let (a, b) = (std::fs::read(&ya).unwrap(), std::fs::read(&yb).unwrap());
    let data = |v: &[u8]| v[v.len() - n * 8..].to_vec();
    assert_eq!(data(&a), data(&b), "Y_h of a one-step GRU is its Y");
}

/// `--output-name` keeps the outputs named (only what they need is converted): a one-step GRU
/// quantized for its `Y_h` alone has one output, `Y_h`.
#[test]
fn output_name_keeps_the_outputs_named() {
    let model = repo().join("tests/golden/onnx_recurrent/gru_l0_s1_b2_i3_h4_yh_lbr0.onnx");
    let xs = tmp("gru_out_x.npy");
    write_npy_f32(&xs, &[8, 1, 2, 3], &(0..48).map(|i| (i as f32 * 0.37).sin()).collect::<Vec<f32>>());
    let mq = tmp("gru_out.mq");
    let args = |name: &str| -> Vec<String> {
        [
            "quantize",
            &model.display().to_string(),
            "--calib",
            &xs.display().to_string(),
            "-o",
            &mq.display().to_string(),
            "--output-name",
            name,
        ]
        .map(String::from)
        .to_vec()
    };
    ok(&args("Y_h"));
    let inspect = ok(&["inspect".as_ref(), "--json".as_ref(), mq.as_os_str()]);
    assert!(inspect.contains("Y_h") && !inspect.contains("\"Y\""), "{inspect}");
    let err = fails(&args("nope"));
    assert!(err.contains("nope"), "{err}");
}

#[test]
fn weight_bits_4_with_a_layer_kept_in_8_bits() {
    let (mq, report) = (tmp("dscnn_w4.mq"), tmp("dscnn_w4.json"));
    let out = ok(&[
        "quantize".as_ref(),
        peers("dscnn_nchw.onnx").as_os_str(),
        "--calib".as_ref(),
        peers("calib_nchw.npy").as_os_str(),
        "--weight-bits".as_ref(),
        "4".as_ref(),
        "--layer-weight-bits".as_ref(),
        "/pw1/Conv=8".as_ref(),
        "-o".as_ref(),
        mq.as_os_str(),
        "--report".as_ref(),
        report.as_os_str(),
    ]);
    assert!(out.contains("static int8, int4 weights"), "{out}");
    assert!(out.contains("layers with 4-bit weights"), "{out}");
    assert!(out.lines().any(|l| l.contains("/pw1/Conv") && l.contains(" i8 ")), "{out}");
    assert!(out.lines().any(|l| l.contains("i8/w4")), "{out}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    for l in v["layers"].as_array().unwrap() {
        let want = match (l["op"].as_str().unwrap(), l["name"].as_str().unwrap()) {
            (_, "/pw1/Conv") => serde_json::json!(8),
            ("Conv2d" | "DepthwiseConv2d" | "FullyConnected", _) => serde_json::json!(4),
            _ => serde_json::Value::Null,
        };
        assert_eq!(l["weight_bits"], want, "{l}");
    }
    // inspect shows the int4 weight tensors (packed: half a byte each).
    let inspect = ok(&["inspect".as_ref(), mq.as_os_str()]);
    assert!(inspect.contains("I4"), "{inspect}");
    // A width the kernels do not take is a usage error naming it (clap's, as for other values).
    let bad = microquant(&[
        "quantize".as_ref(),
        peers("dscnn_nchw.onnx").as_os_str(),
        "--calib".as_ref(),
        peers("calib_nchw.npy").as_os_str(),
        "--weight-bits".as_ref(),
        "3".as_ref(),
        "-o".as_ref(),
        mq.as_os_str(),
    ]);
    let e = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{e}");
    assert!(e.contains("weight bits \"3\"") && e.contains("8 or 4"), "{e}");
    let e = fails(&[
        "quantize".as_ref(),
        peers("dscnn_nchw.onnx").as_os_str(),
        "--calib".as_ref(),
        peers("calib_nchw.npy").as_os_str(),
        "--layer-weight-bits".as_ref(),
        "/nope=4".as_ref(),
        "-o".as_ref(),
        mq.as_os_str(),
    ]);
    assert!(e.contains("/nope"), "{e}");
}

/// `--cle` on the digits DS-CNN (depthwise-separable, ReLUs): the pairs equalized and each
/// layer's weight ranges are printed and land in the JSON report under `cle`; without `--cle`
/// nothing is said; `--cle-relu6-as-relu` needs `--cle`; the hybrid modes refuse `--cle`.
#[test]
fn cle_lists_the_pairs_equalized() {
    let (mq, report) = (tmp("dscnn_cle.mq"), tmp("dscnn_cle.json"));
    let (model, calib) = (peers("dscnn_nhwc.onnx"), peers("calib_nhwc.npy"));
    let run = |extra: &[&str]| {
        let mut args: Vec<&OsStr> = vec![
            "quantize".as_ref(),
            model.as_os_str(),
            "--calib".as_ref(),
            calib.as_os_str(),
            "--per-tensor".as_ref(),
            "-o".as_ref(),
            mq.as_os_str(),
            "--report".as_ref(),
            report.as_os_str(),
        ];
        args.extend(extra.iter().map(|s| OsStr::new(*s)));
        ok(&args)
    };
    let out = run(&["--cle"]);
    let summary = out.lines().find(|l| l.starts_with("cross-layer equalization: ")).unwrap_or_else(|| panic!("{out}"));
    assert!(summary.contains("(converged)"), "{summary}");
    assert!(out.lines().any(|l| l.contains(" -> #") && l.contains("channels, through")), "{out}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let pairs = json["cle"]["pairs"].as_array().unwrap();
    assert!(!pairs.is_empty(), "{json}");
    let pair_lines = out.lines().filter(|l| l.contains("channels, through")).count();
    assert_eq!(pairs.len(), pair_lines);
    for l in json["cle"]["layers"].as_array().unwrap() {
        let (before, after) = (l["precision_before"].as_f64().unwrap(), l["precision_after"].as_f64().unwrap());
        assert!((0.0..=1.0).contains(&before) && (0.0..=1.0).contains(&after), "{l}");
    }
    let plain = run(&[]);
    assert!(!plain.contains("cross-layer equalization"), "{plain}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert!(json.get("cle").is_none());

    let out = microquant(&[
        "quantize".as_ref(),
        peers("dscnn_nhwc.onnx").as_os_str(),
        "--calib".as_ref(),
        peers("calib_nhwc.npy").as_os_str(),
        "--cle-relu6-as-relu".as_ref(),
        "-o".as_ref(),
        mq.as_os_str(),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--cle"));
    let err = fails(&[
        "quantize".as_ref(),
        peers("dscnn_nhwc.onnx").as_os_str(),
        "--mode".as_ref(),
        "weight-only".as_ref(),
        "--cle".as_ref(),
        "-o".as_ref(),
        tmp("dscnn_cle.onnx").as_os_str(),
    ]);
    assert!(err.contains("--cle applies to --mode static"), "{err}");
}

#[test]
fn adaround_lists_its_layers_and_is_deterministic_given_the_seed() {
    let run = |name: &str, seed: &str| -> (String, Vec<u8>) {
        let mq = tmp(name);
        let out = ok(&[
            "quantize".as_ref(),
            peers("dscnn_nchw.onnx").as_os_str(),
            "--calib".as_ref(),
            peers("calib_nchw.npy").as_os_str(),
            "--weight-bits".as_ref(),
            "4".as_ref(),
            "--adaround".as_ref(),
            "--adaround-iters".as_ref(),
            "200".as_ref(),
            "--adaround-patches".as_ref(),
            "40".as_ref(),
            "--seed".as_ref(),
            seed.as_ref(),
            "-o".as_ref(),
            mq.as_os_str(),
        ]);
        (out, std::fs::read(&mq).unwrap())
    };
    let (out, a) = run("ada_a.mq", "7");
    assert!(out.contains("AdaRound: ") && out.contains("200 iterations, up to 40 patches, seed 7"), "{out}");
    let rows: Vec<&str> = out.lines().filter(|l| l.contains(" dB -> ") && l.contains(" w4 ")).collect();
    assert!(rows.len() >= 3, "{out}");
    assert!(rows.iter().all(|l| l.contains("40 patches")), "{out}");
    let (_, b) = run("ada_b.mq", "7");
    assert_eq!(a, b, "the same seed gave another model");
    let (_, c) = run("ada_c.mq", "8");
    assert_ne!(a, c, "another seed drew the same patches");
    // The AdaRound options need --adaround (a usage error); weight-only mode has no AdaRound.
    let bad = microquant(&[
        "quantize".as_ref(),
        peers("dscnn_nchw.onnx").as_os_str(),
        "--calib".as_ref(),
        peers("calib_nchw.npy").as_os_str(),
        "--adaround-iters".as_ref(),
        "5".as_ref(),
        "-o".as_ref(),
        tmp("ada_d.mq").as_os_str(),
    ]);
    assert_eq!(bad.status.code(), Some(2), "{}", String::from_utf8_lossy(&bad.stderr));
    let e = fails(&[
        "quantize".as_ref(),
        peers("dscnn_nchw.onnx").as_os_str(),
        "--mode".as_ref(),
        "weight-only".as_ref(),
        "--adaround".as_ref(),
        "-o".as_ref(),
        tmp("ada_e.onnx").as_os_str(),
    ]);
    assert!(e.contains("--adaround"), "{e}");
}
