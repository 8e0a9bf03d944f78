//! `microquant run --target qemu-*` gives the same outputs as `--target host`: the MLPerf Tiny
//! KWS model on the emulated Cortex-M4F (mps2-an386) and the tiny M0 model on the emulated
//! Cortex-M0 (micro:bit), on seeded inputs. Needs qemu-system-arm, defmt-print and the thumb
//! targets (scripts/setup.sh); builds the firmware runner on first use.
//!
//! Without qemu-system-arm or defmt-print on PATH each test says so on stderr ("skipped: ...") and
//! passes, so that a plain `cargo test` passes on any machine; `MQ_REQUIRE_QEMU=1` (set by
//! scripts/test.sh) makes a missing tool a failure, so CI never skips them silently.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../../tests/support/npy_v1.rs"]
mod npy_v1;

#[path = "../../tests/src/rng.rs"]
mod rng;

/// The tools the `qemu-*` targets run, looked up on PATH as `microquant run` does.
const TOOLS: [&str; 2] = ["qemu-system-arm", "defmt-print"];

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
}

/// True if the QEMU tests can run here. If not: with `MQ_REQUIRE_QEMU=1`, fails the test; else
/// says on stderr that `test` is skipped and how to run it (written to the process's stderr, which
/// the test harness does not capture), and returns false.
fn qemu_or_skip(test: &str) -> bool {
    let missing: Vec<&str> = TOOLS.into_iter().filter(|t| !on_path(t)).collect();
    if missing.is_empty() {
        return true;
    }
    let why = format!("{} not found; install with scripts/setup.sh", missing.join(" and "));
    if std::env::var_os("MQ_REQUIRE_QEMU").is_some_and(|v| v == "1") {
        panic!("{test}: MQ_REQUIRE_QEMU=1 but {why}");
    }
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{test}: skipped: {why} (MQ_REQUIRE_QEMU=1 makes this a failure)");
    false
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn microquant(args: &[&std::ffi::OsStr]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_microquant")).args(args).output().expect("run microquant");
    assert!(out.status.success(), "microquant {args:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    out
}

/// An int8 .npy (format 1.0) of `shape`.
fn write_npy_i8(path: &Path, shape: &[usize], data: &[i8]) {
    std::fs::write(
        path,
        npy_v1::npy_v1("|i1", &npy_v1::tuple(shape), &data.iter().map(|&v| v as u8).collect::<Vec<u8>>()),
    )
    .unwrap();
}

fn same_on_host_and_qemu(
    name: &str,
    tflite: &Path,
    input_shape: &[usize],
    samples: usize,
    seed_base: u64,
    target: &str,
) {
    let dir = std::env::temp_dir().join(format!("microquant-cli-qemu-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mq = dir.join("model.mq");
    microquant(&["import".as_ref(), tflite.as_os_str(), "-o".as_ref(), mq.as_os_str()]);
    same_mq_on_host_and_qemu(name, &mq, input_shape, samples, seed_base, target);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `microquant run` of the `.mq` at `mq` on seeded int8 inputs gives the same `.npy` on the host
/// and on `target`.
fn same_mq_on_host_and_qemu(
    name: &str,
    mq: &Path,
    input_shape: &[usize],
    samples: usize,
    seed_base: u64,
    target: &str,
) {
    let dir = std::env::temp_dir().join(format!("microquant-cli-qemu-{name}-{target}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mq = mq.to_path_buf();
    let per: usize = input_shape.iter().product();
    let mut x = vec![0i8; samples * per];
    for (s, row) in x.chunks_exact_mut(per).enumerate() {
        rng::SplitMix64::new(seed_base + s as u64).fill_i8(row);
    }
    let mut shape = vec![samples];
    shape.extend_from_slice(input_shape);
    let xp = dir.join("x.npy");
    write_npy_i8(&xp, &shape, &x);
    let (host, dev) = (dir.join("host.npy"), dir.join("dev.npy"));
    let args = |out: &Path, t: &str| -> Vec<std::ffi::OsString> {
        vec![
            "run".into(),
            mq.clone().into(),
            "--input".into(),
            xp.clone().into(),
            "-o".into(),
            out.into(),
            "--target".into(),
            t.into(),
        ]
    };
    let a: Vec<_> = args(&host, "host");
    microquant(&a.iter().map(|s| s.as_os_str()).collect::<Vec<_>>());
    let a: Vec<_> = args(&dev, target);
    let out = microquant(&a.iter().map(|s| s.as_os_str()).collect::<Vec<_>>());
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(msg.contains("instructions per inference"), "no instruction count in: {msg}");
    let (h, d) = (std::fs::read(&host).unwrap(), std::fs::read(&dev).unwrap());
    assert_eq!(h.len(), d.len(), "{name}: .npy sizes differ");
    assert!(h == d, "{name}: host and {target} outputs differ");
    println!("{name}: {samples} samples, identical .npy on host and {target}; {}", msg.lines().last().unwrap_or(""));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn kws_on_qemu_m4_equals_host() {
    if !qemu_or_skip("kws_on_qemu_m4_equals_host") {
        return;
    }
    let kws = repo().join("models/mlperf-tiny/kws_ref_model_int8.tflite");
    same_on_host_and_qemu("kws", &kws, &[1, 49, 10, 1], 4, 0, "qemu-m4");
}

#[test]
fn tiny_on_qemu_m0_equals_host() {
    if !qemu_or_skip("tiny_on_qemu_m0_equals_host") {
        return;
    }
    let tiny = repo().join("tests/golden/models/tiny_m0_int8.tflite");
    same_on_host_and_qemu("tiny", &tiny, &[1, 16, 16, 1], 5, 4000, "qemu-m0");
}

#[test]
fn a_model_too_big_for_the_board_is_one_clear_error() {
    if !qemu_or_skip("a_model_too_big_for_the_board_is_one_clear_error") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("microquant-cli-qemu-big-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mq = dir.join("kws.mq");
    let kws = repo().join("models/mlperf-tiny/kws_ref_model_int8.tflite");
    microquant(&["import".as_ref(), kws.as_os_str(), "-o".as_ref(), mq.as_os_str()]);
    let xp = dir.join("x.npy");
    write_npy_i8(&xp, &[1, 1, 49, 10, 1], &[0; 490]);
    let out = Command::new(env!("CARGO_BIN_EXE_microquant"))
        .args([
            "run".as_ref(),
            mq.as_os_str(),
            "--input".as_ref(),
            xp.as_os_str(),
            "-o".as_ref(),
            dir.join("y.npy").as_os_str(),
        ])
        .args(["--target", "qemu-m0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    let last = err.lines().last().unwrap_or("");
    assert!(last.starts_with("microquant: error:") && last.contains("10240 B buffer"), "stderr: {err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The skip itself: this test binary, run for one QEMU test with a PATH that has no QEMU, passes
/// saying why, and fails with `MQ_REQUIRE_QEMU=1`.
#[test]
fn without_qemu_the_tests_skip_unless_required() {
    let run = |require: bool| {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args(["--exact", "tiny_on_qemu_m0_equals_host", "--test-threads", "1"])
            .env("PATH", "/nonexistent-microquant-test-dir")
            .env_remove("MQ_REQUIRE_QEMU");
        if require {
            cmd.env("MQ_REQUIRE_QEMU", "1");
        }
        let out = cmd.output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        (out.status.success(), text)
    };
    let (ok, text) = run(false);
    assert!(ok, "the skipped test failed:\n{text}");
    assert!(
        text.contains("tiny_on_qemu_m0_equals_host: skipped: qemu-system-arm and defmt-print not found; install with scripts/setup.sh"),
        "no skip message:\n{text}"
    );
    assert!(text.contains("1 passed"), "{text}");
    let (ok, text) = run(true);
    assert!(!ok, "MQ_REQUIRE_QEMU=1 did not fail:\n{text}");
    assert!(text.contains("MQ_REQUIRE_QEMU=1 but qemu-system-arm and defmt-print not found"), "{text}");
}

/// W4A8 models (int4 weights packed two per byte, unpacked into the op's scratch for the int8
/// kernels' fast paths) give the host's outputs on the device: the KWS float model quantized here
/// with `--weight-bits 4` on the Cortex-M4F (Arm DSP), and the W4A8 TFLite model
/// (`tests/golden/int4_models/`, bit-exact with TFLite Micro on the host) on the Cortex-M33
/// (mps2-an505) and the Cortex-M0 (micro:bit, the portable paths).
#[test]
fn int4_weight_models_on_qemu_equal_host() {
    if !qemu_or_skip("int4_weight_models_on_qemu_equal_host") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("microquant-cli-qemu-int4-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Calibration: uniform noise over the published int8 KWS model's input range (scale
    // 0.5847029, zero point 83), SplitMix64.
    let per = 490;
    let mut q = vec![0i8; 16 * per];
    for (s, row) in q.chunks_exact_mut(per).enumerate() {
        rng::SplitMix64::new(90_000 + s as u64).fill_i8(row);
    }
    let calib: Vec<u8> = q.iter().flat_map(|&v| ((f32::from(v) - 83.0) * 0.584_702_9).to_le_bytes()).collect();
    let cp = dir.join("calib.npy");
    std::fs::write(&cp, npy_v1::npy_v1("<f4", &npy_v1::tuple(&[16, 1, 49, 10, 1]), &calib)).unwrap();
    let kws = repo().join("models/mlperf-tiny/kws_ref_model_float32.tflite");
    let mq = dir.join("kws_w4.mq");
    let out = microquant(&[
        "quantize".as_ref(),
        kws.as_os_str(),
        "--calib".as_ref(),
        cp.as_os_str(),
        "--observer".as_ref(),
        "minmax".as_ref(),
        "--weight-bits".as_ref(),
        "4".as_ref(),
        "-q".as_ref(),
        "-o".as_ref(),
        mq.as_os_str(),
    ]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("10 of 10 layers with 4-bit weights"));
    same_mq_on_host_and_qemu("kws_w4", &mq, &[1, 49, 10, 1], 3, 0, "qemu-m4");

    let w4a8 = dir.join("w4a8_cnn.mq");
    let tflite = repo().join("tests/golden/int4_models/w4a8_cnn.tflite");
    microquant(&["import".as_ref(), tflite.as_os_str(), "-o".as_ref(), w4a8.as_os_str()]);
    same_mq_on_host_and_qemu("w4a8_cnn", &w4a8, &[1, 10, 10, 3], 4, 7000, "qemu-m33");

    same_mq_on_host_and_qemu("w4a8_cnn", &w4a8, &[1, 10, 10, 3], 4, 7000, "qemu-m0");
    std::fs::remove_dir_all(&dir).unwrap();
}
