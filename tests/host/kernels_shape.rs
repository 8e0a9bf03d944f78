//! Data movement and reduction: CONCATENATION, PAD, MEAN, RESHAPE and TRANSPOSE (int8) against
//! the golden outputs of TFLite Micro and of the TFLite interpreter's reference kernels
//! (`tests/golden/kernels/{concatenation,pad,mean,reshape,transpose}.json`), bit for bit, in both
//! rounding modes: `Rounding::Double` against TFLite Micro, `Rounding::Single` against the
//! interpreter (`BUILTIN_REF`).
//!
//! The TFLite int8 quantization spec, as these cases follow it: "CONCATENATION: ... restriction
//! input and outputs must all have same scale/zero_point"; "PAD / RESHAPE / TRANSPOSE: ...
//! restriction input and outputs must all have same scale/zero_point"; "MEAN: Input 0: int8,
//! per-tensor; Output 0: int8, per-tensor" (MEAN requantizes).

use microquant::kernels::Rounding;
use microquant::kernels::concat::{ConcatInput, ConcatParams, concat_s8};
use microquant::kernels::pad::{PadParams, pad_s8};
use microquant::kernels::reduce::{MeanParams, mean_s8, mean_scratch_len};
use microquant::kernels::reshape::{reshape_output_shape, reshape_s8};
use microquant::kernels::tensor::TensorQuant;
use microquant::kernels::transpose::{TransposeParams, transpose_s8};
use microquant_tests::golden::assert_bit_exact;
use microquant_tests::kernels::{self, KernelCase, Oracle};

const MODES: [(Rounding, Oracle); 2] = [(Rounding::Double, Oracle::Tflm), (Rounding::Single, Oracle::TfliteRef)];

fn report(name: &str, cases: usize, checked: [usize; 2], elements: usize) {
    assert_eq!(checked, [elements; 2], "{name}: elements checked");
    println!(
        "{name}: {cases} cases, {} elements bit-exact vs TFLite Micro (Double), {} vs TFLite BUILTIN_REF (Single)",
        checked[0], checked[1]
    );
}

#[test]
fn concatenation_matches_both_oracles() {
    let file = kernels::concatenation_file();
    assert!(!file.cases.is_empty());
    let mut checked = [0usize; 2];
    for c in &file.cases {
        let out_q = TensorQuant::new(c.output_scale, c.output_zero_point);
        let rank = c.expected_tflm.shape.len() as i32;
        let axis = if c.axis < 0 { c.axis + rank } else { c.axis } as usize;
        let metas: Vec<ConcatInput> = c
            .inputs
            .iter()
            .zip(c.input_scales.iter().zip(&c.input_zero_points))
            .map(|(t, (&s, &z))| ConcatInput::prepare_s8(t.shape[axis], TensorQuant::new(s, z), out_q).unwrap())
            .collect();
        let p = ConcatParams::new(&c.expected_tflm.shape, c.axis, &metas)
            .unwrap_or_else(|e| panic!("{}: prepare: {e}", c.name));
        let data: Vec<Vec<i8>> = c.inputs.iter().map(|t| t.i8()).collect();
        let slices: Vec<&[i8]> = data.iter().map(|v| &v[..]).collect();
        for (i, &(rounding, oracle)) in MODES.iter().enumerate() {
            // Concatenation has no rounding; both modes run the same kernel.
            let expected = c.expected(oracle);
            let mut out = vec![0i8; expected.len()];
            concat_s8(&p, &slices, &mut out).unwrap_or_else(|e| panic!("{}: {e}", c.name));
            checked[i] += assert_bit_exact(&format!("{} ({rounding:?} vs {oracle:?})", c.name), &expected.i8(), &out);
        }
    }
    report("CONCATENATION int8", file.cases.len(), checked, file.stats.elements);
}

#[test]
fn pad_matches_both_oracles() {
    let file = kernels::pad_file();
    assert!(!file.cases.is_empty());
    let mut checked = [0usize; 2];
    for c in &file.cases {
        let p = PadParams::prepare_s8(
            &c.input.shape,
            &c.paddings,
            TensorQuant::new(c.output_scale, c.output_zero_point),
            None,
        )
        .unwrap_or_else(|e| panic!("{}: prepare: {e}", c.name));
        assert_eq!(p.output_shape().dims(), &c.expected_tflm.shape[..], "{}: output shape", c.name);
        for (i, &(rounding, oracle)) in MODES.iter().enumerate() {
            let expected = c.expected(oracle);
            let mut out = vec![0i8; expected.len()];
            pad_s8(&p, &c.input.i8(), &mut out).unwrap_or_else(|e| panic!("{}: {e}", c.name));
            checked[i] += assert_bit_exact(&format!("{} ({rounding:?} vs {oracle:?})", c.name), &expected.i8(), &out);
        }
    }
    report("PAD int8", file.cases.len(), checked, file.stats.elements);
}

#[test]
fn mean_matches_both_oracles() {
    let file = kernels::mean_file();
    assert!(!file.cases.is_empty());
    let mut checked = [0usize; 2];
    for c in &file.cases {
        let (iq, oq) = (
            TensorQuant::new(c.input_scale, c.input_zero_point),
            TensorQuant::new(c.output_scale, c.output_zero_point),
        );
        let scratch_len = mean_scratch_len(&c.input.shape, &c.axis).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        assert_eq!(scratch_len, c.expected_tflm.len(), "{}: one accumulator per output", c.name);
        for (i, &(rounding, oracle)) in MODES.iter().enumerate() {
            let p = MeanParams::prepare_s8(&c.input.shape, &c.axis, iq, oq, rounding)
                .unwrap_or_else(|e| panic!("{}: prepare: {e}", c.name));
            let expected = c.expected(oracle);
            let mut out = vec![0i8; expected.len()];
            let mut scratch = vec![0i32; scratch_len];
            mean_s8(&p, &c.input.i8(), &mut out, &mut scratch).unwrap_or_else(|e| panic!("{}: {e}", c.name));
            checked[i] += assert_bit_exact(&format!("{} ({rounding:?} vs {oracle:?})", c.name), &expected.i8(), &out);
        }
    }
    report("MEAN int8", file.cases.len(), checked, file.stats.elements);
}

#[test]
fn reshape_matches_both_oracles() {
    let file = kernels::reshape_file();
    assert!(!file.cases.is_empty());
    let mut checked = [0usize; 2];
    for c in &file.cases {
        let shape = reshape_output_shape(c.input.len(), &c.new_shape).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        for (i, &(rounding, oracle)) in MODES.iter().enumerate() {
            let expected = c.expected(oracle);
            assert_eq!(shape.dims(), &expected.shape[..], "{}: output shape", c.name);
            let mut out = vec![0i8; expected.len()];
            reshape_s8(&c.input.i8(), &mut out).unwrap_or_else(|e| panic!("{}: {e}", c.name));
            checked[i] += assert_bit_exact(&format!("{} ({rounding:?} vs {oracle:?})", c.name), &expected.i8(), &out);
        }
    }
    report("RESHAPE int8", file.cases.len(), checked, file.stats.elements);
}

#[test]
fn transpose_matches_both_oracles() {
    let file = kernels::transpose_file();
    assert!(!file.cases.is_empty());
    let mut checked = [0usize; 2];
    for c in &file.cases {
        let p = TransposeParams::new(&c.input.shape, &c.perm).unwrap_or_else(|e| panic!("{}: prepare: {e}", c.name));
        assert_eq!(p.output_shape().dims(), &c.expected_tflm.shape[..], "{}: output shape", c.name);
        for (i, &(rounding, oracle)) in MODES.iter().enumerate() {
            let expected = c.expected(oracle);
            let mut out = vec![0i8; expected.len()];
            transpose_s8(&p, &c.input.i8(), &mut out).unwrap_or_else(|e| panic!("{}: {e}", c.name));
            checked[i] += assert_bit_exact(&format!("{} ({rounding:?} vs {oracle:?})", c.name), &expected.i8(), &out);
        }
    }
    report("TRANSPOSE int8", file.cases.len(), checked, file.stats.elements);
}
