//! The `.mq` UNIDIRECTIONAL_SEQUENCE_LSTM op through the interpreter, state carried between
//! invokes: every golden case of `tests/golden/kernels/lstm*.json` as a one-op `.mq` model whose
//! input is one time slice, invoked once per slice as TFLite Micro was, must give TFLite Micro's
//! outputs bit for bit; the same sequence with [`Interpreter::reset_state`] in between starts
//! over; and one invoke on the whole sequence equals invokes on its halves.

use microquant::interp::Interpreter;
use microquant::kernels::lstm::{LstmDims, LstmParams, LstmQuant};
use microquant::kernels::tensor::PerTensorQuant;
use microquant::model::words::LstmWords;
use microquant::model::{AlignedBytes, ElementType, ModelBuilder, OpKind, OpSpec, TensorSpec};
use microquant_tests::kernels::{LstmCase, lstm_16x8_cases, lstm_cases};

/// A golden tensor's little-endian bytes.
fn raw(t: &microquant_tests::golden::Tensor) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(&t.b64).unwrap()
}

/// A one-op model of `c` whose input holds `time` steps.
fn model(c: &LstmCase, time: usize) -> Vec<u8> {
    model_with_state(c, time, 0)
}

/// [`model`] with `extra` bytes added to the op's state (scratch) length.
fn model_with_state(c: &LstmCase, time: usize, extra: usize) -> Vec<u8> {
    let sixteen = c.input.dtype == "int16";
    let (dt, act_bytes) = if sixteen { (ElementType::I16, 2) } else { (ElementType::I8, 1) };
    let dims = LstmDims { batch: c.batch, time, input: c.n_input, cell: c.n_cell, time_major: c.time_major };
    let quant = LstmQuant {
        input: PerTensorQuant { scale: c.input_scale, zero_point: c.input_zero_point },
        input_weight_scales: c.input_weight_scales.clone().try_into().unwrap(),
        recurrent_weight_scales: c.recurrent_weight_scales.clone().try_into().unwrap(),
        hidden: PerTensorQuant { scale: c.hidden_scale, zero_point: c.hidden_zero_point },
        cell_scale: c.cell_scale,
        cell_clip: c.cell_clip,
    };
    let p = if sixteen { LstmParams::prepare_s16(dims, &quant) } else { LstmParams::prepare_s8(dims, &quant) }.unwrap();
    let (outer, inner) = if c.time_major { (time, c.batch) } else { (c.batch, time) };
    let [outer, inner, n_in, n_cell] = [outer, inner, c.n_input, c.n_cell].map(|v| v as u32);
    let mut b = ModelBuilder::new();
    let x = b.add_tensor(
        TensorSpec::activation("x", dt, &[outer, inner, n_in]).per_tensor(c.input_scale, c.input_zero_point),
    );
    let wi = b.add_tensor(TensorSpec::const_i8("wi", &[4, n_cell, n_in], &c.input_weights.i8()));
    let wr = b.add_tensor(TensorSpec::const_i8("wr", &[4, n_cell, n_cell], &c.recurrent_weights.i8()));
    let bias = if sixteen {
        let v: Vec<u8> = c.bias.i64().iter().flat_map(|v| v.to_le_bytes()).collect();
        TensorSpec::constant("b", ElementType::I64, &[4, n_cell], v)
    } else {
        TensorSpec::const_i32("b", &[4, n_cell], &c.bias.i32())
    };
    let bias = b.add_tensor(bias);
    let y = b.add_tensor(
        TensorSpec::activation("y", dt, &[outer, inner, n_cell]).per_tensor(c.hidden_scale, c.hidden_zero_point),
    );
    let state = dims.state_bytes(act_bytes) + extra;
    b.add_op(OpSpec {
        kind: OpKind::Lstm,
        name: "lstm".into(),
        inputs: vec![Some(x), Some(wi), Some(wr), Some(bias)],
        outputs: vec![y],
        params: LstmWords::from_params(&p).to_words().to_vec(),
        in_place: false,
        scratch_len: state as u32,
    });
    b.set_io(&[x], &[y]);
    let up = |v: usize| v.div_ceil(16) * 16;
    let (xl, yl) = (up(dims.input_len() * act_bytes), up(dims.output_len() * act_bytes));
    b.set_arena_offsets(&[(x, 0), (y, xl as u32)], (xl + yl + up(state)) as u32);
    b.set_scratch_offset(0, (xl + yl) as u32);
    b.finish().unwrap()
}

/// Runs `slices` through one interpreter, one invoke each; the outputs one after the other.
fn run(it: &mut Interpreter, input: &[u8], slices: usize) -> Vec<u8> {
    let n = input.len() / slices;
    let mut out = Vec::new();
    for k in 0..slices {
        it.input_bytes(0).unwrap().copy_from_slice(&input[k * n..(k + 1) * n]);
        it.invoke().unwrap();
        out.extend_from_slice(it.output_bytes(0).unwrap());
    }
    out
}

fn check(c: &LstmCase) {
    let bytes = AlignedBytes::new(&model(c, c.time / c.chunks));
    let mut arena = vec![0u128; 1 << 12];
    let arena: &mut [u8] = bytemuck::cast_slice_mut(&mut arena);
    // Garbage where the state will live: Interpreter::new must reset it.
    arena.fill(0x5a);
    let mut it = Interpreter::new(&bytes, arena).unwrap();
    let input = raw(&c.input);
    let expected = raw(&c.expected_tflm);
    assert_eq!(run(&mut it, &input, c.chunks), expected, "{}: invokes carrying the state", c.name);
    // Without a reset the state carries on into a second pass (a different output in general);
    // after a reset the pass starts over.
    let _ = run(&mut it, &input, c.chunks);
    it.reset_state().unwrap();
    assert_eq!(run(&mut it, &input, c.chunks), expected, "{}: after reset_state", c.name);
}

#[test]
fn lstm_s8_interpreter_matches_tflite_micro_across_invokes() {
    for c in lstm_cases() {
        check(&c);
    }
}

#[test]
fn lstm_s16_interpreter_matches_tflite_micro_across_invokes() {
    for c in lstm_16x8_cases() {
        check(&c);
    }
}

/// Two invokes on the halves of a sequence give the outputs of one invoke on the whole: the
/// models differ only in the input's time extent.
#[test]
fn two_invokes_on_halves_equal_one_on_the_whole() {
    let mut seen = 0;
    for c in lstm_cases().iter().chain(&lstm_16x8_cases()) {
        if c.time % 2 != 0 || !(c.time_major || c.batch == 1) {
            continue;
        }
        let input = raw(&c.input);
        let mut outs = Vec::new();
        for (time, slices) in [(c.time, 1), (c.time / 2, 2)] {
            let bytes = AlignedBytes::new(&model(c, time));
            let mut arena = vec![0u128; 1 << 12];
            let mut it = Interpreter::new(&bytes, bytemuck::cast_slice_mut(&mut arena)).unwrap();
            outs.push(run(&mut it, &input, slices));
        }
        assert_eq!(outs[0], outs[1], "{}", c.name);
        assert_eq!(outs[0], raw(&c.expected_tflm), "{}", c.name);
        seen += 1;
    }
    assert!(seen >= 10, "only {seen} cases");
}

/// A second pass without a reset continues from the state the first left (the state really
/// persists in the arena between invokes).
#[test]
fn state_persists_without_reset() {
    let c = lstm_cases().into_iter().find(|c| c.name == "lstm_b1_t8_i16_c20").unwrap();
    let bytes = AlignedBytes::new(&model(&c, c.time));
    let mut arena = vec![0u128; 1 << 12];
    let mut it = Interpreter::new(&bytes, bytemuck::cast_slice_mut(&mut arena)).unwrap();
    let input = raw(&c.input);
    let first = run(&mut it, &input, 1);
    let second = run(&mut it, &input, 1);
    assert_eq!(first, raw(&c.expected_tflm));
    assert_ne!(first, second);
}

/// An LSTM whose state region does not have the size of its state is refused at load, naming
/// the op.
#[test]
fn wrong_state_size_is_refused_at_load() {
    let c = &lstm_cases()[0];
    let bytes = AlignedBytes::new(&model_with_state(c, c.time, 2));
    let mut arena = vec![0u128; 1 << 12];
    let e = Interpreter::new(&bytes, bytemuck::cast_slice_mut(&mut arena)).err().unwrap();
    assert!(matches!(e, microquant::Error::BadOp { index: 0, reason } if reason.contains("state")), "{e:?}");
}
