//! `QTensor`: quantized data is its own class. Float arrays and quantized tensors are never
//! mixed up: APIs taking floats throw a `TypeError` when given a `QTensor`, and going back to
//! floats is the explicit [`QTensor::dequantize`].

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use js_sys::{Float32Array, Int8Array, Int16Array};
use microquant::quant::{Convention, QParams, QuantDType};
use wasm_bindgen::prelude::*;

use crate::error::{range_error, type_error};
use crate::js::{describe, shape, shape_text, usize_array};

/// Quantized integer data.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum QData {
    /// int8 values.
    I8(Vec<i8>),
    /// int16 values.
    I16(Vec<i16>),
}

impl QData {
    pub(crate) fn len(&self) -> usize {
        match self {
            QData::I8(v) => v.len(),
            QData::I16(v) => v.len(),
        }
    }
    pub(crate) fn dtype(&self) -> &'static str {
        match self {
            QData::I8(_) => "int8",
            QData::I16(_) => "int16",
        }
    }
}

/// A quantized tensor: integer data with its shape, scale and zero point
/// (`real = scale · (q - zeroPoint)`), per tensor.
#[wasm_bindgen]
#[derive(Debug, Clone)]
pub struct QTensor {
    pub(crate) data: QData,
    pub(crate) shape: Vec<usize>,
    pub(crate) scale: f32,
    pub(crate) zero_point: i32,
}

pub(crate) fn qparams(scale: f64, zero_point: f64, dtype: QuantDType) -> Result<QParams, JsValue> {
    if zero_point.fract() != 0.0 || !zero_point.is_finite() {
        return Err(range_error(format!("zeroPoint must be an integer, got {zero_point}")));
    }
    let zp = zero_point.max(f64::from(i32::MIN)).min(f64::from(i32::MAX)) as i32;
    QParams::new(scale as f32, zp, dtype)
        .map(|p| p.with_convention(Convention::TfLite))
        .map_err(|e| range_error(format!("{e}")))
}

fn dtype_of(name: &str) -> Result<QuantDType, JsValue> {
    match name {
        "int8" => Ok(QuantDType::Int8),
        "int16" => Ok(QuantDType::Int16),
        other => Err(range_error(format!("dtype must be \"int8\" or \"int16\", got {other:?}"))),
    }
}

/// Quantizes `x` with `p` (TFLite's rounding: half away from zero, saturating).
pub(crate) fn quantize_values(x: &[f32], p: &QParams) -> Result<QData, JsValue> {
    check_finite(x)?;
    if p.convention() == Convention::TfLite {
        let q = TfLiteQuantizer::new(p);
        match p.dtype() {
            QuantDType::Int16 => return Ok(QData::I16(x.iter().map(|&v| q.quantize(v) as i16).collect())),
            QuantDType::Int8 => return Ok(QData::I8(x.iter().map(|&v| q.quantize(v) as i8).collect())),
            _ => {}
        }
    }
    Ok(match p.dtype() {
        QuantDType::Int16 => QData::I16(x.iter().map(|&v| p.quantize_one(v) as i16).collect()),
        _ => QData::I8(x.iter().map(|&v| p.quantize_one(v) as i8).collect()),
    })
}

/// The `RangeError` [`quantize_values`] throws for the first NaN or infinite value.
pub(crate) fn check_finite(x: &[f32]) -> Result<(), JsValue> {
    match x.iter().position(|v| !v.is_finite()) {
        Some(i) => Err(range_error(format!("value {i} is {} (only finite values can be quantized)", x[i]))),
        None => Ok(()),
    }
}

/// [`quantize_values`] for finite `x` (see [`check_finite`]) written straight into `out` as
/// little-endian bytes of `p`'s type (int8 or int16; one value per `out` element of that size),
/// without the intermediate vector: the same values.
pub(crate) fn quantize_into(x: &[f32], p: &QParams, out: &mut [u8]) {
    let i16_into = |out: &mut [u8], f: &dyn Fn(f32) -> i32| {
        out.chunks_exact_mut(2).zip(x).for_each(|(b, &v)| b.copy_from_slice(&(f(v) as i16).to_le_bytes()))
    };
    let tflite = p.convention() == Convention::TfLite;
    let q = TfLiteQuantizer::new(p);
    match p.dtype() {
        QuantDType::Int8 if tflite => out.iter_mut().zip(x).for_each(|(b, &v)| *b = q.quantize(v) as i8 as u8),
        QuantDType::Int16 if tflite => i16_into(out, &|v| q.quantize(v)),
        QuantDType::Int16 => i16_into(out, &|v| p.quantize_one(v)),
        _ => out.iter_mut().zip(x).for_each(|(b, &v)| *b = p.quantize_one(v) as i8 as u8),
    }
}

/// [`QParams::quantize_one`] for the TFLite convention and an integer type, prepared once per
/// tensor (`quantize_one` prepares its constants per value and rounds with a software
/// `roundf`): `clamp(round(x / scale)) + zero_point` with the float clamp to `[qmin - zp, qmax -
/// zp]` first, rounding half away from zero as `trunc(t)` plus the sign of `t` when `|t -
/// trunc(t)| >= 0.5` (the difference is exact; wasm has `f32.trunc`). The same value for every
/// finite `x` (callers reject the others).
struct TfLiteQuantizer {
    scale: f32,
    lo: f32,
    hi: f32,
    zp: i32,
}

impl TfLiteQuantizer {
    fn new(p: &QParams) -> Self {
        let zp = p.zero_point();
        Self {
            scale: p.scale(),
            lo: (i64::from(p.qmin()) - i64::from(zp)) as f32,
            hi: (i64::from(p.qmax()) - i64::from(zp)) as f32,
            zp,
        }
    }

    #[inline(always)]
    fn quantize(&self, x: f32) -> i32 {
        let t = x / self.scale;
        let whole = t.trunc();
        let r = if (t - whole).abs() >= 0.5 { whole + 1f32.copysign(t) } else { whole };
        // `lo` and `hi` are integers of the type's range shifted by the zero point: exact in f32
        // for int8 and int16, so the clamped value converts exactly.
        (r.max(self.lo).min(self.hi) as i32).wrapping_add(self.zp)
    }
}

impl QTensor {
    pub(crate) fn checked(data: QData, shape: Vec<usize>, scale: f32, zero_point: i32) -> Result<Self, JsValue> {
        let n: usize = shape.iter().product();
        if n != data.len() {
            return Err(range_error(format!(
                "shape {} has {n} elements but the data has {}",
                shape_text(&shape),
                data.len()
            )));
        }
        Ok(Self { data, shape, scale, zero_point })
    }

    /// The values as `f32`: `scale · (q - zeroPoint)`.
    pub(crate) fn dequantized(&self) -> Vec<f32> {
        let d = |q: i32| ((q as i64 - self.zero_point as i64) as f64 * f64::from(self.scale)) as f32;
        match &self.data {
            QData::I8(v) => v.iter().map(|&q| d(q.into())).collect(),
            QData::I16(v) => v.iter().map(|&q| d(q.into())).collect(),
        }
    }

    /// Reads a `QTensor` passed from JS (through its getters, so it also works for a tensor made
    /// by another instance of the module, e.g. in a worker).
    pub(crate) fn from_js(v: &JsValue, what: &str) -> Result<Self, JsValue> {
        if !crate::js::is_qtensor(v) {
            return Err(type_error(format!("{what} must be a QTensor, got {}", describe(v))));
        }
        let data = crate::js::get(v, "data");
        let data = if let Some(a) = data.dyn_ref::<Int8Array>() {
            QData::I8(a.to_vec())
        } else if let Some(a) = data.dyn_ref::<Int16Array>() {
            QData::I16(a.to_vec())
        } else {
            return Err(type_error(format!("{what}.data must be an Int8Array or Int16Array, got {}", describe(&data))));
        };
        let s = shape(&crate::js::get(v, "shape"), &format!("{what}.shape"))?;
        let scale = crate::js::get(v, "scale").as_f64().unwrap_or(f64::NAN);
        let zp = crate::js::get(v, "zeroPoint").as_f64().unwrap_or(f64::NAN);
        let p = qparams(scale, zp, if matches!(data, QData::I16(_)) { QuantDType::Int16 } else { QuantDType::Int8 })?;
        Self::checked(data, s, p.scale(), p.zero_point())
    }
}

#[wasm_bindgen]
impl QTensor {
    /// A quantized tensor from integer data (`Int8Array` or `Int16Array`), its shape, scale and
    /// zero point. Throws a `TypeError` for other data and a `RangeError` for a scale that is
    /// not finite and positive, a zero point outside the type's range, or a shape whose element
    /// count is not the data's length.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "Int8Array | Int16Array")] data: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number[]", js_name = shape)] shape_: JsValue,
        scale: f64,
        #[wasm_bindgen(js_name = zeroPoint)] zero_point: f64,
    ) -> Result<QTensor, JsValue> {
        let (data, dtype) = if let Some(a) = data.dyn_ref::<Int8Array>() {
            (QData::I8(a.to_vec()), QuantDType::Int8)
        } else if let Some(a) = data.dyn_ref::<Int16Array>() {
            (QData::I16(a.to_vec()), QuantDType::Int16)
        } else {
            return Err(type_error(format!(
                "QTensor data must be an Int8Array or an Int16Array, got {} (use QTensor.fromFloat to quantize floats)",
                describe(&data)
            )));
        };
        let p = qparams(scale, zero_point, dtype)?;
        Self::checked(data, shape(&shape_, "shape")?, p.scale(), p.zero_point())
    }

    /// Quantizes float values: `clamp(round(x / scale) + zeroPoint)`, rounding half away from
    /// zero as TFLite (and the int8 runtime's inputs) do. `dtype` is `"int8"` (default) or
    /// `"int16"`. Throws a `RangeError` for NaN or infinite values.
    #[wasm_bindgen(js_name = fromFloat)]
    pub fn from_float(
        #[wasm_bindgen(unchecked_param_type = "Float32Array")] x: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number[]", js_name = shape)] shape_: JsValue,
        scale: f64,
        #[wasm_bindgen(js_name = zeroPoint)] zero_point: f64,
        dtype: Option<String>,
    ) -> Result<QTensor, JsValue> {
        let values = float_array(&x, "x")?;
        let p = qparams(scale, zero_point, dtype_of(dtype.as_deref().unwrap_or("int8"))?)?;
        let data = quantize_values(&values, &p)?;
        Self::checked(data, shape(&shape_, "shape")?, p.scale(), p.zero_point())
    }

    /// The integer data (a copy): an `Int8Array` or an `Int16Array`.
    #[wasm_bindgen(getter, unchecked_return_type = "Int8Array | Int16Array")]
    pub fn data(&self) -> JsValue {
        match &self.data {
            QData::I8(v) => Int8Array::from(v.as_slice()).into(),
            QData::I16(v) => Int16Array::from(v.as_slice()).into(),
        }
    }

    /// The shape.
    #[wasm_bindgen(getter, unchecked_return_type = "number[]")]
    pub fn shape(&self) -> js_sys::Array {
        usize_array(&self.shape)
    }

    /// The scale.
    #[wasm_bindgen(getter)]
    pub fn scale(&self) -> f32 {
        self.scale
    }

    /// The zero point.
    #[wasm_bindgen(getter, js_name = zeroPoint)]
    pub fn zero_point(&self) -> i32 {
        self.zero_point
    }

    /// `"int8"` or `"int16"`.
    #[wasm_bindgen(getter, unchecked_return_type = "\"int8\" | \"int16\"")]
    pub fn dtype(&self) -> String {
        String::from(self.data.dtype())
    }

    /// Number of elements.
    #[wasm_bindgen(getter)]
    pub fn length(&self) -> usize {
        self.data.len()
    }

    /// The real values, `scale · (q - zeroPoint)`, as a new `Float32Array`.
    pub fn dequantize(&self) -> Float32Array {
        Float32Array::from(self.dequantized().as_slice())
    }

    /// Marks quantized tensors for the type checks of the float APIs.
    #[wasm_bindgen(getter, js_name = __microquantQTensor, skip_typescript)]
    pub fn marker(&self) -> bool {
        true
    }

    /// `QTensor(int8 [1, 10], scale 0.00390625, zeroPoint -128)`.
    #[wasm_bindgen(js_name = toString)]
    pub fn to_string_js(&self) -> String {
        format!(
            "QTensor({} {}, scale {}, zeroPoint {})",
            self.data.dtype(),
            shape_text(&self.shape),
            self.scale,
            self.zero_point
        )
    }
}

/// The values of a `Float32Array` (or a plain array of numbers); a `QTensor` or an integer typed
/// array is a `TypeError` that says what to do.
pub(crate) fn float_array(v: &JsValue, what: &str) -> Result<Vec<f32>, JsValue> {
    if let Some(a) = v.dyn_ref::<Float32Array>() {
        return Ok(a.to_vec());
    }
    if crate::js::is_qtensor(v) {
        return Err(type_error(format!(
            "{what} must be float data (a Float32Array), got a QTensor: call .dequantize() to get its real values"
        )));
    }
    if let Some(a) = v.dyn_ref::<js_sys::Float64Array>() {
        return Ok(a.to_vec().into_iter().map(|x| x as f32).collect());
    }
    if js_sys::Array::is_array(v) {
        let arr = js_sys::Array::from(v);
        return arr
            .iter()
            .enumerate()
            .map(|(i, x)| {
                x.as_f64()
                    .map(|f| f as f32)
                    .ok_or_else(|| type_error(format!("{what}[{i}] must be a number, got {}", describe(&x))))
            })
            .collect();
    }
    Err(type_error(format!("{what} must be a Float32Array, got {}", describe(v))))
}
