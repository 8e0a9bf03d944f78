//! `QuantizedModel`: a `.mq` model (loaded, or made by the converter) with its interpreter,
//! its sizes, and its exports (`.mq` bytes, C header, Rust source).

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::cell::RefCell;

use js_sys::{Array, Float32Array, Object};
use microquant::interp::{ARENA_ALIGN, Interpreter, PreparedOp};
use microquant::layout;
use microquant::model::{ElementType, Model, Quant};
use microquant::quant::{QParams, QuantDType};
use self_cell::{MutBorrow, self_cell};
use wasm_bindgen::prelude::*;

use crate::error::{Context, error, type_error};
use crate::js::{is_qtensor, set, shape_text, u32_array, usize_array};
use crate::tensor::{QData, QTensor, check_finite, float_array, qparams, quantize_into, quantize_values};

/// The bytes a session owns: the model (in `u128` words, so it is 16-byte aligned) and the
/// arena.
struct Owner {
    words: Vec<u128>,
    len: usize,
    arena: Vec<u128>,
}

/// An interpreter with every op prepared once ([`Interpreter::prepare_op`]), so a `run` only
/// calls the kernels ([`Interpreter::invoke_prepared`]).
struct Prepared<'a> {
    it: Interpreter<'a, 'a>,
    plan: Vec<PreparedOp<'a>>,
}

impl<'a> Prepared<'a> {
    fn new(model: &'a [u8], arena: &'a mut [u8]) -> Result<Self, microquant::Error> {
        let it = Interpreter::new(model, arena)?;
        let plan = (0..it.model().num_ops()).map(|i| it.prepare_op(i)).collect::<Result<_, _>>()?;
        Ok(Self { it, plan })
    }
}

self_cell!(
    /// An interpreter together with the model bytes and arena it borrows, so it is validated
    /// and prepared once and reused by every `run` (no unsafe code here: `self_cell` ties the
    /// lifetimes).
    struct Session {
        owner: MutBorrow<Owner>,
        #[not_covariant]
        dependent: Prepared,
    }
);

fn words_of(bytes: &[u8]) -> Vec<u128> {
    let mut words = vec![0u128; bytes.len().div_ceil(16)];
    let dst: &mut [u8] = bytemuck::cast_slice_mut(&mut words);
    if let Some(d) = dst.get_mut(..bytes.len()) {
        d.copy_from_slice(bytes);
    }
    words
}

/// A model input or output as the caller sees it.
#[derive(Debug, Clone)]
pub(crate) struct Io {
    pub(crate) name: String,
    /// The shape the caller's data has (the source model's layout).
    pub(crate) shape: Vec<usize>,
    /// Graph axis `i` is caller axis `perm[i]` (identity unless an ONNX NCHW input is NHWC in the
    /// graph).
    pub(crate) perm: Vec<usize>,
}

impl Io {
    fn is_identity(&self) -> bool {
        layout::is_identity(&self.perm)
    }
}

/// Reorders `data` of `shape` so that output axis `i` is input axis `perm[i]`
/// ([`microquant::layout::Transpose`]). A shape or permutation that does not fit `data` leaves
/// it as it is.
pub(crate) fn transpose<T: Copy + Default>(data: &[T], shape: &[usize], perm: &[usize]) -> Vec<T> {
    match layout::Transpose::new(shape, perm) {
        Ok(t) if t.len() == data.len() && !t.is_data_preserving() => {
            t.sources().map(|s| data.get(s).copied().unwrap_or_default()).collect()
        }
        _ => data.to_vec(),
    }
}

/// True when [`transpose`] returns `len` values of `shape` as they are: a shape or permutation
/// that does not fit, or one that moves only axes of size 1 (NCHW to NHWC with one channel,
/// say: the order in memory is the same).
fn keeps_order(len: usize, shape: &[usize], perm: &[usize]) -> bool {
    layout::Transpose::new(shape, perm).ok().is_none_or(|t| t.len() != len || t.is_data_preserving())
}

/// The inverse permutation ([`microquant::layout::inverse_into`]; all zeros for a `perm` that
/// is not a permutation, which [`transpose`] then refuses).
pub(crate) fn inverse(perm: &[usize]) -> Vec<usize> {
    let mut inv = vec![0; perm.len()];
    if layout::inverse_into(perm, &mut inv).is_err() {
        inv.fill(0);
    }
    inv
}

/// What the converter knows about a model it made (absent for a loaded `.mq`).
#[cfg(feature = "converter")]
pub(crate) struct Extras {
    /// The quantized graph (for the QDQ ONNX export).
    pub(crate) graph: microquant::graph::Graph,
    /// The per-layer report (models quantized here).
    pub(crate) report: Option<microquant::ptq::Report>,
    /// Layouts of the inputs and outputs in the source model (for the QDQ export; empty: the
    /// graph's own).
    pub(crate) inputs: Vec<microquant::onnx::IoInfo>,
    pub(crate) outputs: Vec<microquant::onnx::IoInfo>,
    /// What AdaRound chose (the `adaround` option).
    pub(crate) adaround: Option<microquant::ptq::AdaRounding>,
}

/// The state of a `QuantizedModel`.
pub(crate) struct Compiled {
    /// The `.mq` bytes, exactly as written.
    pub(crate) bytes: Vec<u8>,
    session: RefCell<Session>,
    /// The float input being quantized by `run`, kept between runs so a run does not allocate it.
    floats: RefCell<Vec<f32>>,
    /// Where the model came from: `mq`, `tflite`, `quantized`.
    pub(crate) source: &'static str,
    /// A name for exports (file stem).
    pub(crate) name: String,
    /// Caller-facing inputs and outputs (layouts of the source model).
    pub(crate) inputs: Vec<Io>,
    pub(crate) outputs: Vec<Io>,
    #[cfg(feature = "converter")]
    pub(crate) extras: Option<Extras>,
}

impl Compiled {
    /// Validates `bytes` and prepares the interpreter. `layouts` gives the caller-facing inputs
    /// and outputs (default: the model's own names and shapes).
    pub(crate) fn new(
        bytes: Vec<u8>,
        source: &'static str,
        name: String,
        layouts: Option<(Vec<Io>, Vec<Io>)>,
    ) -> Result<Self, JsValue> {
        let words = words_of(&bytes);
        let arena_len = {
            let view: &[u8] = bytemuck::cast_slice(&words);
            let m = Model::parse(view.get(..bytes.len()).unwrap_or(&[])).ctx("not a valid .mq model")?;
            m.arena_len()
        };
        // The arena size comes from the file (validated against its tensors by `Model::parse`):
        // allocated fallibly, so a model too large for this page is an error, not a trap.
        let words_needed = (arena_len + ARENA_ALIGN).div_ceil(16);
        let mut arena: Vec<u128> = Vec::new();
        if arena.try_reserve_exact(words_needed).is_err() {
            return Err(crate::error::range_error(format!(
                "the .mq model needs an arena of {arena_len} bytes, which cannot be allocated here"
            )));
        }
        arena.resize(words_needed, 0);
        let owner = Owner { words, len: bytes.len(), arena };
        let session = Session::try_new(MutBorrow::new(owner), |o| {
            let o = o.borrow_mut();
            let Owner { words, len, arena } = o;
            let all: &[u8] = bytemuck::cast_slice(words.as_slice());
            let model = all.get(..*len).unwrap_or(&[]);
            Prepared::new(model, bytemuck::cast_slice_mut(arena.as_mut_slice()))
        })
        .ctx("the .mq model cannot run")?;
        let (inputs, outputs) = match layouts {
            Some(l) => l,
            None => session.with_dependent(|_, p| {
                let m = p.it.model();
                let io = |t: Result<u32, microquant::Error>| {
                    let t = t.and_then(|t| m.tensor(t)).ok();
                    let shape: Vec<usize> =
                        t.map(|t| t.dims().iter().map(|&d| d as usize).collect()).unwrap_or_default();
                    Io {
                        name: t.map(|t| String::from(t.name())).unwrap_or_default(),
                        perm: (0..shape.len()).collect(),
                        shape,
                    }
                };
                (
                    (0..m.num_inputs()).map(|i| io(m.input_index(i))).collect(),
                    (0..m.num_outputs()).map(|i| io(m.output_index(i))).collect(),
                )
            }),
        };
        Ok(Self {
            bytes,
            session: RefCell::new(session),
            floats: RefCell::new(Vec::new()),
            source,
            name,
            inputs,
            outputs,
            #[cfg(feature = "converter")]
            extras: None,
        })
    }

    fn with_model<R>(&self, f: impl FnOnce(&Model<'_>) -> R) -> R {
        self.session.borrow().with_dependent(|_, p| f(p.it.model()))
    }
}

/// A quantized model: a `.mq` file and the no-allocation interpreter that runs it, bit for bit
/// as on a Cortex-M.
#[wasm_bindgen]
pub struct QuantizedModel {
    pub(crate) inner: Compiled,
}

fn dtype_name(d: ElementType) -> &'static str {
    match d {
        ElementType::I8 => "int8",
        ElementType::U8 => "uint8",
        ElementType::I16 => "int16",
        ElementType::I32 => "int32",
        ElementType::F32 => "float32",
        ElementType::I64 => "int64",
        _ => "unknown",
    }
}

/// A plain `{name, shape, dtype, scale, zeroPoint}` object.
fn io_object(io: &Io, dtype: ElementType, quant: &Quant<'_>) -> Object {
    let o = Object::new();
    set(&o, "name", io.name.as_str());
    set(&o, "shape", usize_array(&io.shape));
    set(&o, "dtype", dtype_name(dtype));
    if let Quant::PerTensor { scale, zero_point } = quant {
        set(&o, "scale", *scale);
        set(&o, "zeroPoint", *zero_point);
    }
    o
}

impl core::fmt::Debug for QuantizedModel {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "QuantizedModel({} {:?}, {} bytes)", self.inner.source, self.inner.name, self.inner.bytes.len())
    }
}

impl QuantizedModel {
    fn io_list(&self, outputs: bool) -> Array {
        self.inner.with_model(|m| {
            let list = if outputs { &self.inner.outputs } else { &self.inner.inputs };
            list.iter()
                .enumerate()
                .filter_map(|(i, io)| {
                    let t = if outputs { m.output_index(i) } else { m.input_index(i) };
                    let t = t.and_then(|t| m.tensor(t)).ok()?;
                    Some(JsValue::from(io_object(io, t.dtype, &t.quant)))
                })
                .collect()
        })
    }

    /// The common case of [`input_data`](Self::input_data) without its vectors: input `k` given as
    /// a `Float32Array` whose values are in the graph's order. Copies the values into `floats`
    /// and returns the parameters to quantize them with (straight into the arena); `None` for
    /// any other input, left to `input_data`. Throws what `input_data` throws for the same input.
    fn input_floats(
        &self,
        k: usize,
        v: &JsValue,
        dtype: ElementType,
        quant: &Quant<'_>,
        floats: &mut Vec<f32>,
    ) -> Result<Option<QParams>, JsValue> {
        let (Some(io), Some(a)) = (self.inner.inputs.get(k), v.dyn_ref::<Float32Array>()) else {
            return Ok(None);
        };
        let Quant::PerTensor { scale, zero_point } = quant else {
            return Ok(None);
        };
        let n: usize = io.shape.iter().product();
        if !(io.is_identity() || keeps_order(n, &io.shape, &io.perm)) || is_qtensor(v) {
            return Ok(None);
        }
        let len = a.length() as usize;
        if len != n {
            return Err(error(format!(
                "input {k} '{}' has shape {} ({n} values), got {len} values",
                io.name,
                shape_text(&io.shape)
            )));
        }
        let qd = if dtype == ElementType::I16 { QuantDType::Int16 } else { QuantDType::Int8 };
        let p = qparams(f64::from(*scale), f64::from(*zero_point), qd)?;
        floats.resize(n, 0.0);
        let Some(dst) = floats.get_mut(..n) else {
            return Ok(None);
        };
        a.copy_to(dst);
        check_finite(dst)?;
        Ok(Some(p))
    }

    /// One input's integer data in the graph's layout, from a float array or a QTensor.
    fn input_data(&self, k: usize, v: &JsValue, dtype: ElementType, quant: &Quant<'_>) -> Result<QData, JsValue> {
        let io = self.inner.inputs.get(k).ok_or_else(|| error(format!("the model has no input {k}")))?;
        let (scale, zp) = match quant {
            Quant::PerTensor { scale, zero_point } => (*scale, *zero_point),
            _ => return Err(error(format!("input {k} '{}' has no per-tensor quantization", io.name))),
        };
        let qd = if dtype == ElementType::I16 { QuantDType::Int16 } else { QuantDType::Int8 };
        let n: usize = io.shape.iter().product();
        let data = if is_qtensor(v) {
            let t = QTensor::from_js(v, &format!("input {k}"))?;
            if t.data.dtype() != dtype_name(dtype) || t.scale != scale || t.zero_point != zp {
                return Err(error(format!(
                    "input {k} '{}': the QTensor is {} with scale {} and zeroPoint {}, the model input is {} with scale {scale} and zeroPoint {zp} (pass floats to quantize them with the model's parameters)",
                    io.name,
                    t.data.dtype(),
                    t.scale,
                    t.zero_point,
                    dtype_name(dtype)
                )));
            }
            t.data
        } else {
            let x = float_array(v, &format!("input {k} '{}'", io.name))?;
            if x.len() != n {
                return Err(error(format!(
                    "input {k} '{}' has shape {} ({n} values), got {} values",
                    io.name,
                    shape_text(&io.shape),
                    x.len()
                )));
            }
            quantize_values(&x, &qparams(f64::from(scale), f64::from(zp), qd)?)?
        };
        if data.len() != n {
            return Err(error(format!(
                "input {k} '{}' has shape {} ({n} values), got {} values",
                io.name,
                shape_text(&io.shape),
                data.len()
            )));
        }
        if io.is_identity() {
            return Ok(data);
        }
        Ok(match data {
            QData::I8(v) => QData::I8(transpose(&v, &io.shape, &io.perm)),
            QData::I16(v) => QData::I16(transpose(&v, &io.shape, &io.perm)),
        })
    }
}

/// The inputs of `run`: one value per model input.
pub(crate) fn input_list(inputs: &JsValue, n: usize) -> Result<Vec<JsValue>, JsValue> {
    let is_list = Array::is_array(inputs) && {
        let a = Array::from(inputs);
        a.length() > 0 && a.iter().all(|x| x.is_object())
    };
    let list: Vec<JsValue> = if is_list { Array::from(inputs).iter().collect() } else { vec![inputs.clone()] };
    if list.len() != n {
        return Err(type_error(format!(
            "the model has {n} input{}, got {} (pass one array per input, in order)",
            if n == 1 { "" } else { "s" },
            list.len()
        )));
    }
    Ok(list)
}

#[wasm_bindgen]
impl QuantizedModel {
    /// Loads a `.mq` model from its bytes (a `Uint8Array` or `ArrayBuffer`). Throws an `Error`
    /// naming the damage (bad magic, version, CRC, an offset outside the file...).
    #[wasm_bindgen(js_name = fromBytes)]
    pub fn from_bytes(
        #[wasm_bindgen(unchecked_param_type = "Uint8Array | ArrayBuffer")] bytes: JsValue,
        name: Option<String>,
    ) -> Result<QuantizedModel, JsValue> {
        let b = crate::js::bytes(&bytes, "bytes")?;
        Ok(QuantizedModel { inner: Compiled::new(b, "mq", name.unwrap_or_else(|| "model".into()), None)? })
    }

    /// Where the model came from: `"mq"` (a `.mq` file), `"tflite"` (an int8 TFLite model) or
    /// `"quantized"` (quantized here from a float or QDQ ONNX / TFLite model).
    #[wasm_bindgen(getter)]
    pub fn source(&self) -> String {
        String::from(self.inner.source)
    }

    /// The name used by the exports.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.inner.name.clone()
    }

    /// Inputs: `{name, shape, dtype, scale, zeroPoint}` each (shapes in the source model's
    /// layout, e.g. NCHW for an ONNX model).
    #[wasm_bindgen(getter, unchecked_return_type = "TensorInfo[]")]
    pub fn inputs(&self) -> Array {
        self.io_list(false)
    }

    /// Outputs, as `inputs`.
    #[wasm_bindgen(getter, unchecked_return_type = "TensorInfo[]")]
    pub fn outputs(&self) -> Array {
        self.io_list(true)
    }

    /// Size of the `.mq` file: what goes into flash with the runtime.
    #[wasm_bindgen(getter, js_name = modelBytes)]
    pub fn model_bytes(&self) -> usize {
        self.inner.bytes.len()
    }

    /// Bytes of constant data in the model (weights, biases, multipliers, lookup tables).
    #[wasm_bindgen(getter, js_name = weightBytes)]
    pub fn weight_bytes(&self) -> usize {
        self.inner.with_model(|m| m.const_bytes())
    }

    /// RAM the model needs for activations and scratch (the arena), in bytes.
    #[wasm_bindgen(getter, js_name = arenaBytes)]
    pub fn arena_bytes(&self) -> usize {
        self.inner.with_model(|m| m.arena_len())
    }

    /// Multiply-accumulates per inference (conv, depthwise, fully connected).
    #[wasm_bindgen(getter)]
    pub fn macs(&self) -> f64 {
        self.inner.with_model(|m| (0..m.num_ops() as u32).map(|i| m.op_macs(i).unwrap_or(0)).sum::<u64>() as f64)
    }

    /// `"double"` (bit-exact with TFLite Micro) or `"single"` (with the TFLite interpreter's
    /// reference kernels).
    #[wasm_bindgen(getter)]
    pub fn rounding(&self) -> String {
        String::from(if self.inner.with_model(|m| m.single_rounding()) { "single" } else { "double" })
    }

    /// `{modelBytes, weightBytes, arenaBytes, macs}` (and `floatWeightBytes` for a model
    /// quantized here).
    #[wasm_bindgen(getter, unchecked_return_type = "ModelSizes")]
    pub fn sizes(&self) -> Object {
        let o = Object::new();
        set(&o, "modelBytes", self.model_bytes() as f64);
        set(&o, "weightBytes", self.weight_bytes() as f64);
        set(&o, "arenaBytes", self.arena_bytes() as f64);
        set(&o, "macs", self.macs());
        #[cfg(feature = "converter")]
        if let Some(r) = self.inner.extras.as_ref().and_then(|e| e.report.as_ref()) {
            set(&o, "floatWeightBytes", r.model.float_weight_bytes as f64);
        }
        o
    }

    /// The ops: `{index, op, name, macs, scratchBytes, inputs, outputs}` each.
    #[wasm_bindgen(getter, unchecked_return_type = "OpInfo[]")]
    pub fn ops(&self) -> Array {
        self.inner.with_model(|m| {
            (0..m.num_ops() as u32)
                .filter_map(|i| {
                    let op = m.op(i).ok()?;
                    let o = Object::new();
                    set(&o, "index", i);
                    set(&o, "op", op.kind.name());
                    set(&o, "name", op.name());
                    set(&o, "macs", m.op_macs(i).unwrap_or(0) as f64);
                    set(&o, "scratchBytes", op.scratch_len);
                    let ins: Vec<u32> = (0..op.num_inputs()).filter_map(|k| op.input(k).ok()).collect();
                    let outs: Vec<u32> = (0..op.num_outputs()).filter_map(|k| op.output(k).ok()).collect();
                    set(&o, "inputs", u32_array(&ins));
                    set(&o, "outputs", u32_array(&outs));
                    Some(JsValue::from(o))
                })
                .collect()
        })
    }

    /// The model's metadata entries (producer, rounding, arena...) as an object.
    #[wasm_bindgen(getter, unchecked_return_type = "Record<string, string>")]
    pub fn metadata(&self) -> Object {
        self.inner.with_model(|m| {
            let o = Object::new();
            for i in 0..m.num_meta() as u32 {
                if let Ok(e) = m.meta(i) {
                    set(&o, e.key, e.value);
                }
            }
            o
        })
    }

    /// Runs one inference. `inputs`: for a one-input model a `Float32Array` (quantized with the
    /// input's scale and zero point) or a `QTensor` with exactly the input's parameters; for
    /// several inputs, an array of those. Returns one `QTensor` per output (with its scale and
    /// zero point; `dequantize()` gives floats). Throws an `Error` naming the input and the
    /// expected shape on a size mismatch, and a `TypeError` for values of another kind.
    #[wasm_bindgen(unchecked_return_type = "QTensor[]")]
    pub fn run(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Float32Array | QTensor | (Float32Array | QTensor)[]")] inputs: JsValue,
    ) -> Result<Array, JsValue> {
        let n_in = self.inner.inputs.len();
        let list = input_list(&inputs, n_in)?;
        let mut session = self.inner.session.try_borrow_mut().map_err(|_| error("the model is already running"))?;
        let mut floats = self.inner.floats.try_borrow_mut().map_err(|_| error("the model is already running"))?;
        session.with_dependent_mut(|_, Prepared { it, plan }| -> Result<Array, JsValue> {
            for (k, v) in list.iter().enumerate() {
                let info = it.input_info(k).ctx("reading the model inputs")?;
                if let Some(p) = self.input_floats(k, v, info.dtype, &info.quant, &mut floats)? {
                    let buf = it.input_bytes(k).ctx("reading the model inputs")?;
                    let size = if p.dtype() == QuantDType::Int16 { 2 } else { 1 };
                    if buf.len() != floats.len() * size {
                        return Err(error(format!("input buffer has {} bytes for {} values", buf.len(), floats.len())));
                    }
                    quantize_into(&floats, &p, buf);
                    continue;
                }
                let data = self.input_data(k, v, info.dtype, &info.quant)?;
                let buf = it.input_bytes(k).ctx("reading the model inputs")?;
                write_data(buf, &data)?;
            }
            it.invoke_prepared(plan).ctx("running the model")?;
            let out = Array::new();
            for (k, io) in self.inner.outputs.iter().enumerate() {
                let info = it.output_info(k).ctx("reading the model outputs")?;
                let (scale, zp) = info.per_tensor().unwrap_or((1.0, 0));
                let raw = it.output_bytes(k).ctx("reading the model outputs")?;
                let data = match info.dtype {
                    ElementType::I16 => {
                        QData::I16(raw.chunks_exact(2).map(|c| i16::from_le_bytes([c[0], c[1]])).collect())
                    }
                    ElementType::I8 => QData::I8(raw.iter().map(|&b| b as i8).collect()),
                    other => {
                        return Err(error(format!(
                            "output {k} is {}: only int8 and int16 outputs are read",
                            dtype_name(other)
                        )));
                    }
                };
                let data = if io.is_identity() {
                    data
                } else {
                    let graph_shape: Vec<usize> =
                        io.perm.iter().map(|&p| io.shape.get(p).copied().unwrap_or(1)).collect();
                    let inv = inverse(&io.perm);
                    match data {
                        QData::I8(v) => QData::I8(transpose(&v, &graph_shape, &inv)),
                        QData::I16(v) => QData::I16(transpose(&v, &graph_shape, &inv)),
                    }
                };
                out.push(&QTensor::checked(data, io.shape.clone(), scale, zp)?.into());
            }
            Ok(out)
        })
    }

    /// Sets the state the model keeps between runs (an LSTM's hidden and cell states) back to
    /// zero: to start a new sequence (a new utterance of streaming audio). Without it, each run
    /// continues from the state the last one left, as on the device. A model without an LSTM
    /// keeps no state (this does nothing).
    #[wasm_bindgen(js_name = resetState)]
    pub fn reset_state(&self) -> Result<(), JsValue> {
        let mut session = self.inner.session.try_borrow_mut().map_err(|_| error("the model is already running"))?;
        session.with_dependent_mut(|_, Prepared { it, .. }| it.reset_state().ctx("resetting the state"))
    }

    /// Runs one inference and dequantizes the outputs: `Float32Array`s, one per output.
    #[wasm_bindgen(js_name = runFloat, unchecked_return_type = "Float32Array[]")]
    pub fn run_float(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Float32Array | QTensor | (Float32Array | QTensor)[]")] inputs: JsValue,
    ) -> Result<Array, JsValue> {
        let outs = self.run(inputs)?;
        outs.iter()
            .map(|t| {
                let t = QTensor::from_js(&t, "output")?;
                Ok(JsValue::from(Float32Array::from(t.dequantized().as_slice())))
            })
            .collect()
    }

    /// The `.mq` bytes (what the firmware loads).
    #[wasm_bindgen(js_name = toBytes)]
    pub fn to_bytes(&self) -> js_sys::Uint8Array {
        js_sys::Uint8Array::from(self.inner.bytes.as_slice())
    }

    /// A C header with the model as a 16-byte aligned `const uint8_t` array (and its length
    /// and arena size as macros). `name` (default: the model's name) becomes the identifier.
    #[wasm_bindgen(js_name = toCHeader)]
    pub fn to_c_header(&self, name: Option<String>) -> String {
        let name = name.unwrap_or_else(|| self.inner.name.clone());
        crate::export::c_header(&self.inner.bytes, &name, self.arena_bytes())
    }

    /// A Rust source file with the model as a 16-byte aligned `static` byte array (and its
    /// arena size), for `microquant::interp::Interpreter` on the device.
    #[wasm_bindgen(js_name = toRustSource)]
    pub fn to_rust_source(&self, name: Option<String>) -> String {
        let name = name.unwrap_or_else(|| self.inner.name.clone());
        crate::export::rust_source(&self.inner.bytes, &name, self.arena_bytes())
    }
}

fn write_data(buf: &mut [u8], data: &QData) -> Result<(), JsValue> {
    let size = match data {
        QData::I8(_) => 1,
        QData::I16(_) => 2,
    };
    if buf.len() != data.len() * size {
        return Err(error(format!("input buffer has {} bytes for {} values", buf.len(), data.len())));
    }
    match data {
        QData::I8(v) => buf.iter_mut().zip(v).for_each(|(b, &q)| *b = q as u8),
        QData::I16(v) => buf.chunks_exact_mut(2).zip(v).for_each(|(b, &q)| b.copy_from_slice(&q.to_le_bytes())),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{inverse, transpose};

    /// `transpose` against the definition (output index -> input index through the strides), for
    /// permutations that move only unit axes (the copy shortcut) and ones that reorder data.
    #[test]
    fn transpose_matches_definition() {
        let cases: &[(&[usize], &[usize])] = &[
            (&[1, 1, 8, 8], &[0, 2, 3, 1]),
            (&[1, 3, 4, 5], &[0, 2, 3, 1]),
            (&[2, 1, 3, 1], &[1, 0, 3, 2]),
            (&[2, 3, 1, 4], &[0, 2, 1, 3]),
            (&[2, 3, 4], &[2, 1, 0]),
            (&[5], &[0]),
        ];
        for &(shape, perm) in cases {
            let n: usize = shape.iter().product();
            let data: Vec<u32> = (0..n as u32).collect();
            let got = transpose(&data, shape, perm);
            let mut strides = vec![1usize; shape.len()];
            for i in (0..shape.len() - 1).rev() {
                strides[i] = strides[i + 1] * shape[i + 1];
            }
            let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
            let mut want = Vec::with_capacity(n);
            let mut idx = vec![0usize; shape.len()];
            for _ in 0..n {
                want.push(idx.iter().zip(perm).map(|(&i, &p)| i * strides[p]).sum::<usize>() as u32);
                for ax in (0..shape.len()).rev() {
                    idx[ax] += 1;
                    if idx[ax] < out_shape[ax] {
                        break;
                    }
                    idx[ax] = 0;
                }
            }
            assert_eq!(got, want, "shape {shape:?} perm {perm:?}");
            let back = transpose(&got, &out_shape, &inverse(perm));
            assert_eq!(back, data, "shape {shape:?} perm {perm:?} and back");
        }
    }
}
