//! Golden data of the quantization core (`tests/golden/quant/`), written by
//! `tests/gen/gen_quant.py` (ONNX, ONNX Runtime, ml_dtypes, TFLite) and
//! `tests/gen/gen_quant_torch.py` (PyTorch), and the calibration data both generators use,
//! regenerated here bit for bit from SplitMix64 seeds (mirror of `tests/gen/gen_quant_data.py`).

use crate::rng::SplitMix64;
use base64::Engine as _;
use serde::Deserialize;
use std::collections::BTreeMap;

/// `onnx_node_tests.json`: every ONNX backend node test of QuantizeLinear, DequantizeLinear and
/// DynamicQuantizeLinear.
pub const ONNX_NODE_TESTS_JSON: &str = include_str!("../golden/quant/onnx_node_tests.json");
/// `ort_observers.json`: ONNX Runtime calibrators and `compute_scale_zp`.
pub const ORT_JSON: &str = include_str!("../golden/quant/ort_observers.json");
/// `torch.json`: PyTorch observers, formulas, quantize and fake quantize.
pub const TORCH_JSON: &str = include_str!("../golden/quant/torch.json");
/// `minifloat.json`: ml_dtypes float8 / float4 / float16 casts.
pub const MINIFLOAT_JSON: &str = include_str!("../golden/quant/minifloat.json");
/// `tflite_quantize.json`: TFLite QUANTIZE kernel outputs.
pub const TFLITE_JSON: &str = include_str!("../golden/quant/tflite_quantize.json");
/// `requant.json`: requantization cases (exact integer statement of TFLite's rules).
pub const REQUANT_JSON: &str = include_str!("../golden/quant/requant.json");

fn b64(s: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD.decode(s).expect("golden base64 decodes")
}

/// Little-endian `f32`s from base64.
pub fn b64_f32(s: &str) -> Vec<f32> {
    b64(s).chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}
/// Little-endian `i32`s from base64.
pub fn b64_i32(s: &str) -> Vec<i32> {
    b64(s).chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}
/// Little-endian `u16`s from base64.
pub fn b64_u16(s: &str) -> Vec<u16> {
    b64(s).chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect()
}
/// Bytes from base64.
pub fn b64_bytes(s: &str) -> Vec<u8> {
    b64(s)
}

/// One row of a formula table: `(min, max, [(scale, zero_point)] per configuration)`.
pub type FormulaRow = (f32, f32, Vec<(f32, i32)>);

/// A tensor as ONNX stores it: raw little-endian bytes, sub-byte types packed (4-bit: two per
/// byte, low nibble first; 2-bit: four per byte, lowest pair first).
#[derive(Debug, Clone, Deserialize)]
pub struct RawTensor {
    /// Graph name of the input or output.
    pub name: String,
    /// `float32`, `float16`, `uint8`, `int8`, `uint16`, `int16`, `int32`, `uint4`, `int4`,
    /// `uint2`, `int2`, `float8e4m3fn`, `float8e5m2`, `float4e2m1`.
    pub dtype: String,
    /// Dimensions.
    pub shape: Vec<usize>,
    /// base64 of the raw bytes.
    pub b64: String,
}

impl RawTensor {
    /// Element count (1 for a scalar).
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }
    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The raw bytes.
    pub fn bytes(&self) -> Vec<u8> {
        b64(&self.b64)
    }
    /// The elements as `f32`, converting from float16 if needed.
    pub fn f32s(&self) -> Vec<f32> {
        match self.dtype.as_str() {
            "float32" => b64_f32(&self.b64),
            "float16" => b64_u16(&self.b64).into_iter().map(half_to_f32).collect(),
            d => panic!("{}: {d} is not a float tensor", self.name),
        }
    }
}

/// IEEE half to `f32` (an independent reference, for reading golden float16 inputs).
pub fn half_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let e = ((h >> 10) & 0x1F) as i32;
    let m = (h & 0x3FF) as f64;
    let v = match e {
        0 => m * 2f64.powi(-24),
        31 => {
            if m == 0.0 {
                f64::INFINITY
            } else {
                f64::NAN
            }
        }
        _ => (1.0 + m / 1024.0) * 2f64.powi(e - 15),
    };
    (sign * v) as f32
}

/// One ONNX backend node test case.
#[derive(Debug, Clone, Deserialize)]
pub struct OnnxNodeCase {
    /// The test name, e.g. `test_quantizelinear_axis`.
    pub name: String,
    /// `QuantizeLinear`, `DequantizeLinear` or `DynamicQuantizeLinear`.
    pub op: String,
    /// Opset of the test model.
    pub opset: i64,
    /// Integer attributes (`axis`, `block_size`, `saturate`, `output_dtype`).
    pub attrs: BTreeMap<String, i64>,
    /// Inputs in graph order.
    pub inputs: Vec<RawTensor>,
    /// Expected outputs in graph order.
    pub outputs: Vec<RawTensor>,
    /// Whether ONNX Runtime reproduced the case ("same", "differs" or "unsupported: ...").
    pub onnxruntime: String,
}

#[derive(Deserialize)]
struct OnnxFile {
    count: usize,
    cases: Vec<OnnxNodeCase>,
}

/// All ONNX node test cases (asserts the file's count).
pub fn onnx_node_cases() -> Vec<OnnxNodeCase> {
    let f: OnnxFile = serde_json::from_str(ONNX_NODE_TESTS_JSON).expect("onnx_node_tests.json parses");
    assert_eq!(f.count, f.cases.len());
    f.cases
}

// ------------------------------------------------------------------------------------------
// Calibration data (mirror of tests/gen/gen_quant_data.py)

/// Batches per data set.
pub const BATCHES: usize = 4;
/// Values per batch.
pub const BATCH: usize = 4096;
/// The per-tensor data sets: (name, seed, draws per value).
pub const DATASETS: [(&str, u64, usize); 6] = [
    ("normal", 1001, 4),
    ("heavy", 2002, 5),
    ("relu", 3003, 4),
    ("positive", 4004, 4),
    ("tiny", 5005, 4),
    ("uniform", 6006, 1),
];
/// The channel data sets: (name, seed, batch shape, channel axis, batches).
pub const CHANNEL_DATASETS: [(&str, u64, [usize; 4], usize, usize); 3] = [
    ("act_nchw_axis1", 7007, [2, 6, 5, 5], 1, 3),
    ("weights_oihw_axis0", 8008, [8, 3, 3, 3], 0, 1),
    ("act_nhwc_axis3", 9009, [1, 4, 4, 5], 3, 2),
];

/// `n` uniforms in [0, 1): `(next_u64() >> 40) · 2^-24`, exact in `f32`.
pub fn uniforms(seed: u64, n: usize) -> Vec<f32> {
    let mut r = SplitMix64::new(seed);
    (0..n).map(|_| (r.next_u64() >> 40) as f32 * (1.0 / 16_777_216.0)).collect()
}

fn z_of(u: &[f32]) -> f32 {
    let mut s = u[0] + u[1];
    s += u[2];
    s += u[3];
    s -= 2.0;
    s * 1.732_050_8
}

/// Batch `b` of data set `name` (see `gen_quant_data.py` for the formulas).
pub fn batch(name: &str, b: usize) -> Vec<f32> {
    let &(_, seed, k) = DATASETS.iter().find(|d| d.0 == name).expect("known data set");
    let u = uniforms(seed + b as u64, BATCH * k);
    u.chunks_exact(k)
        .map(|u| match name {
            "uniform" => (u[0] * 2.0 - 1.0) * 100.0,
            _ => {
                let z = z_of(u);
                match name {
                    "normal" => z,
                    "heavy" => {
                        if u[4] < 0.01 {
                            z * 30.0
                        } else {
                            z
                        }
                    }
                    "relu" => {
                        let v = z * 2.0 + 0.5;
                        if v > 0.0 { v } else { 0.0 }
                    }
                    "positive" => z * 0.25 + 3.0,
                    "tiny" => z * 0.001,
                    _ => unreachable!(),
                }
            }
        })
        .collect()
}

/// All batches of a data set.
pub fn dataset(name: &str) -> Vec<Vec<f32>> {
    (0..BATCHES).map(|b| batch(name, b)).collect()
}

/// A channel data set: its batches (row-major, shape `shape`), the shape and the channel axis.
pub fn channel_dataset(name: &str) -> (Vec<Vec<f32>>, [usize; 4], usize) {
    let &(_, seed, shape, axis, nb) = CHANNEL_DATASETS.iter().find(|d| d.0 == name).expect("known data set");
    let n: usize = shape.iter().product();
    let inner: usize = shape[axis + 1..].iter().product();
    let batches = (0..nb)
        .map(|b| {
            let u = uniforms(seed + b as u64, n * 4);
            u.chunks_exact(4)
                .enumerate()
                .map(|(i, u)| {
                    let c = ((i / inner) % shape[axis]) as f32;
                    let f = 0.5 * (c + 1.0);
                    let o = 0.25 * c - 0.5;
                    z_of(u) * f + o
                })
                .collect()
        })
        .collect();
    (batches, shape, axis)
}

// ------------------------------------------------------------------------------------------
// ONNX Runtime

/// One ORT calibrator run on a data set.
#[derive(Debug, Clone, Deserialize)]
pub struct OrtCalibration {
    /// Data set name.
    pub dataset: String,
    /// Configuration name (see `ORT_CONFIGS` in the generator).
    pub config: String,
    /// `MinMax`, `Entropy` or `Percentile`.
    pub method: String,
    /// The calibrator's extra options.
    pub options: BTreeMap<String, serde_json::Value>,
    /// The range ORT computed for the tensor.
    pub range: [f32; 2],
    /// `compute_scale_zp` on that range, one `(scale, zero_point)` per [`OrtQType`].
    pub qparams: Vec<(f32, i32)>,
}

/// A quantized type as ORT's quantizer sets it up (`get_qmin_qmax_for_qType`).
#[derive(Debug, Clone, Deserialize)]
pub struct OrtQType {
    /// Name, e.g. `int8_symmetric`.
    pub name: String,
    /// Smallest quantized value.
    pub qmin: i32,
    /// Largest quantized value.
    pub qmax: i32,
    /// `symmetric` flag of `compute_scale_zp`.
    pub symmetric: bool,
    /// `reduce_range` flag of `get_qmin_qmax_for_qType`.
    pub reduce_range: bool,
}

/// ORT's `compute_scale_zp` on a table of `(min, max)` pairs.
#[derive(Debug, Clone, Deserialize)]
pub struct OrtComputeTable {
    /// The quantized types (column order of `rows`).
    pub qtypes: Vec<OrtQType>,
    /// `[min, max, [scale, zp] per qtype]`.
    pub rows: Vec<serde_json::Value>,
}

impl OrtComputeTable {
    /// The rows as `(min, max, [(scale, zp)])`.
    pub fn parsed(&self) -> Vec<FormulaRow> {
        self.rows
            .iter()
            .map(|r| {
                let a = r.as_array().expect("row");
                let qs =
                    a[2..].iter().map(|p| (p[0].as_f64().unwrap() as f32, p[1].as_i64().unwrap() as i32)).collect();
                (a[0].as_f64().unwrap() as f32, a[1].as_f64().unwrap() as f32, qs)
            })
            .collect()
    }
}

/// ONNX `DynamicQuantizeLinear` on the first 64 values of a batch.
#[derive(Debug, Clone, Deserialize)]
pub struct DynamicQuantizeRow {
    /// Data set name.
    pub dataset: String,
    /// Batch index.
    pub batch: usize,
    /// Number of values (a prefix of the batch).
    pub n: usize,
    /// Expected scale.
    pub scale: f32,
    /// Expected zero point.
    pub zero_point: i32,
    /// Expected uint8 output, base64.
    pub y: String,
    /// Whether ONNX Runtime's kernel gave the same outputs as the reference evaluator.
    pub onnxruntime_same: bool,
}

/// The whole `ort_observers.json`.
#[derive(Debug, Clone, Deserialize)]
pub struct OrtGolden {
    /// Tool versions.
    pub versions: BTreeMap<String, String>,
    /// Calibrator runs.
    pub calibrators: Vec<OrtCalibration>,
    /// The formula table.
    pub compute_scale_zp: OrtComputeTable,
    /// DynamicQuantizeLinear rows.
    pub dynamic_quantize_linear: Vec<DynamicQuantizeRow>,
}

/// Parses `ort_observers.json`.
pub fn ort_golden() -> OrtGolden {
    serde_json::from_str(ORT_JSON).expect("ort_observers.json parses")
}

// ------------------------------------------------------------------------------------------
// PyTorch

/// One PyTorch per-tensor observer configuration.
#[derive(Debug, Clone, Deserialize)]
pub struct TorchConfig {
    /// `quint8`, `qint8` or `qint32`.
    pub dtype: String,
    /// `per_tensor_affine` or `per_tensor_symmetric`.
    pub qscheme: String,
    /// `reduce_range`.
    pub reduce_range: bool,
    /// Custom `quant_min`.
    pub quant_min: Option<i32>,
    /// Custom `quant_max`.
    pub quant_max: Option<i32>,
}

/// PyTorch per-tensor observers on one data set and configuration: each entry is
/// `[min or searched lo, max or searched hi, scale, zero_point]`.
#[derive(Debug, Clone, Deserialize)]
pub struct TorchPerTensor {
    /// Data set.
    pub dataset: String,
    /// Configuration name.
    pub config: String,
    /// `MinMaxObserver` over the batches.
    pub minmax: [f64; 4],
    /// `MovingAverageMinMaxObserver` over the batches.
    pub moving_average: Option<[f64; 4]>,
    /// `HistogramObserver` fed all the data in one batch (`_non_linear_param_search` range).
    pub histogram_one_batch: Option<[f64; 4]>,
    /// `HistogramObserver` fed the batches one by one.
    pub histogram_batches: Option<[f64; 4]>,
}

/// Per-channel results of one observer.
#[derive(Debug, Clone, Deserialize)]
pub struct TorchChannelResult {
    /// Per-channel minimum (or its moving average).
    pub min: Vec<f32>,
    /// Per-channel maximum.
    pub max: Vec<f32>,
    /// Scales.
    pub scales: Vec<f32>,
    /// Zero points.
    pub zero_points: Vec<i32>,
}

/// PyTorch per-channel observers on one channel data set.
#[derive(Debug, Clone, Deserialize)]
pub struct TorchPerChannel {
    /// Channel data set.
    pub dataset: String,
    /// Configuration name (`quint8_affine`, `qint8_affine`, `qint8_symmetric`, `qint8_symmetric_restricted`).
    pub config: String,
    /// Channel axis.
    pub axis: usize,
    /// `PerChannelMinMaxObserver`.
    pub minmax: TorchChannelResult,
    /// `MovingAveragePerChannelMinMaxObserver`.
    pub moving_average: TorchChannelResult,
}

/// PyTorch's formula on a table of `(min, max)` pairs.
#[derive(Debug, Clone, Deserialize)]
pub struct TorchChoose {
    /// Configuration names, column order.
    pub configs: Vec<String>,
    /// `[min, max, [scale, zp] per config]`.
    pub rows: Vec<serde_json::Value>,
}

impl TorchChoose {
    /// The rows as `(min, max, [(scale, zp)])`.
    pub fn parsed(&self) -> Vec<FormulaRow> {
        self.rows
            .iter()
            .map(|r| {
                let a = r.as_array().expect("row");
                let qs =
                    a[2..].iter().map(|p| (p[0].as_f64().unwrap() as f32, p[1].as_i64().unwrap() as i32)).collect();
                (a[0].as_f64().unwrap() as f32, a[1].as_f64().unwrap() as f32, qs)
            })
            .collect()
    }
}

/// `quantize_per_tensor`/`_per_channel` and `fake_quantize_*_cachemask` on some data.
#[derive(Debug, Clone, Deserialize)]
pub struct TorchQuantize {
    /// `per_tensor` or `per_channel`.
    pub kind: String,
    /// Data set the values start with.
    pub dataset: String,
    /// Per-tensor scale.
    pub scale: Option<f32>,
    /// Per-tensor zero point.
    pub zero_point: Option<i32>,
    /// Per-channel scales.
    pub scales: Option<Vec<f32>>,
    /// Per-channel zero points.
    pub zero_points: Option<Vec<i32>>,
    /// Channel axis.
    pub axis: Option<usize>,
    /// Tensor shape (per channel).
    pub shape: Option<Vec<usize>>,
    /// Clamp range of fake quantization.
    pub qmin: i32,
    /// Clamp range of fake quantization.
    pub qmax: i32,
    /// `int8` or `uint8` (the `quantize_per_*` type).
    pub dtype: String,
    /// Element count.
    pub n: usize,
    /// Input, base64 `f32`.
    pub x: String,
    /// `fake_quantize` output, base64 `f32`.
    pub fake: String,
    /// Straight-through mask, base64 bytes (0/1).
    pub mask: String,
    /// `quantize_per_*(...).int_repr()`, base64 `i32`.
    pub quantize: String,
}

/// The whole `torch.json`.
#[derive(Debug, Clone, Deserialize)]
pub struct TorchGolden {
    /// Tool versions.
    pub versions: BTreeMap<String, String>,
    /// Per-tensor configurations by name.
    pub configs: BTreeMap<String, TorchConfig>,
    /// Per-tensor observers.
    pub per_tensor: Vec<TorchPerTensor>,
    /// Per-channel observers.
    pub per_channel: Vec<TorchPerChannel>,
    /// `torch.histc(x, 2048, min, max)` of whole data sets, base64 `u16`.
    pub histc: BTreeMap<String, String>,
    /// The formula table.
    pub choose: TorchChoose,
    /// Quantize / fake-quantize cases.
    pub quantize: Vec<TorchQuantize>,
}

/// Parses `torch.json`.
pub fn torch_golden() -> TorchGolden {
    serde_json::from_str(TORCH_JSON).expect("torch.json parses")
}

// ------------------------------------------------------------------------------------------
// ml_dtypes, TFLite, requantization

/// `minifloat.json`.
#[derive(Debug, Clone, Deserialize)]
pub struct MinifloatGolden {
    /// Number of inputs.
    pub n: usize,
    /// Inputs, base64 `f32`.
    pub x: String,
    /// E4M3FN with saturation (ONNX saturate=1).
    pub e4m3fn_saturate: String,
    /// E4M3FN without saturation.
    pub e4m3fn: String,
    /// E5M2 with saturation.
    pub e5m2_saturate: String,
    /// E5M2 without saturation.
    pub e5m2: String,
    /// E2M1 of the inputs that are not NaN (in order).
    pub e2m1_of_non_nan: String,
    /// float16 bits, base64 `u16`.
    pub float16: String,
}

/// Parses `minifloat.json`.
pub fn minifloat_golden() -> MinifloatGolden {
    serde_json::from_str(MINIFLOAT_JSON).expect("minifloat.json parses")
}

/// One TFLite QUANTIZE case.
#[derive(Debug, Clone, Deserialize)]
pub struct TfliteQuantizeCase {
    /// Case name.
    pub name: String,
    /// `float32`, `int8`, `uint8` or `int16`.
    pub in_dtype: String,
    /// `int8`, `uint8` or `int16`.
    pub out_dtype: String,
    /// Input scale (integer inputs).
    pub in_scale: Option<f32>,
    /// Input zero point (integer inputs).
    pub in_zero_point: Option<i32>,
    /// Output scale.
    pub out_scale: f32,
    /// Output zero point.
    pub out_zero_point: i32,
    /// Element count.
    pub n: usize,
    /// Input, base64 little-endian.
    pub x: String,
    /// TFLite's output, base64 little-endian.
    pub y: String,
    /// TFLite Micro agrees (`true`), disagrees (`false`) or does not support the case (a string).
    pub tflm_same: serde_json::Value,
}

/// Parameters the TFLite converter chose for an input calibrated on `[min, max]`.
#[derive(Debug, Clone, Deserialize)]
pub struct TfliteConverterInput {
    /// Calibrated minimum.
    pub min: f32,
    /// Calibrated maximum.
    pub max: f32,
    /// int8 scale.
    pub scale: f32,
    /// int8 zero point.
    pub zero_point: i32,
}

/// A Dense layer's weights as the TFLite converter quantized them (per output channel).
#[derive(Debug, Clone, Deserialize)]
pub struct TfliteConverterWeights {
    /// Float weights, `[out, in]` row-major.
    pub w: Vec<f32>,
    /// `[out, in]`.
    pub shape: Vec<usize>,
    /// Per-channel scales.
    pub scales: Vec<f32>,
    /// Per-channel zero points (0).
    pub zero_points: Vec<i32>,
    /// The int8 weights.
    pub q: Vec<i32>,
}

/// The converter section of `tflite_quantize.json`.
#[derive(Debug, Clone, Deserialize)]
pub struct TfliteConverter {
    /// Input parameters.
    pub inputs: Vec<TfliteConverterInput>,
    /// Weight tensors.
    pub weights: Vec<TfliteConverterWeights>,
}

#[derive(Deserialize)]
struct TfliteFile {
    cases: Vec<TfliteQuantizeCase>,
    converter: TfliteConverter,
}

/// The TFLite QUANTIZE cases.
pub fn tflite_quantize_cases() -> Vec<TfliteQuantizeCase> {
    serde_json::from_str::<TfliteFile>(TFLITE_JSON).expect("tflite_quantize.json parses").cases
}

/// What the TFLite converter chose for calibrated inputs and Dense weights.
pub fn tflite_converter() -> TfliteConverter {
    serde_json::from_str::<TfliteFile>(TFLITE_JSON).expect("tflite_quantize.json parses").converter
}

/// Decodes a little-endian integer tensor of `dtype` (`int8`, `uint8`, `int16`, `int32`) to `i32`s.
pub fn b64_ints(s: &str, dtype: &str) -> Vec<i32> {
    let b = b64(s);
    match dtype {
        "int8" => b.iter().map(|&v| v as i8 as i32).collect(),
        "uint8" => b.iter().map(|&v| v as i32).collect(),
        "int16" => b.chunks_exact(2).map(|c| i16::from_le_bytes([c[0], c[1]]) as i32).collect(),
        "int32" => b.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
        d => panic!("not an integer dtype: {d}"),
    }
}

/// One requantization case: `(x, multiplier, shift, double-rounding result, single-rounding
/// result or None where it overflows int32)`.
pub type RequantCase = (i32, i32, i32, i32, Option<i32>);

#[derive(Deserialize)]
struct RequantFile {
    cases: Vec<(i32, i32, i32, i32, Option<i32>)>,
}

/// The requantization cases.
pub fn requant_cases() -> Vec<RequantCase> {
    serde_json::from_str::<RequantFile>(REQUANT_JSON).expect("requant.json parses").cases
}

#[cfg(test)]
mod tests {
    #[test]
    fn data_generator_matches_python() {
        // First values of two data sets and a channel set, as gen_quant_data.py printed them
        // (its sums are checked by the observer tests through the peers' ranges).
        let n = super::batch("normal", 0);
        assert_eq!(n.len(), super::BATCH);
        let all: Vec<f32> = super::dataset("heavy").concat();
        let (lo, hi) = all.iter().fold((f32::MAX, f32::MIN), |(l, h), &v| (l.min(v), h.max(v)));
        assert_eq!((lo, hi), (-65.830086, 79.61021));
    }
}
