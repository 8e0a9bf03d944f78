//! Writes the seed corpus of every fuzz target into `fuzz/corpus/<target>/` from the
//! repository's real models and data (run from `fuzz/`; scripts/fuzz.sh does it):
//! - `tflite_import`: the MLPerf Tiny models (`models/mlperf-tiny/*.tflite`, those up to
//!   400 KB: bigger seeds slow every mutation) and the test models in `tests/golden`;
//! - `onnx_import`: every `.onnx` in `tests/golden` (exporters: torch, tf2onnx, skl2onnx,
//!   onnx.helper, ONNX Runtime QDQ) and `web-demo/examples`;
//! - `mq_load`: `.mq` files up to 64 KiB compiled here: the int8 TFLite models, and the small
//!   float ONNX/TFLite models quantized with two pseudo-random calibration samples (with the
//!   target's control byte 1 = re-seal after mutation);
//! - `npy_read`: every `.npy` up to 200 KB in `tests/golden`, `web-demo/examples`, `models`;
//! - `wasm_load`: the union of the model seeds with control byte 1;
//! and, for each target, the committed minimized corpus in `fuzz/seeds/<target>/`.

use std::fs;
use std::path::{Path, PathBuf};

fn walk(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n == "node_modules" || n == "target") {
                continue;
            }
            walk(&p, ext, out);
        } else if p.extension().is_some_and(|e| e == ext) {
            out.push(p);
        }
    }
}

fn files(root: &Path, dirs: &[&str], ext: &str, max: u64) -> Vec<(String, Vec<u8>)> {
    let mut paths = Vec::new();
    for d in dirs {
        walk(&root.join(d), ext, &mut paths);
    }
    paths
        .into_iter()
        .filter(|p| fs::metadata(p).is_ok_and(|m| m.len() <= max))
        .filter_map(|p| {
            let name = p.strip_prefix(root).unwrap_or(&p).to_string_lossy().replace('/', "__");
            fs::read(&p).ok().map(|b| (name, b))
        })
        .collect()
}

fn write(dir: &Path, name: &str, ctl: Option<u8>, bytes: &[u8]) {
    let mut v = Vec::with_capacity(bytes.len() + 1);
    v.extend(ctl);
    v.extend_from_slice(bytes);
    fs::write(dir.join(name), v).expect("write seed");
}

fn main() {
    let root = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "..".into()));
    let corpus = root.join("fuzz/corpus");
    let dir = |t: &str| {
        let d = corpus.join(t);
        fs::create_dir_all(&d).expect("corpus dir");
        d
    };
    let tflite = files(&root, &["models/mlperf-tiny", "tests/golden"], "tflite", 400_000);
    let onnx = files(&root, &["tests/golden", "web-demo/examples"], "onnx", 400_000);
    let npy = files(&root, &["tests/golden", "web-demo/examples", "models"], "npy", 200_000);

    let mut mq: Vec<(String, Vec<u8>)> = Vec::new();
    for (name, b) in &tflite {
        if let Ok(g) = microquant::tflite::import(b) {
            if let Ok(c) = microquant::compile::compile(&g, &Default::default()) {
                mq.push((format!("{name}.mq"), c.bytes));
            }
        }
    }
    // Small float models quantized here (two pseudo-random calibration samples): small `.mq`
    // seeds that cover many op kinds and run fast.
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    };
    let graphs = onnx
        .iter()
        .filter(|(_, b)| b.len() <= 40_000)
        .filter_map(|(n, b)| microquant::onnx::import(b).ok().map(|i| (n, i.graph)))
        .chain(
            tflite
                .iter()
                .filter(|(_, b)| b.len() <= 40_000)
                .filter_map(|(n, b)| microquant::tflite::import(b).ok().map(|g| (n, g))),
        );
    for (name, g) in graphs {
        let sample = |next: &mut dyn FnMut() -> f32| -> Vec<Vec<f32>> {
            g.inputs
                .iter()
                .map(|&t| (0..g.tensors[t.0 as usize].num_elements().unwrap_or(0)).map(|_| next()).collect())
                .collect()
        };
        let samples = vec![sample(&mut next), sample(&mut next)];
        let opts = microquant::ptq::PtqOptions::default();
        if let Ok(out) = microquant::ptq::convert(&g, &samples, None, &opts, &mut |_| {}) {
            mq.push((format!("{name}.ptq.mq"), out.compiled.bytes));
        }
    }

    let (t, o, m, n, w) = (dir("tflite_import"), dir("onnx_import"), dir("mq_load"), dir("npy_read"), dir("wasm_load"));
    for (name, b) in &tflite {
        write(&t, name, None, b);
        write(&w, name, Some(1), b);
    }
    for (name, b) in &onnx {
        write(&o, name, None, b);
        write(&w, name, Some(1), b);
    }
    // `.mq` seeds above 64 KiB (the bigger MLPerf models) would make every execution slow
    // (CRC and one invoke per input); the small models cover the same op kinds.
    for (name, b) in mq.iter().filter(|(_, b)| b.len() <= 64 * 1024) {
        write(&m, name, Some(1), b);
        write(&w, name, Some(1), b);
    }
    for (name, b) in &npy {
        write(&n, name, None, b);
    }
    for target in ["mq_load", "onnx_import", "tflite_import", "npy_read", "wasm_load"] {
        if let Ok(rd) = fs::read_dir(root.join("fuzz/seeds").join(target)) {
            for e in rd.flatten() {
                if let Ok(b) = fs::read(e.path()) {
                    fs::write(dir(target).join(e.file_name()), b).expect("write seed");
                }
            }
        }
    }
    println!(
        "seeds: tflite_import {}, onnx_import {}, mq_load {} (.mq compiled here), npy_read {}, wasm_load {}",
        tflite.len(),
        onnx.len(),
        mq.iter().filter(|(_, b)| b.len() <= 64 * 1024).count(),
        npy.len(),
        tflite.len() + onnx.len() + mq.iter().filter(|(_, b)| b.len() <= 64 * 1024).count()
    );
}
