//! Golden outputs of the four MLPerf Tiny int8 models (`tests/golden/models/mlperf_tiny.json`,
//! written by `tests/gen/models/gen_models.py`) from TFLite Micro and from the TFLite
//! interpreter's reference kernels, on 20 seeded random inputs each, plus a per-layer record of
//! sample 0 to locate an interpreter mismatch.
//!
//! Inputs are not stored: sample `s` of the model with index `i` (0 KWS, 1 IC, 2 VWW, 3 AD) is
//! the input tensor filled in row-major order by [`SplitMix64`]`::new(i * 1000 + s)` (see
//! [`ModelGolden::input`]); the file stores the CRC32 of each input to cross-check.
//!
//! ```
//! let models = microquant_tests::models::mlperf_tiny();
//! let kws = &models.models[0];
//! assert_eq!(kws.name, "kws");
//! let x = kws.input(0);
//! assert_eq!(microquant_tests::models::crc32(&x), kws.samples[0].input_crc32);
//! ```

use std::path::PathBuf;

use serde::Deserialize;

use crate::golden::Tensor;
use crate::kernels::Oracle;
use crate::rng::SplitMix64;

/// A scale or zero point: one value (per-tensor) or one per channel.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum PerTensorOrChannel<T> {
    /// One value for the whole tensor.
    Tensor(T),
    /// One value per channel along the quantized dimension.
    Channel(Vec<T>),
}

/// Shape, dtype and quantization of a model tensor.
#[derive(Debug, Clone, Deserialize)]
pub struct TensorInfo {
    /// Dimensions.
    pub shape: Vec<usize>,
    /// Element type (`int8`, `int32`, ...).
    pub dtype: String,
    /// Scale(s) (float32 values, exact).
    pub scale: PerTensorOrChannel<f32>,
    /// Zero point(s).
    pub zero_point: PerTensorOrChannel<i32>,
}

/// One seeded input and both oracles' outputs.
#[derive(Debug, Clone, Deserialize)]
pub struct Sample {
    /// Sample number (0..20).
    pub sample: u64,
    /// SplitMix64 seed: `model_index * 1000 + sample`.
    pub seed: u64,
    /// CRC32 (ISO-HDLC, as zlib) of the input's bytes.
    pub input_crc32: u32,
    /// Index of the first operator whose output differs between the two oracles on this sample
    /// (none when every layer agrees).
    pub first_differing_op: Option<usize>,
    /// TFLite Micro's output.
    pub expected_tflm: Tensor,
    /// TFLite interpreter (reference kernels) output.
    pub expected_tflite_ref: Tensor,
}

impl Sample {
    /// The output of one oracle.
    pub fn expected(&self, oracle: Oracle) -> &Tensor {
        match oracle {
            Oracle::Tflm => &self.expected_tflm,
            Oracle::TfliteRef => &self.expected_tflite_ref,
        }
    }
}

/// A tensor summarized: CRC32 of its bytes, its first values, and all of it when small.
#[derive(Debug, Clone, Deserialize)]
pub struct TensorDigest {
    /// CRC32 (ISO-HDLC) of the little-endian bytes.
    pub crc32: u32,
    /// The first (up to 16) values, in row-major order.
    pub head: Vec<i64>,
    /// The whole tensor when it has at most 1024 elements.
    pub full: Option<Tensor>,
}

/// One output tensor of a layer, from both oracles.
#[derive(Debug, Clone, Deserialize)]
pub struct LayerOutput {
    /// Tensor index in the `.tflite` subgraph.
    pub tensor: usize,
    /// Tensor name in the `.tflite` file.
    pub name: String,
    /// Dimensions.
    pub shape: Vec<usize>,
    /// Element type.
    pub dtype: String,
    /// Scale(s).
    pub scale: PerTensorOrChannel<f32>,
    /// Zero point(s).
    pub zero_point: PerTensorOrChannel<i32>,
    /// Elements where TFLite Micro and the interpreter differ.
    pub elements_differing: usize,
    /// The interpreter's (reference kernels) tensor.
    pub tflite_ref: TensorDigest,
    /// TFLite Micro's tensor.
    pub tflm: TensorDigest,
}

impl LayerOutput {
    /// The digest of one oracle.
    pub fn digest(&self, oracle: Oracle) -> &TensorDigest {
        match oracle {
            Oracle::Tflm => &self.tflm,
            Oracle::TfliteRef => &self.tflite_ref,
        }
    }
}

/// One operator of the model, in execution order, with its outputs on sample 0.
#[derive(Debug, Clone, Deserialize)]
pub struct Layer {
    /// Operator index in the subgraph.
    pub op_index: usize,
    /// Builtin operator name (`CONV_2D`, ...).
    pub op: String,
    /// Input tensor indices (constants included; -1 = omitted optional input).
    pub inputs: Vec<i64>,
    /// Output tensors.
    pub outputs: Vec<LayerOutput>,
}

/// How often the two oracles disagree on a model's outputs.
#[derive(Debug, Clone, Deserialize)]
pub struct ModelStats {
    /// Samples.
    pub samples: usize,
    /// Samples whose outputs differ somewhere.
    pub samples_differing: usize,
    /// Output elements over all samples.
    pub elements: usize,
    /// Output elements that differ.
    pub elements_differing: usize,
    /// Largest absolute difference.
    pub max_abs_diff: i64,
}

/// The goldens of one model.
#[derive(Debug, Clone, Deserialize)]
pub struct ModelGolden {
    /// Model index (part of the seed): 0 KWS, 1 IC, 2 VWW, 3 AD.
    pub index: u64,
    /// Short name (`kws`, `ic`, `vww`, `ad`).
    pub name: String,
    /// File name in the MLPerf Tiny model folder (see [`mlperf_tiny_dir`]).
    pub file: String,
    /// SHA-256 of the `.tflite` file (hex).
    pub sha256: String,
    /// CRC32 (ISO-HDLC) of the `.tflite` file.
    pub file_crc32: u32,
    /// Size of the `.tflite` file.
    pub bytes: usize,
    /// The model input.
    pub input: TensorInfo,
    /// The model output.
    pub output: TensorInfo,
    /// Oracle agreement on the outputs.
    pub stats: ModelStats,
    /// The 20 samples.
    pub samples: Vec<Sample>,
    /// Per-layer outputs on sample 0.
    pub layers_sample0: Vec<Layer>,
}

impl ModelGolden {
    /// The input of sample `s`: the input tensor filled in row-major order from
    /// `SplitMix64::new(index * 1000 + s)`.
    pub fn input(&self, sample: u64) -> Vec<i8> {
        let mut x = vec![0i8; self.input.shape.iter().product()];
        SplitMix64::new(self.index * 1000 + sample).fill_i8(&mut x);
        x
    }

    /// Path of the `.tflite` file.
    pub fn path(&self) -> PathBuf {
        mlperf_tiny_dir().join(&self.file)
    }
}

/// The whole golden file.
#[derive(Debug, Clone, Deserialize)]
pub struct MlperfTinyGolden {
    /// The script that wrote it.
    pub generator: String,
    /// Tool versions.
    pub tools: std::collections::BTreeMap<String, String>,
    /// How inputs are generated.
    pub seed_scheme: String,
    /// Which CRC.
    pub crc: String,
    /// KWS, IC, VWW, AD (in index order).
    pub models: Vec<ModelGolden>,
}

/// The raw text of `golden/models/mlperf_tiny.json`.
pub const MLPERF_TINY_JSON: &str = include_str!("../golden/models/mlperf_tiny.json");

/// The MLPerf Tiny goldens.
pub fn mlperf_tiny() -> MlperfTinyGolden {
    serde_json::from_str(MLPERF_TINY_JSON).expect("committed model golden file parses")
}

/// The folder holding the MLPerf Tiny `.tflite` files: `$MQ_MODELS_DIR` if set, else
/// `models/mlperf-tiny` of the repository.
pub fn mlperf_tiny_dir() -> PathBuf {
    match std::env::var_os("MQ_MODELS_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models/mlperf-tiny"),
    }
}

/// CRC32 (ISO-HDLC, the zlib one) of an int8 tensor's bytes, as stored in the digests.
pub fn crc32(x: &[i8]) -> u32 {
    crc32_bytes(&x.iter().map(|&v| v as u8).collect::<Vec<u8>>())
}

/// CRC32 (ISO-HDLC, the zlib one) of bytes.
pub fn crc32_bytes(b: &[u8]) -> u32 {
    crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC).checksum(b)
}
