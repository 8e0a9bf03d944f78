//! A float model as the converter holds it (`FloatGraph`): the prepared graph, the layout of its
//! inputs and outputs, and samples from JS turned into the graph's layout.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use js_sys::{Array, Float32Array, Object, Uint8Array};
use microquant::float::FloatExecutor;
use microquant::graph::{DType, Graph};
use microquant::ptq::{CleOptions, CleReport, equalize, prepare};
use wasm_bindgen::prelude::*;

use crate::error::{Context, error, type_error};
use crate::js::{describe, set, shape_text, usize_array};
use crate::runtime::{Io, inverse, transpose};
use crate::tensor::float_array;

/// A float model and how callers lay out its data.
pub(crate) struct FloatGraph {
    /// The prepared float graph (optimized, ready for calibration).
    pub(crate) graph: Graph,
    pub(crate) inputs: Vec<Io>,
    pub(crate) outputs: Vec<Io>,
    pub(crate) format: &'static str,
    pub(crate) name: String,
    /// Bytes of float constants before preparation.
    pub(crate) source_weight_bytes: usize,
    /// What cross-layer equalization did, for a model made by [`FloatGraph::equalized`].
    pub(crate) cle: Option<CleReport>,
}

fn identity_io(g: &Graph, ids: &[microquant::graph::TensorId]) -> Vec<Io> {
    ids.iter()
        .map(|&t| {
            let tensor = g.tensor(t);
            let shape = tensor.map(|t| t.shape.clone()).unwrap_or_default();
            Io { name: tensor.map(|t| t.name.clone()).unwrap_or_default(), perm: (0..shape.len()).collect(), shape }
        })
        .collect()
}

/// `Io`s as the ONNX importer's `IoInfo`s.
pub(crate) fn io_infos(io: &[Io]) -> Vec<microquant::onnx::IoInfo> {
    io.iter()
        .map(|i| microquant::onnx::IoInfo { name: i.name.clone(), model_shape: i.shape.clone(), perm: i.perm.clone() })
        .collect()
}

impl FloatGraph {
    /// A float graph from the ONNX importer (IO layouts from its `IoInfo`) or the TFLite one.
    pub(crate) fn new(
        mut graph: Graph,
        io: Option<(Vec<Io>, Vec<Io>)>,
        format: &'static str,
        name: String,
    ) -> Result<Self, JsValue> {
        let source_weight_bytes = graph.constant_totals().bytes;
        let (inputs, outputs) =
            io.unwrap_or_else(|| (identity_io(&graph, &graph.inputs), identity_io(&graph, &graph.outputs)));
        prepare(&mut graph).ctx("preparing the model for quantization")?;
        FloatExecutor::new(&graph).ctx("the float model cannot run")?;
        Ok(Self { graph, inputs, outputs, format, name, source_weight_bytes, cle: None })
    }

    /// The same model with its layers equalized (`microquant::ptq::equalize`).
    pub(crate) fn equalized(&self, options: &CleOptions) -> Result<Self, JsValue> {
        let mut graph = self.graph.clone();
        let report = equalize(&mut graph, options).ctx("cross-layer equalization")?;
        Ok(Self {
            graph,
            inputs: self.inputs.clone(),
            outputs: self.outputs.clone(),
            format: self.format,
            name: self.name.clone(),
            source_weight_bytes: self.source_weight_bytes,
            cle: Some(report),
        })
    }

    /// Runs `ex` (this model's float executor, or a hybrid form's): `inputs` is a
    /// `Float32Array` (one input) or an array of them, in the model's layout; one
    /// `Float32Array` per output. A `QTensor` is a `TypeError` (call `dequantize()` first).
    pub(crate) fn run_with(&self, ex: &FloatExecutor<'_>, inputs: &JsValue) -> Result<Array, JsValue> {
        let g = self;
        let list = crate::runtime::input_list(inputs, g.inputs.len())?;
        let mut data = Vec::with_capacity(list.len());
        for (k, v) in list.iter().enumerate() {
            let io = &g.inputs[k];
            let x = float_array(v, &format!("input {k} '{}'", io.name))?;
            let n: usize = io.shape.iter().product();
            if x.len() != n {
                return Err(error(format!(
                    "input {k} '{}' has shape {} ({n} values), got {} values",
                    io.name,
                    shape_text(&io.shape),
                    x.len()
                )));
            }
            data.push(g.to_graph(k, x));
        }
        let refs: Vec<&[f32]> = data.iter().map(Vec::as_slice).collect();
        let outs = ex.run(&refs).ctx("running the float model")?;
        Ok(outs
            .into_iter()
            .zip(&g.outputs)
            .map(|(y, io)| {
                let y = if io.perm.iter().enumerate().all(|(i, &p)| i == p) {
                    y
                } else {
                    let graph_shape: Vec<usize> =
                        io.perm.iter().map(|&p| io.shape.get(p).copied().unwrap_or(1)).collect();
                    transpose(&y, &graph_shape, &inverse(&io.perm))
                };
                JsValue::from(Float32Array::from(y.as_slice()))
            })
            .collect())
    }

    /// The importer's `IoInfo`s (what the QDQ export lays out its inputs and outputs by).
    pub(crate) fn io_infos(&self, outputs: bool) -> Vec<microquant::onnx::IoInfo> {
        io_infos(if outputs { &self.outputs } else { &self.inputs })
    }

    fn per_sample(&self) -> Vec<usize> {
        self.inputs.iter().map(|io| io.shape.iter().product()).collect()
    }

    /// One input's data in the graph's layout.
    fn to_graph(&self, k: usize, data: Vec<f32>) -> Vec<f32> {
        match self.inputs.get(k) {
            Some(io) if !io.perm.iter().enumerate().all(|(i, &p)| i == p) => transpose(&data, &io.shape, &io.perm),
            _ => data,
        }
    }

    /// Samples from JS: `.npy` bytes, a `Float32Array` holding one or more samples back to back,
    /// an array of `Float32Array`s (one sample each), or for several inputs an array of arrays.
    /// Data is in the source model's layout; the result is in the graph's.
    pub(crate) fn samples(&self, v: &JsValue, what: &str) -> Result<Vec<Vec<Vec<f32>>>, JsValue> {
        let per = self.per_sample();
        let n_in = per.len();
        let first = self.inputs.first().map(|io| (io.name.clone(), io.shape.clone())).unwrap_or_default();
        let split = |data: Vec<f32>, origin: &str| -> Result<Vec<Vec<Vec<f32>>>, JsValue> {
            if n_in != 1 {
                return Err(type_error(format!(
                    "{what}: the model has {n_in} inputs; pass an array of samples, each an array of {n_in} Float32Arrays"
                )));
            }
            let p = per[0];
            if p == 0 || !data.len().is_multiple_of(p) || data.is_empty() {
                return Err(error(format!(
                    "{what}: {origin} has {} values, not a whole number of samples of input '{}' (shape {}, {p} values each)",
                    data.len(),
                    first.0,
                    shape_text(&first.1)
                )));
            }
            Ok(data.chunks_exact(p).map(|c| vec![self.to_graph(0, c.to_vec())]).collect())
        };
        if let Some(b) = v.dyn_ref::<Uint8Array>() {
            let bytes = b.to_vec();
            if !crate::npy::is_npy(&bytes) {
                return Err(type_error(format!(
                    "{what}: a Uint8Array must hold an .npy file (it does not start with \\x93NUMPY); pass float samples as Float32Array"
                )));
            }
            let a = crate::npy::parse(&bytes, "samples .npy").map_err(error)?;
            let p = per.first().copied().unwrap_or(0);
            let tail: usize = a.shape.iter().skip(1).product();
            let whole: usize = a.shape.iter().product();
            if n_in == 1 && !(tail == p || whole == p) {
                return Err(error(format!(
                    "{what}: the .npy has shape {} ({}), input '{}' has shape {}: expected [N, ...] with {p} values per sample",
                    shape_text(&a.shape),
                    a.descr,
                    first.0,
                    shape_text(&first.1)
                )));
            }
            return split(a.data, "the .npy");
        }
        if v.dyn_ref::<js_sys::ArrayBuffer>().is_some() {
            return self.samples(&Uint8Array::new(v).into(), what);
        }
        if Array::is_array(v) {
            let arr = Array::from(v);
            if arr.length() == 0 {
                return Err(error(format!("{what}: no samples")));
            }
            let mut out = Vec::with_capacity(arr.length() as usize);
            for (i, s) in arr.iter().enumerate() {
                let inputs: Vec<JsValue> = if n_in > 1 {
                    if !Array::is_array(&s) {
                        return Err(type_error(format!(
                            "{what}[{i}] must be an array of {n_in} Float32Arrays (one per input), got {}",
                            describe(&s)
                        )));
                    }
                    Array::from(&s).iter().collect()
                } else if Array::is_array(&s) && Array::from(&s).iter().all(|x| x.is_object()) {
                    Array::from(&s).iter().collect()
                } else {
                    vec![s]
                };
                if inputs.len() != n_in {
                    return Err(error(format!("{what}[{i}] has {} inputs, the model has {n_in}", inputs.len())));
                }
                let mut sample = Vec::with_capacity(n_in);
                for (k, x) in inputs.iter().enumerate() {
                    let data = float_array(x, &format!("{what}[{i}]"))?;
                    let io = &self.inputs[k];
                    if data.len() != per[k] {
                        return Err(error(format!(
                            "{what}[{i}]: input {k} '{}' has shape {} ({} values), got {} values",
                            io.name,
                            shape_text(&io.shape),
                            per[k],
                            data.len()
                        )));
                    }
                    sample.push(self.to_graph(k, data));
                }
                out.push(sample);
            }
            return Ok(out);
        }
        let data = float_array(v, what)?;
        split(data, "the Float32Array")
    }
}

/// The float inputs or outputs of a model as `TensorInfo`s.
pub(super) fn io_info_list(ios: &[Io]) -> Array {
    ios.iter().map(|io| JsValue::from(io_info(io, "float32"))).collect()
}

fn io_info(io: &Io, dtype: &str) -> Object {
    let o = Object::new();
    set(&o, "name", io.name.as_str());
    set(&o, "shape", usize_array(&io.shape));
    set(&o, "dtype", dtype);
    o
}

/// A float graph is float if its activations are float (a TFLite model with int8 activations
/// is an already-quantized model).
pub(crate) fn is_quantized(g: &Graph) -> bool {
    g.tensors.iter().any(|t| !t.is_constant() && matches!(t.dtype, DType::I8 | DType::I16))
}
