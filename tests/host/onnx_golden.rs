//! Shared by the ONNX/float/PTQ host tests (included with `#[path]`): the golden files of
//! `tests/gen/gen_onnx_float.py` and the tolerance rule against ONNX Runtime / TFLite.
#![allow(dead_code)]

use std::path::PathBuf;

use microquant::onnx::{ImportOptions, Imported};
use microquant_tests::golden::Tensor;
use serde::Deserialize;

/// One seeded sample: inputs in the model's layout, ONNX Runtime's outputs.
#[derive(Debug, Deserialize)]
pub struct Sample {
    pub inputs: Vec<Tensor>,
    pub outputs: Vec<Tensor>,
}

/// One model of `float_models.json`.
#[derive(Debug, Deserialize)]
pub struct Model {
    pub name: String,
    pub file: String,
    pub opset: i64,
    pub producer: String,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    pub ops: Vec<String>,
    pub samples: Vec<Sample>,
}

#[derive(Debug, Deserialize)]
struct FloatModels {
    models: Vec<Model>,
}

pub fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("golden").join("onnx")
}

pub fn repo_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

pub fn float_models() -> Vec<Model> {
    let text = std::fs::read_to_string(golden_dir().join("float_models.json")).expect("float_models.json");
    serde_json::from_str::<FloatModels>(&text).expect("float_models.json parses").models
}

impl Model {
    pub fn bytes(&self) -> Vec<u8> {
        std::fs::read(golden_dir().join(&self.file)).unwrap_or_else(|e| panic!("{}: {e}", self.file))
    }
    /// Imports with the outputs the golden file lists.
    pub fn import(&self) -> Imported {
        let options = ImportOptions { outputs: Some(self.outputs.clone()), ..Default::default() };
        microquant::onnx::import_with_options(&self.bytes(), &options)
            .unwrap_or_else(|e| panic!("{}: import: {e}", self.name))
    }
}

/// The tolerance rule against a float reference (ONNX Runtime, TFLite):
/// `|ours - ref| <= RTOL * max(|ref|, 1e-2 * max|ref over the tensor|)` element by element, i.e.
/// 1e-5 relative, except that elements smaller than a hundredth of the tensor's largest
/// magnitude are held to 1e-7 of that magnitude, about f32's epsilon (a relative bound is
/// meaningless for values that are the difference of much larger terms: both sides sum their f32
/// products in different orders, ONNX Runtime with FMA, and such an element keeps only the
/// absolute error of the sum).
pub const RTOL: f64 = 1e-5;

/// Checks `ours` against `reference` with [`RTOL`]; returns the largest error relative to
/// `max(|ref|, 1e-2 * max|ref|)`.
pub fn assert_close(case: &str, reference: &[f32], ours: &[f32]) -> f64 {
    assert_eq!(reference.len(), ours.len(), "{case}: length");
    let scale = reference.iter().fold(0f64, |m, &v| m.max(f64::from(v).abs()));
    let floor = 1e-2 * scale;
    let mut worst = 0f64;
    let mut bad = Vec::new();
    for (i, (&r, &o)) in reference.iter().zip(ours).enumerate() {
        let denom = f64::from(r).abs().max(floor).max(f64::MIN_POSITIVE);
        let e = (f64::from(o) - f64::from(r)).abs() / denom;
        if e.is_nan() || e > RTOL {
            bad.push((i, r, o, e));
        }
        if e > worst || e.is_nan() {
            worst = e;
        }
    }
    assert!(
        bad.is_empty(),
        "{case}: {} of {} elements beyond {RTOL:e} relative; first: {:?}",
        bad.len(),
        reference.len(),
        &bad[..bad.len().min(8)]
    );
    worst
}
