//! `microquant quantize --calib` streaming: several files, a directory or a glob give the `.mq`
//! and report of the one file they concatenate, byte for byte (directories and globs in sorted
//! order); images with `--preprocess` give those of the `.npy` Pillow and numpy made of them
//! (`tests/golden/calib_images/`, `tests/gen/gen_calib_images.py`); bad files are one error
//! line naming the file (and the sample and byte offset).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn peers(file: &str) -> PathBuf {
    repo().join("tests/golden/peers").join(file)
}

fn images(file: &str) -> PathBuf {
    repo().join("tests/golden/calib_images").join(file)
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("microquant-cli-calib-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn microquant(args: &[OsString]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_microquant")).args(args).output().expect("run microquant")
}

/// The digits CNN (input [1, 1, 8, 8]) quantized with `calib` (each a `--calib` value) and
/// `extra` flags: the `.mq` bytes and the report's JSON.
fn quantize(tag: &str, calib: &[OsString], extra: &[&str]) -> Result<(Vec<u8>, String), String> {
    let (mq, report) = (tmp(&format!("{tag}.mq")), tmp(&format!("{tag}.json")));
    let mut args: Vec<OsString> = vec!["quantize".into(), peers("cnn_nchw.onnx").into()];
    for c in calib {
        args.push("--calib".into());
        args.push(c.clone());
    }
    args.extend(extra.iter().map(OsString::from));
    args.extend(["-o".into(), mq.clone().into(), "--report".into(), report.clone().into(), "--quiet".into()]);
    let out = microquant(&args);
    if !out.status.success() {
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
        assert!(err.starts_with("microquant: error: "), "{err}");
        return Err(err);
    }
    Ok((std::fs::read(mq).unwrap(), std::fs::read_to_string(report).unwrap()))
}

fn os(p: &Path) -> OsString {
    p.as_os_str().to_os_string()
}

/// The 200 digits samples [200, 1, 8, 8].
fn digits() -> Vec<f32> {
    microquant::npy::Npy::parse(&std::fs::read(peers("calib_nchw.npy")).unwrap()).unwrap().to_f32()
}

fn write(path: &Path, samples: &[f32]) {
    std::fs::write(path, microquant::npy::to_bytes_f32(&[samples.len() / 64, 1, 8, 8], samples)).unwrap();
}

#[test]
fn several_files_a_directory_and_a_glob_are_the_concatenated_file() {
    let all = digits();
    let dir = tmp("parts");
    std::fs::create_dir_all(&dir).unwrap();
    // 70 + 70 + 60 samples; a file that is not .npy in the directory is left out.
    let cuts = [(0, 70), (70, 140), (140, 200)];
    let parts: Vec<PathBuf> = cuts
        .iter()
        .enumerate()
        .map(|(i, &(a, b))| {
            let p = dir.join(format!("part_{i}.npy"));
            write(&p, &all[a * 64..b * 64]);
            p
        })
        .collect();
    std::fs::write(dir.join("README.txt"), "not samples").unwrap();
    let labels_path = peers("calib_labels.npy");
    let labels = ["--labels", labels_path.to_str().unwrap()];
    for observer in ["minmax", "histogram", "moving-average"] {
        let flags = [&labels[..], &["--observer", observer]].concat();
        let whole = quantize(&format!("whole_{observer}"), &[os(&peers("calib_nchw.npy"))], &flags).unwrap();
        assert!(whole.1.contains("\"samples\":200"), "{}", whole.1);
        let files = quantize(&format!("files_{observer}"), &parts.iter().map(|p| os(p)).collect::<Vec<_>>(), &flags);
        let from_dir = quantize(&format!("dir_{observer}"), &[os(&dir)], &flags);
        let glob = quantize(&format!("glob_{observer}"), &[dir.join("part_*.npy").into_os_string()], &flags);
        for (what, got) in [("files", files), ("directory", from_dir), ("glob", glob)] {
            let got = got.unwrap();
            assert!(got.0 == whole.0, "{observer}, {what}: the .mq differs from the one file's");
            assert_eq!(got.1, whole.1, "{observer}, {what}: the report differs from the one file's");
        }
    }
}

#[test]
fn directories_and_globs_read_in_sorted_order() {
    // The moving average depends on the order of the samples: the directory's files are read by
    // name (b_ after a_, whatever order the file system lists them in), explicit files in the
    // order given.
    let all = digits();
    let dir = tmp("order");
    std::fs::create_dir_all(&dir).unwrap();
    let (first, second) = (&all[..100 * 64], &all[100 * 64..]);
    write(&dir.join("b_second.npy"), second);
    write(&dir.join("a_first.npy"), first);
    let flags = ["--observer", "moving-average"];
    let in_order = quantize("order_whole", &[os(&peers("calib_nchw.npy"))], &flags).unwrap();
    let swapped_file = tmp("swapped.npy");
    write(&swapped_file, &[second, first].concat());
    let swapped = quantize("order_swapped", &[os(&swapped_file)], &flags).unwrap();
    assert!(swapped.0 != in_order.0, "the moving average sees the order");
    assert!(quantize("order_dir", &[os(&dir)], &flags).unwrap().0 == in_order.0);
    assert!(quantize("order_glob", &[dir.join("*.npy").into_os_string()], &flags).unwrap().0 == in_order.0);
    let explicit = [os(&dir.join("b_second.npy")), os(&dir.join("a_first.npy"))];
    assert!(quantize("order_explicit", &explicit, &flags).unwrap().0 == swapped.0);
}

#[test]
fn images_with_preprocess_are_the_samples_pillow_makes() {
    // gray_8x8.npy: Pillow's convert("L"), resize((8, 8), BILINEAR), then (x / 255 - 0.5) / 0.25
    // in numpy float32, of the six images of gray_8x8/.
    let spec = ["--preprocess", "resize=8x8,mode=gray,layout=nchw,scale=1/255,mean=0.5,std=0.25"];
    let want = quantize("pillow", &[os(&images("gray_8x8.npy"))], &[]).unwrap();
    assert!(want.1.contains("\"samples\":6"), "{}", want.1);
    let got = quantize("images_dir", &[os(&images("gray_8x8"))], &spec).unwrap();
    assert!(got.0 == want.0, "the .mq from the images differs from the one from Pillow's samples");
    assert_eq!(got.1, want.1);
    let glob = quantize("images_glob", &[images("gray_8x8/img_0*.png").into_os_string()], &spec).unwrap();
    assert!(glob.0 == want.0);
    // Without --preprocess, images are refused; a spec that does not make the model's shape too.
    let e = quantize("images_bare", &[os(&images("gray_8x8"))], &[]).unwrap_err();
    assert!(e.contains("no .npy file") || e.contains("--preprocess"), "{e}");
    let e = quantize("images_glob_bare", &[images("gray_8x8/*.png").into_os_string()], &[]).unwrap_err();
    assert!(e.contains("images need --preprocess"), "{e}");
    let e = quantize("images_rgb", &[os(&images("gray_8x8"))], &["--preprocess", "resize=8x8"]).unwrap_err();
    assert!(e.contains("[3, 8, 8]") && e.contains("fit the model input"), "{e}");
    // A bad spec: clap's usage error, which names the key and the form expected.
    let out = microquant(&[
        "quantize".into(),
        peers("cnn_nchw.onnx").into(),
        "--calib".into(),
        images("gray_8x8").into(),
        "--preprocess".into(),
        "resize=8".into(),
        "-o".into(),
        tmp("bad_spec.mq").into(),
    ]);
    let e = String::from_utf8(out.stderr).unwrap();
    assert!(!out.status.success() && e.contains("resize=8: expected WIDTHxHEIGHT"), "{e}");
}

#[test]
fn bad_files_name_the_file_sample_and_offset() {
    let all = digits();
    let good = tmp("good.npy");
    write(&good, &all[..10 * 64]);
    // Truncated in the middle of sample 7 (header 128 bytes, 256 bytes per sample).
    let bytes = microquant::npy::to_bytes_f32(&[10, 1, 8, 8], &all[..10 * 64]);
    let cut = tmp("cut.npy");
    std::fs::write(&cut, &bytes[..128 + 7 * 256 + 100]).unwrap();
    let e = quantize("cut", &[os(&good), os(&cut)], &[]).unwrap_err();
    assert!(e.contains("cut.npy: sample 7 (byte 1920): truncated"), "{e}");
    // int8 samples.
    let int8 = tmp("int8.npy");
    std::fs::write(&int8, microquant::npy::to_bytes_i8(&[2, 1, 8, 8], &[0; 128])).unwrap();
    let e = quantize("int8", &[os(&int8)], &[]).unwrap_err();
    assert!(e.contains("int8.npy") && e.contains("must be float32"), "{e}");
    // A second file of another sample shape.
    let other = tmp("other_shape.npy");
    std::fs::write(&other, microquant::npy::to_bytes_f32(&[3, 1, 8, 7], &[0.0; 168])).unwrap();
    let e = quantize("other", &[os(&good), os(&other)], &[]).unwrap_err();
    assert!(
        e.contains("other_shape.npy") && e.contains("does not fit the model input") && e.contains("the first file"),
        "{e}"
    );
    // Not an .npy file; a glob that matches nothing; labels for another count of samples.
    let text = tmp("text.npy");
    std::fs::write(&text, "hello").unwrap();
    let e = quantize("text", &[os(&text)], &[]).unwrap_err();
    assert!(e.contains("text.npy") && e.contains("not a valid .npy file"), "{e}");
    let e = quantize("nomatch", &[tmp("nothing_*.npy").into_os_string()], &[]).unwrap_err();
    assert!(e.contains("no file matches"), "{e}");
    let labels = peers("calib_labels.npy");
    let e = quantize("labels", &[os(&good), os(&good)], &["--labels", labels.to_str().unwrap()]).unwrap_err();
    assert!(e.contains("200 labels for 20 calibration samples"), "{e}");
    // An image that does not decode, among good ones.
    let dir = tmp("broken_images");
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["img_00.png", "img_01.png"] {
        std::fs::copy(images(&format!("gray_8x8/{f}")), dir.join(f)).unwrap();
    }
    std::fs::write(dir.join("img_02.png"), b"\x89PNG\r\n\x1a\ntruncated").unwrap();
    let spec = ["--preprocess", "resize=8x8,mode=gray"];
    let e = quantize("broken", &[os(&dir)], &spec).unwrap_err();
    assert!(e.contains("img_02.png: sample 2: decode error"), "{e}");
}

#[test]
fn several_inputs_take_several_files_each() {
    // A GRU with inputs x [4, 3, 2] and h0 [1, 3, 3]: x from two files, h0 from one.
    let model = repo().join("tests/golden/onnx_recurrent/gru_l0_s4_b3_i2_h3_init_input_lbr0.onnx");
    let n = 24;
    let values = |len: usize, seed: usize| -> Vec<f32> {
        (0..len).map(|i| (((i + seed) * 7919 % 1000) as f32 / 500.0) - 1.0).collect()
    };
    let (x, h0) = (values(n * 24, 1), values(n * 9, 2));
    let (xa, xb, xall, hp) = (tmp("gru_xa.npy"), tmp("gru_xb.npy"), tmp("gru_x.npy"), tmp("gru_h0.npy"));
    std::fs::write(&xa, microquant::npy::to_bytes_f32(&[10, 4, 3, 2], &x[..10 * 24])).unwrap();
    std::fs::write(&xb, microquant::npy::to_bytes_f32(&[14, 4, 3, 2], &x[10 * 24..])).unwrap();
    std::fs::write(&xall, microquant::npy::to_bytes_f32(&[n, 4, 3, 2], &x)).unwrap();
    std::fs::write(&hp, microquant::npy::to_bytes_f32(&[n, 1, 3, 3], &h0)).unwrap();
    let run = |tag: &str, calib: &[String]| -> Result<Vec<u8>, String> {
        let mq = tmp(&format!("{tag}.mq"));
        let mut args: Vec<OsString> = vec!["quantize".into(), model.clone().into(), "-q".into()];
        for c in calib {
            args.extend(["--calib".into(), c.into()]);
        }
        args.extend(["-o".into(), mq.clone().into()]);
        let out = microquant(&args);
        if out.status.success() { Ok(std::fs::read(mq).unwrap()) } else { Err(String::from_utf8(out.stderr).unwrap()) }
    };
    let d = |p: &Path| p.display().to_string();
    let whole = run("gru_whole", &[format!("x={}", d(&xall)), format!("h0={}", d(&hp))]).unwrap();
    let split =
        run("gru_split", &[format!("h0={}", d(&hp)), format!("x={}", d(&xa)), format!("x={}", d(&xb))]).unwrap();
    assert!(split == whole);
    let e = run("gru_short", &[format!("x={}", d(&xa)), format!("h0={}", d(&hp))]).unwrap_err();
    assert!(e.contains("24 samples") && e.contains("has 10") && e.contains("every input needs the same number"), "{e}");
}
