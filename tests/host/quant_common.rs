//! Runners shared by the host tests (`tests/host/quant.rs`) and the wasm tests
//! (`wasm/tests/quant.rs`, which includes this file with `#[path]`): each runs one golden case
//! through microquant and compares bit for bit, returning the number of values checked or a
//! message naming the first mismatches.
#![allow(dead_code)]

use microquant::quant::{
    self, ChannelQParams, F4E2M1, F8E4M3FN, F8E5M2, I2, I4, QParams, QTensor, QTensorMut, QuantDType, QuantElement,
    QuantParams, Shape, Tensor, U2, U4,
};
use microquant::requant::{self, Rounding};
use microquant_tests::quant::{OnnxNodeCase, RawTensor, RequantCase, TfliteQuantizeCase, b64_f32, b64_ints};

/// Storage units <-> little-endian bytes.
pub trait Bytes: QuantElement {
    fn from_le(b: &[u8]) -> Vec<Self::Unit>;
    fn to_le(u: &[Self::Unit]) -> Vec<u8>;
}

macro_rules! bytes_impl {
    ($t:ty, $n:expr, $from:expr, $to:expr) => {
        impl Bytes for $t {
            fn from_le(b: &[u8]) -> Vec<Self::Unit> {
                b.chunks_exact($n).map($from).collect()
            }
            fn to_le(u: &[Self::Unit]) -> Vec<u8> {
                u.iter().flat_map($to).collect()
            }
        }
    };
}
bytes_impl!(i8, 1, |c: &[u8]| c[0] as i8, |v: &i8| v.to_le_bytes());
bytes_impl!(u8, 1, |c: &[u8]| c[0], |v: &u8| v.to_le_bytes());
bytes_impl!(i16, 2, |c: &[u8]| i16::from_le_bytes([c[0], c[1]]), |v: &i16| v.to_le_bytes());
bytes_impl!(u16, 2, |c: &[u8]| u16::from_le_bytes([c[0], c[1]]), |v: &u16| v.to_le_bytes());
bytes_impl!(i32, 4, |c: &[u8]| i32::from_le_bytes([c[0], c[1], c[2], c[3]]), |v: &i32| v.to_le_bytes());
bytes_impl!(I4, 1, |c: &[u8]| c[0], |v: &u8| v.to_le_bytes());
bytes_impl!(U4, 1, |c: &[u8]| c[0], |v: &u8| v.to_le_bytes());
bytes_impl!(I2, 1, |c: &[u8]| c[0], |v: &u8| v.to_le_bytes());
bytes_impl!(U2, 1, |c: &[u8]| c[0], |v: &u8| v.to_le_bytes());
bytes_impl!(F8E4M3FN, 1, |c: &[u8]| c[0], |v: &u8| v.to_le_bytes());
bytes_impl!(F8E5M2, 1, |c: &[u8]| c[0], |v: &u8| v.to_le_bytes());
bytes_impl!(F4E2M1, 1, |c: &[u8]| c[0], |v: &u8| v.to_le_bytes());

pub fn dtype_of(name: &str) -> QuantDType {
    match name {
        "int8" => QuantDType::Int8,
        "uint8" => QuantDType::UInt8,
        "int16" => QuantDType::Int16,
        "uint16" => QuantDType::UInt16,
        "int32" => QuantDType::Int32,
        "int4" => QuantDType::Int4,
        "uint4" => QuantDType::UInt4,
        "int2" => QuantDType::Int2,
        "uint2" => QuantDType::UInt2,
        "float8e4m3fn" => QuantDType::Float8E4M3FN,
        "float8e5m2" => QuantDType::Float8E5M2,
        "float4e2m1" => QuantDType::Float4E2M1,
        d => panic!("unknown quantized dtype {d}"),
    }
}

/// Zero-point codes of a raw tensor as `i32` (float types: their codes must be +0).
fn zero_points(t: &RawTensor) -> Vec<i32> {
    fn all<E: Bytes>(t: &RawTensor) -> Vec<i32> {
        let u = E::from_le(&t.bytes());
        (0..t.len()).map(|i| quant::element_code::<E>(&u, i).unwrap()).collect()
    }
    let dt = dtype_of(&t.dtype);
    let z = match dt {
        QuantDType::Int8 => all::<i8>(t),
        QuantDType::UInt8 => all::<u8>(t),
        QuantDType::Int16 => all::<i16>(t),
        QuantDType::UInt16 => all::<u16>(t),
        QuantDType::Int32 => all::<i32>(t),
        QuantDType::Int4 => all::<I4>(t),
        QuantDType::UInt4 => all::<U4>(t),
        QuantDType::Int2 => all::<I2>(t),
        QuantDType::UInt2 => all::<U2>(t),
        QuantDType::Float8E4M3FN => all::<F8E4M3FN>(t),
        QuantDType::Float8E5M2 => all::<F8E5M2>(t),
        QuantDType::Float4E2M1 => all::<F4E2M1>(t),
        _ => unreachable!(),
    };
    if dt.is_float() {
        assert!(z.iter().all(|&c| c == 0), "{}: float zero point must be +0", t.name);
        vec![0; z.len()]
    } else {
        z
    }
}

/// How ONNX broadcasts the scale: per tensor (one value), per axis (1-D), or blocked.
fn params<'a>(
    scales: &'a [f32],
    zps: &'a [i32],
    dtype: QuantDType,
    x_rank: usize,
    axis: i64,
    block: i64,
) -> Result<QuantParams<'a>, String> {
    if scales.len() == 1 && block == 0 {
        let z = zps.first().copied().unwrap_or(0);
        return QParams::new(scales[0], z, dtype).map(Into::into).map_err(|e| e.to_string());
    }
    let axis = if axis < 0 { axis + x_rank as i64 } else { axis } as usize;
    ChannelQParams::blocked(scales, zps, dtype, axis, block as usize).map(Into::into).map_err(|e| e.to_string())
}

fn compare(case: &str, what: &str, expected: &[u8], actual: &[u8]) -> Result<usize, String> {
    if expected.len() != actual.len() {
        return Err(format!("{case}: {what}: {} bytes expected, {} produced", expected.len(), actual.len()));
    }
    let bad: Vec<String> = (0..expected.len())
        .filter(|&i| expected[i] != actual[i])
        .take(8)
        .map(|i| format!("byte {i}: expected {:#04x}, actual {:#04x}", expected[i], actual[i]))
        .collect();
    if bad.is_empty() { Ok(expected.len()) } else { Err(format!("{case}: {what}: {}", bad.join("; "))) }
}

fn quantize_as<E: Bytes>(x: &[f32], shape: Shape, p: QuantParams<'_>) -> Result<Vec<u8>, String> {
    let mut out = vec![E::Unit::default(); E::DTYPE.storage_len(x.len())];
    let mut q = QTensorMut::<E>::new(&mut out, shape, p).map_err(|e| e.to_string())?;
    quant::quantize(&Tensor::new(x, shape).map_err(|e| e.to_string())?, &mut q).map_err(|e| e.to_string())?;
    Ok(E::to_le(&out))
}

fn dequantize_as<E: Bytes>(raw: &[u8], shape: Shape, p: QuantParams<'_>, f16: bool) -> Result<Vec<u8>, String> {
    let units = E::from_le(raw);
    let q = QTensor::<E>::new(&units, shape, p).map_err(|e| e.to_string())?;
    if f16 {
        let mut out = vec![0u16; shape.len()];
        q.dequantize_f16(&mut out).map_err(|e| e.to_string())?;
        Ok(out.iter().flat_map(|v| v.to_le_bytes()).collect())
    } else {
        let mut out = vec![0f32; shape.len()];
        q.dequantize(&mut out).map_err(|e| e.to_string())?;
        Ok(out.iter().flat_map(|v| v.to_le_bytes()).collect())
    }
}

macro_rules! by_dtype {
    ($dt:expr, $f:ident ( $($a:expr),* )) => {
        match $dt {
            QuantDType::Int8 => $f::<i8>($($a),*),
            QuantDType::UInt8 => $f::<u8>($($a),*),
            QuantDType::Int16 => $f::<i16>($($a),*),
            QuantDType::UInt16 => $f::<u16>($($a),*),
            QuantDType::Int32 => $f::<i32>($($a),*),
            QuantDType::Int4 => $f::<I4>($($a),*),
            QuantDType::UInt4 => $f::<U4>($($a),*),
            QuantDType::Int2 => $f::<I2>($($a),*),
            QuantDType::UInt2 => $f::<U2>($($a),*),
            QuantDType::Float8E4M3FN => $f::<F8E4M3FN>($($a),*),
            QuantDType::Float8E5M2 => $f::<F8E5M2>($($a),*),
            QuantDType::Float4E2M1 => $f::<F4E2M1>($($a),*),
            _ => unreachable!(),
        }
    };
}

/// Runs one ONNX backend node test case; returns the number of output bytes compared.
pub fn run_onnx_case(c: &OnnxNodeCase) -> Result<usize, String> {
    let attr = |k: &str, d: i64| c.attrs.get(k).copied().unwrap_or(d);
    match c.op.as_str() {
        "QuantizeLinear" => {
            let x = &c.inputs[0];
            let shape = Shape::new(&x.shape).map_err(|e| e.to_string())?;
            let scales = c.inputs[1].f32s();
            let out = &c.outputs[0];
            let dt = dtype_of(&out.dtype);
            let zps = c.inputs.get(2).map(zero_points).unwrap_or_default();
            let p = params(&scales, &zps, dt, x.shape.len(), attr("axis", 1), attr("block_size", 0))?;
            let got = by_dtype!(dt, quantize_as(&x.f32s(), shape, p))?;
            compare(&c.name, "y", &out.bytes(), &got)
        }
        "DequantizeLinear" => {
            let x = &c.inputs[0];
            let shape = Shape::new(&x.shape).map_err(|e| e.to_string())?;
            let scales = c.inputs[1].f32s();
            let dt = dtype_of(&x.dtype);
            let zps = c.inputs.get(2).map(zero_points).unwrap_or_default();
            let p = params(&scales, &zps, dt, x.shape.len(), attr("axis", 1), attr("block_size", 0))?;
            let out = &c.outputs[0];
            let f16 = out.dtype == "float16";
            let got = by_dtype!(dt, dequantize_as(&x.bytes(), shape, p, f16))?;
            compare(&c.name, "y", &out.bytes(), &got)
        }
        "DynamicQuantizeLinear" => {
            let x = c.inputs[0].f32s();
            let mut y = vec![0u8; x.len()];
            let p = quant::dynamic_quantize_linear(&x, &mut y).map_err(|e| e.to_string())?;
            let mut n = compare(&c.name, "y", &c.outputs[0].bytes(), &y)?;
            n += compare(&c.name, "y_scale", &c.outputs[1].bytes(), &p.scale().to_le_bytes())?;
            n += compare(&c.name, "y_zero_point", &c.outputs[2].bytes(), &[p.zero_point() as u8])?;
            Ok(n)
        }
        op => Err(format!("{}: unexpected op {op}", c.name)),
    }
}

/// Runs one TFLite QUANTIZE case (float input: TFLite convention, ties away from zero; integer
/// input: integer requantization, double rounding); returns the number of values compared.
pub fn run_tflite_case(c: &TfliteQuantizeCase) -> Result<usize, String> {
    let n = c.n;
    let shape = Shape::vector(n);
    let expected = b64_ints(&c.y, &c.out_dtype);
    let out_dt = dtype_of(&c.out_dtype);
    let pout = QParams::new(c.out_scale, c.out_zero_point, out_dt)
        .map_err(|e| e.to_string())?
        .with_convention(quant::Convention::TfLite);
    fn quantize_f32<E: Bytes>(x: &[f32], p: QParams) -> Result<Vec<i32>, String> {
        let mut out = vec![E::Unit::default(); x.len()];
        let mut q = QTensorMut::<E>::new(&mut out, Shape::vector(x.len()), p.into()).map_err(|e| e.to_string())?;
        quant::quantize(&Tensor::from_slice(x), &mut q).map_err(|e| e.to_string())?;
        Ok((0..x.len()).map(|i| quant::element_code::<E>(&out, i).unwrap()).collect())
    }
    fn requant<A: Bytes, B: Bytes>(x: &[i32], pin: QParams, pout: QParams) -> Result<Vec<i32>, String> {
        let mut units = vec![A::Unit::default(); x.len()];
        for (i, &v) in x.iter().enumerate() {
            quant::set_element_code::<A>(&mut units, i, v);
        }
        let input = QTensor::<A>::new(&units, Shape::vector(x.len()), pin.into()).map_err(|e| e.to_string())?;
        let mut out = vec![B::Unit::default(); x.len()];
        let mut q = QTensorMut::<B>::new(&mut out, Shape::vector(x.len()), pout.into()).map_err(|e| e.to_string())?;
        quant::requantize(&input, &mut q, Rounding::Double).map_err(|e| e.to_string())?;
        Ok((0..x.len()).map(|i| quant::element_code::<B>(&out, i).unwrap()).collect())
    }
    let got = if c.in_dtype == "float32" {
        let x = b64_f32(&c.x);
        match out_dt {
            QuantDType::Int8 => quantize_f32::<i8>(&x, pout)?,
            QuantDType::UInt8 => quantize_f32::<u8>(&x, pout)?,
            QuantDType::Int16 => quantize_f32::<i16>(&x, pout)?,
            d => return Err(format!("{}: unexpected output {d:?}", c.name)),
        }
    } else {
        let x = b64_ints(&c.x, &c.in_dtype);
        let in_dt = dtype_of(&c.in_dtype);
        let pin = QParams::new(c.in_scale.unwrap(), c.in_zero_point.unwrap(), in_dt).map_err(|e| e.to_string())?;
        match (in_dt, out_dt) {
            (QuantDType::Int8, QuantDType::Int8) => requant::<i8, i8>(&x, pin, pout)?,
            (QuantDType::Int8, QuantDType::UInt8) => requant::<i8, u8>(&x, pin, pout)?,
            (QuantDType::UInt8, QuantDType::Int8) => requant::<u8, i8>(&x, pin, pout)?,
            (QuantDType::UInt8, QuantDType::UInt8) => requant::<u8, u8>(&x, pin, pout)?,
            (QuantDType::Int16, QuantDType::Int16) => requant::<i16, i16>(&x, pin, pout)?,
            (QuantDType::Int16, QuantDType::Int8) => requant::<i16, i8>(&x, pin, pout)?,
            (QuantDType::Int8, QuantDType::Int16) => requant::<i8, i16>(&x, pin, pout)?,
            (a, b) => return Err(format!("{}: unexpected pair {a:?} -> {b:?}", c.name)),
        }
    };
    let _ = shape;
    let bad: Vec<String> = (0..n)
        .filter(|&i| got[i] != expected[i])
        .take(8)
        .map(|i| format!("[{i}] expected {}, actual {}", expected[i], got[i]))
        .collect();
    if bad.is_empty() { Ok(n) } else { Err(format!("{}: {}", c.name, bad.join("; "))) }
}

/// Checks one requantization case in both roundings; returns the number of results compared.
pub fn run_requant_case(&(x, m, shift, double, single): &RequantCase) -> Result<usize, String> {
    let d = requant::multiply_by_quantized_multiplier(x, m, shift);
    if d != double {
        return Err(format!("double x={x} m={m} shift={shift}: expected {double}, actual {d}"));
    }
    let mut n = 1;
    if let Some(s) = single {
        let g = requant::multiply_by_quantized_multiplier_single(x, m, shift);
        if g != s {
            return Err(format!("single x={x} m={m} shift={shift}: expected {s}, actual {g}"));
        }
        n += 1;
    }
    Ok(n)
}
