//! QUANTIZE between integer types (int8 ↔ int16; the op between the int8 and 16x8 layers of a
//! mixed model), bit-exact with TFLite Micro and the TFLite interpreter's reference kernels
//! (`tests/golden/qdq/requantize.json`, `tests/gen/gen_qdq_requantize.py`): the kernel alone,
//! and a one-op graph through the compiler and the interpreter in both rounding modes (the
//! model's mode does not change QUANTIZE: both runtimes round twice there).

use microquant::compile::{CompileOptions, compile};
use microquant::graph::{DType, Graph, GraphMetadata, Node, Op, Tensor, TensorQuant};
use microquant::interp::Interpreter;
use microquant::kernels::Rounding;
use microquant::kernels::requantize::{
    IntType, RequantizeParams, requantize_s8_s8, requantize_s8_s16, requantize_s16_s8, requantize_s16_s16,
};
use microquant::kernels::tensor::PerTensorQuant;
use microquant::model::AlignedBytes;
use microquant_tests::golden::{Tensor as Golden, assert_bit_exact};
use serde::Deserialize;

#[derive(Deserialize)]
struct Case {
    name: String,
    input_scale: f32,
    input_zero_point: i32,
    output_scale: f32,
    output_zero_point: i32,
    input: Golden,
    tflm: Golden,
    tflite_ref: Golden,
}

#[derive(Deserialize)]
struct File {
    cases: Vec<Case>,
}

fn cases() -> Vec<Case> {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("golden/qdq/requantize.json");
    serde_json::from_str::<File>(&std::fs::read_to_string(path).unwrap()).unwrap().cases
}

fn int_type(t: &Golden) -> IntType {
    if t.dtype == "int8" { IntType::I8 } else { IntType::I16 }
}

/// The kernel's output widened to i32.
fn kernel(c: &Case, out_type: IntType) -> Vec<i32> {
    let it = int_type(&c.input);
    let p = RequantizeParams::prepare(
        PerTensorQuant::new(c.input_scale, c.input_zero_point),
        it,
        PerTensorQuant::new(c.output_scale, c.output_zero_point),
        out_type,
    )
    .unwrap();
    let n = c.input.len();
    match (it, out_type) {
        (IntType::I8, IntType::I16) => {
            let mut y = vec![0i16; n];
            requantize_s8_s16(&p, &c.input.i8(), &mut y).unwrap();
            y.into_iter().map(i32::from).collect()
        }
        (IntType::I16, IntType::I8) => {
            let mut y = vec![0i8; n];
            requantize_s16_s8(&p, &c.input.i16(), &mut y).unwrap();
            y.into_iter().map(i32::from).collect()
        }
        (IntType::I8, IntType::I8) => {
            let mut y = vec![0i8; n];
            requantize_s8_s8(&p, &c.input.i8(), &mut y).unwrap();
            y.into_iter().map(i32::from).collect()
        }
        (IntType::I16, IntType::I16) => {
            let mut y = vec![0i16; n];
            requantize_s16_s16(&p, &c.input.i16(), &mut y).unwrap();
            y.into_iter().map(i32::from).collect()
        }
    }
}

fn widen(t: &Golden) -> Vec<i32> {
    if t.dtype == "int8" {
        t.i8().into_iter().map(i32::from).collect()
    } else {
        t.i16().into_iter().map(i32::from).collect()
    }
}

#[test]
fn kernel_is_bit_exact_with_tflite_micro_and_tflite() {
    let cases = cases();
    assert_eq!(cases.len(), 8);
    for c in &cases {
        let ot = int_type(&c.tflm);
        // Both runtimes round twice in QUANTIZE.
        assert_bit_exact(&format!("{} (TFLite Micro)", c.name), &widen(&c.tflm), &kernel(c, ot));
        assert_bit_exact(&format!("{} (TFLite reference kernels)", c.name), &widen(&c.tflite_ref), &kernel(c, ot));
    }
}

/// A one-op graph `Quantize`, compiled to `.mq` and run by the interpreter.
#[test]
fn quantize_op_through_the_compiler_and_interpreter() {
    for c in cases() {
        let gdt = |t: &Golden| if t.dtype == "int8" { DType::I8 } else { DType::I16 };
        let n = c.input.len();
        let mut g = Graph::new(GraphMetadata::new("requantize test", &c.name));
        let x = g
            .add_tensor(
                Tensor::new("x", vec![1, n], gdt(&c.input))
                    .with_quant(TensorQuant::per_tensor(c.input_scale, c.input_zero_point)),
            )
            .unwrap();
        let y = g
            .add_tensor(
                Tensor::new("y", vec![1, n], gdt(&c.tflm))
                    .with_quant(TensorQuant::per_tensor(c.output_scale, c.output_zero_point)),
            )
            .unwrap();
        g.add_node(Node::new("q", Op::Quantize, vec![Some(x)], vec![y]));
        g.inputs.push(x);
        g.outputs.push(y);
        for (rounding, want) in [(Rounding::Double, &c.tflm), (Rounding::Single, &c.tflite_ref)] {
            let compiled = compile(&g, &CompileOptions { rounding, ..Default::default() }).unwrap();
            let bytes = AlignedBytes::new(&compiled.bytes);
            let mut arena = vec![0u8; compiled.arena_len + 16];
            let mut it = Interpreter::new(&bytes, &mut arena).unwrap();
            let input = if c.input.dtype == "int8" {
                c.input.i8().into_iter().map(|v| v as u8).collect::<Vec<u8>>()
            } else {
                c.input.i16().into_iter().flat_map(|v| v.to_le_bytes()).collect()
            };
            it.input_bytes(0).unwrap().copy_from_slice(&input);
            it.invoke().unwrap();
            let out = it.output_bytes(0).unwrap();
            let got: Vec<i32> = if want.dtype == "int8" {
                out.iter().map(|&b| i32::from(b as i8)).collect()
            } else {
                out.chunks_exact(2).map(|b| i32::from(i16::from_le_bytes([b[0], b[1]]))).collect()
            };
            assert_bit_exact(&format!("{} ({rounding:?}, interpreter)", c.name), &widen(want), &got);
        }
    }
}

/// A float input is not something the integer runtime runs: a clear compile error.
#[test]
fn float_quantize_is_a_compile_error() {
    let mut g = Graph::new(GraphMetadata::new("requantize test", "float"));
    let x = g.add_tensor(Tensor::new("x", vec![1, 4], DType::F32)).unwrap();
    let y = g.add_tensor(Tensor::new("y", vec![1, 4], DType::I8).with_quant(TensorQuant::per_tensor(0.1, 0))).unwrap();
    g.add_node(Node::new("q", Op::Quantize, vec![Some(x)], vec![y]));
    g.inputs.push(x);
    g.outputs.push(y);
    let e = compile(&g, &CompileOptions::default()).unwrap_err();
    assert!(e.to_string().contains("f32") || e.to_string().contains("float"), "{e}");
}
