//! The interpreter refuses what it cannot run, at load, with a typed error: arena too small
//! (with the size needed), unsupported op kinds, ops with the wrong number of inputs, parameter
//! blocks that do not match the tensors, arena plans in which an op would write over what it
//! reads.

use microquant::Error;
use microquant::compile::{CompileOptions, compile};
use microquant::interp::Interpreter;
use microquant::model::{AlignedBytes, ElementType, ModelBuilder, OpKind, OpSpec, TensorSpec};

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
    let x = b.add_tensor(TensorSpec::activation("x", ElementType::I8, &[1, 4]).per_tensor(0.5, 0));
    let y = b.add_tensor(TensorSpec::activation("y", ElementType::I8, &[1, 4]).per_tensor(0.5, 0));
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

/// SOFTMAX words: a multiplier, a left shift, `diff_min`.
const SOFTMAX_WORDS: [u32; 3] = [1 << 30, 0, -64i32 as u32];

/// One SOFTMAX from `x` to `y` (int8 `[1, 4]`) with the arena offsets given.
fn softmax_at(x_off: u32, y_off: u32) -> Vec<u8> {
    let mut b = ModelBuilder::new();
    let x = b.add_tensor(TensorSpec::activation("x", ElementType::I8, &[1, 4]).per_tensor(0.5, 0));
    let y = b.add_tensor(TensorSpec::activation("y", ElementType::I8, &[1, 4]).per_tensor(1.0 / 256.0, -128));
    b.add_op(OpSpec {
        kind: OpKind::Softmax,
        name: "softmax".into(),
        inputs: vec![Some(x)],
        outputs: vec![y],
        params: SOFTMAX_WORDS.to_vec(),
        in_place: false,
        scratch_len: 0,
    });
    b.set_io(&[x], &[y]);
    b.set_arena_offsets(&[(x, x_off), (y, y_off)], 16);
    b.finish().unwrap()
}

/// An arena plan in which an op's output shares bytes with its input is refused when the model
/// is loaded, naming the op and the input, so that `invoke` has nothing left to find.
#[test]
fn an_input_overlapping_the_output_is_refused_at_load() {
    let mut arena = vec![0u8; 64];
    for (x_off, y_off) in [(0, 2), (3, 0), (8, 8)] {
        let bytes = AlignedBytes::new(&softmax_at(x_off, y_off));
        let e = Interpreter::new(&bytes, &mut arena).err().unwrap();
        assert_eq!(e, Error::ArenaOverlap { op: 0, tensor: 0 }, "x at {x_off}, y at {y_off}");
        assert_eq!(e.to_string(), "op 0: tensor 0 shares arena bytes with the op's output or scratch");
    }
    // Side by side, the same op loads and runs.
    let bytes = AlignedBytes::new(&softmax_at(0, 4));
    let mut it = Interpreter::new(&bytes, &mut arena).unwrap();
    it.input_i8(0).unwrap().copy_from_slice(&[0, 0, 0, 0]);
    it.invoke().unwrap();
    assert_eq!(it.output_i8(0).unwrap(), &[-64, -64, -64, -64]);
}

/// One MEAN over the last axis of `x` (int8 `[1, 4]`, at 0) into `y` (int8 `[1]`), with its
/// output and scratch at the offsets given.
fn mean_at(y_off: u32, scratch_off: u32) -> Vec<u8> {
    let mut b = ModelBuilder::new();
    let x = b.add_tensor(TensorSpec::activation("x", ElementType::I8, &[1, 4]).per_tensor(0.5, 0));
    let y = b.add_tensor(TensorSpec::activation("y", ElementType::I8, &[1]).per_tensor(0.5, 0));
    let op = b.add_op(OpSpec {
        kind: OpKind::Mean,
        name: "mean".into(),
        inputs: vec![Some(x)],
        outputs: vec![y],
        params: vec![1, 1],
        in_place: false,
        scratch_len: 4,
    });
    b.set_scratch_offset(op, scratch_off);
    b.set_io(&[x], &[y]);
    b.set_arena_offsets(&[(x, 0), (y, y_off)], 32);
    b.finish().unwrap()
}

/// A scratch buffer over the op's input or over its output is refused at load too.
#[test]
fn a_scratch_overlapping_an_input_or_the_output_is_refused_at_load() {
    let mut arena = vec![0u8; 64];
    let load = |bytes: &[u8], arena: &mut [u8]| Interpreter::new(&AlignedBytes::new(bytes), arena).err();
    assert_eq!(load(&mean_at(16, 0), &mut arena), Some(Error::ArenaOverlap { op: 0, tensor: 0 }));
    assert_eq!(load(&mean_at(16, 16), &mut arena), Some(Error::ArenaOverlap { op: 0, tensor: 1 }));
    assert_eq!(load(&mean_at(16, 20), &mut arena), None);
}

/// An interpreter built for some op kinds (the firmware's image for one model) refuses a model
/// with another kind at load, naming the op and the kind; with the model's own kinds it runs,
/// with the same outputs as one that may run every kind.
#[test]
fn op_set_refuses_kinds_outside_it_and_runs_its_own() {
    use microquant::interp::{OpKinds, OpSet};
    struct NoDepthwise;
    impl OpSet for NoDepthwise {
        const KINDS: OpKinds =
            OpKinds::of(&[OpKind::Conv2d, OpKind::AvgPool2d, OpKind::Reshape, OpKind::FullyConnected, OpKind::Softmax]);
    }
    struct KwsOps;
    impl OpSet for KwsOps {
        const KINDS: OpKinds = NoDepthwise::KINDS.with(OpKind::DepthwiseConv2d);
    }
    let bytes = AlignedBytes::new(&kws());
    let needed = microquant::model::Model::parse(&bytes).unwrap().arena_len();
    let mut words = vec![0u128; needed / 16 + 1];
    let e = Interpreter::<NoDepthwise>::with_op_set(&bytes, bytemuck_bytes(&mut words)).err();
    // KWS: conv, then its first depthwise conv at op 1.
    assert_eq!(e, Some(Error::OpNotInSet { index: 1, kind: OpKind::DepthwiseConv2d }));
    let msg = e.unwrap().to_string();
    assert!(msg.contains("op 1") && msg.contains("DEPTHWISE_CONV_2D"), "{msg}");

    let mut words_all = vec![0u128; needed / 16 + 1];
    let mut all = Interpreter::new(&bytes, bytemuck_bytes(&mut words_all)).unwrap();
    let mut kws_only = Interpreter::<KwsOps>::with_op_set(&bytes, bytemuck_bytes(&mut words)).unwrap();
    for (i, (a, b)) in all.input_i8(0).unwrap().iter_mut().zip(kws_only.input_i8(0).unwrap().iter_mut()).enumerate() {
        let v = ((i * 37) % 256) as u8 as i8;
        (*a, *b) = (v, v);
    }
    all.invoke().unwrap();
    kws_only.invoke().unwrap();
    assert_eq!(all.output_i8(0).unwrap(), kws_only.output_i8(0).unwrap());
}

/// An op set without int16 (what the firmware's build writes for an int8 model: only the int8
/// kernels are linked) refuses a model that computes with int16 activations, at load; the same
/// set with `with_int16` runs it.
#[test]
fn op_set_without_int16_refuses_16x8_ops() {
    use microquant::interp::{OpKinds, OpSet};
    struct ReluInt8;
    impl OpSet for ReluInt8 {
        const KINDS: OpKinds = OpKinds::of(&[OpKind::Relu]);
    }
    struct Relu16x8;
    impl OpSet for Relu16x8 {
        const KINDS: OpKinds = ReluInt8::KINDS.with_int16();
    }
    let mut b = ModelBuilder::new();
    let x = b.add_tensor(TensorSpec::activation("x", ElementType::I16, &[1, 4]).per_tensor(0.5, 0));
    let y = b.add_tensor(TensorSpec::activation("y", ElementType::I16, &[1, 4]).per_tensor(0.5, 0));
    // RELU words: the multiplier and shift of s_in / s_out = 1 (2^30, 1), then the clamp.
    let params = vec![1 << 30, 1, (-32768i32) as u32, 32767];
    b.add_op(OpSpec {
        kind: OpKind::Relu,
        name: "relu".into(),
        inputs: vec![Some(x)],
        outputs: vec![y],
        params,
        in_place: false,
        scratch_len: 0,
    });
    b.set_io(&[x], &[y]);
    b.set_arena_offsets(&[(x, 0), (y, 16)], 32);
    let bytes = AlignedBytes::new(&b.finish().unwrap());
    let mut arena = vec![0u128; 4];
    let e = Interpreter::<ReluInt8>::with_op_set(&bytes, bytemuck_bytes(&mut arena)).err();
    assert_eq!(e, Some(Error::Int16NotInSet { index: 0 }));
    assert!(e.unwrap().to_string().contains("int16"));
    let mut it = Interpreter::<Relu16x8>::with_op_set(&bytes, bytemuck_bytes(&mut arena)).unwrap();
    it.input_bytes(0).unwrap().copy_from_slice(bytemuck::cast_slice(&[-300i16, 5, 0, 32767]));
    it.invoke().unwrap();
    assert_eq!(bytemuck::cast_slice::<u8, i16>(it.output_bytes(0).unwrap()), &[-300, 5, 0, 32767]);
}
