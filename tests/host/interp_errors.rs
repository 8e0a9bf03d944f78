//! The interpreter refuses what it cannot run, at load, with a typed error: arena too small
//! (with the size needed), unsupported op kinds, ops with the wrong number of inputs, parameter
//! blocks that do not match the tensors.

use microquant::Error;
use microquant::compile::{CompileOptions, compile};
use microquant::interp::Interpreter;
use microquant::model::{AlignedBytes, DType, ModelBuilder, OpKind, OpSpec, TensorSpec};

fn kws() -> Vec<u8> {
    let tflite = std::fs::read(microquant_tests::models::mlperf_tiny_dir().join("kws_ref_model_int8.tflite")).unwrap();
    compile(&microquant::tflite::import(&tflite).unwrap(), &CompileOptions::default()).unwrap().bytes
}

#[test]
fn arena_one_byte_too_small() {
    let bytes = AlignedBytes::new(&kws());
    let needed = microquant::model::Model::parse(&bytes).unwrap().arena_len();
    // A 16-byte aligned buffer, one byte short.
    let mut words = vec![0u128; needed / 16 + 1];
    let arena: &mut [u8] = bytemuck_bytes(&mut words);
    let short = &mut arena[..needed - 1];
    match Interpreter::new(&bytes, short) {
        Err(Error::ArenaTooSmall { needed: n, available }) => {
            assert_eq!((n, available), (needed, needed - 1));
        }
        other => panic!("expected ArenaTooSmall, got {:?}", other.err()),
    }
    let exact = &mut bytemuck_bytes(&mut words)[..needed];
    assert!(Interpreter::new(&bytes, exact).is_ok());
}

fn bytemuck_bytes(w: &mut [u128]) -> &mut [u8] {
    bytemuck::cast_slice_mut(w)
}

fn one_op(kind: OpKind, inputs: usize, params: Vec<u32>) -> Vec<u8> {
    let mut b = ModelBuilder::new();
    let x = b.add_tensor(TensorSpec::activation("x", DType::I8, &[1, 4]).per_tensor(0.5, 0));
    let y = b.add_tensor(TensorSpec::activation("y", DType::I8, &[1, 4]).per_tensor(0.5, 0));
    b.add_op(OpSpec {
        kind,
        name: "op".into(),
        inputs: vec![Some(x); inputs],
        outputs: vec![y],
        params,
        in_place: false,
        scratch_len: 0,
    });
    b.set_io(&[x], &[y]);
    b.set_arena_offsets(&[(x, 0), (y, 16)], 32);
    b.finish().unwrap()
}

#[test]
fn unsupported_op_kind_is_named() {
    let bytes = AlignedBytes::new(&one_op(OpKind::Dequantize, 1, vec![]));
    let mut arena = vec![0u8; 64];
    let e = Interpreter::new(&bytes, &mut arena).err().unwrap();
    assert_eq!(e, Error::UnsupportedOp { index: 0, code: OpKind::Dequantize.code() });
}

#[test]
fn wrong_number_of_inputs() {
    let bytes = AlignedBytes::new(&one_op(OpKind::Softmax, 2, vec![0, 0, 0]));
    let mut arena = vec![0u8; 64];
    let e = Interpreter::new(&bytes, &mut arena).err().unwrap();
    assert!(matches!(e, Error::BadOp { index: 0, reason } if reason.contains("number of inputs")), "{e:?}");
}

#[test]
fn short_parameter_block() {
    let bytes = AlignedBytes::new(&one_op(OpKind::Softmax, 1, vec![1]));
    let mut arena = vec![0u8; 64];
    let e = Interpreter::new(&bytes, &mut arena).err().unwrap();
    assert!(matches!(e, Error::BadOp { index: 0, reason: "parameter block too short" }), "{e:?}");
}

#[test]
fn reshape_runs_and_copies() {
    let bytes = AlignedBytes::new(&one_op(OpKind::Reshape, 1, vec![]));
    let mut arena = vec![0u8; 64];
    let mut it = Interpreter::new(&bytes, &mut arena).unwrap();
    it.input_i8(0).unwrap().copy_from_slice(&[1, -2, 3, -4]);
    it.invoke().unwrap();
    assert_eq!(it.output_i8(0).unwrap(), &[1, -2, 3, -4]);
}

#[test]
fn reshape_runs_and_copies_from_a_plan() {
    let bytes = AlignedBytes::new(&one_op(OpKind::Reshape, 1, vec![]));
    let mut arena = vec![0u8; 64];
    let mut it = Interpreter::new(&bytes, &mut arena).unwrap();
    let plan = [it.prepare_op(0).unwrap()];
    it.input_i8(0).unwrap().copy_from_slice(&[5, -6, 7, -8]);
    it.invoke_prepared(&plan).unwrap();
    assert_eq!(it.output_i8(0).unwrap(), &[5, -6, 7, -8]);
}

/// A prepared plan runs only with its own model, whole and in order; each misuse has its error.
#[test]
fn a_plan_of_another_model_or_out_of_order_is_refused() {
    let kws = kws();
    let (a, b) = (AlignedBytes::new(&kws), AlignedBytes::new(&kws));
    let n = microquant::model::Model::parse(&a).unwrap().arena_len() + 16;
    let (mut arena_a, mut arena_b) = (vec![0u8; n], vec![0u8; n]);
    let mut it = Interpreter::new(&a, &mut arena_a).unwrap();
    let other = Interpreter::new(&b, &mut arena_b).unwrap();
    let ops = it.model().num_ops();
    assert!(matches!(it.prepare_op(ops), Err(Error::BadIndex { what: "op", .. })));

    let plan: Vec<_> = (0..ops).map(|i| it.prepare_op(i).unwrap()).collect();
    let e = it.invoke_prepared(&plan[..ops - 1]).unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument { reason: "a plan needs one prepared op per op of the model" }),
        "{e:?}"
    );

    // The same bytes at another address are another model.
    let foreign: Vec<_> = (0..ops).map(|i| other.prepare_op(i).unwrap()).collect();
    let e = it.invoke_prepared(&foreign).unwrap_err();
    assert!(matches!(e, Error::BadOp { index: 0, reason: "prepared from another model" }), "{e:?}");

    let mut swapped: Vec<_> = (0..ops).map(|i| it.prepare_op(i).unwrap()).collect();
    swapped.swap(1, 2);
    let e = it.invoke_prepared(&swapped).unwrap_err();
    assert!(matches!(e, Error::BadOp { index: 2, reason: "prepared op out of place in the plan" }), "{e:?}");

    it.invoke_prepared(&plan).unwrap();
}
