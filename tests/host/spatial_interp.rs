//! The interpreter's resize and reduce ops refuse what they cannot run when the model is loaded
//! (`Interpreter::new`), with a typed error naming the op: input and output quantized apart, an
//! int16 bilinear resize (TFLite Micro has none), option words other than 0 / 1, a batch or
//! channel change, a reduction axis out of range; and a well-formed one runs.

use microquant::Error;
use microquant::interp::Interpreter;
use microquant::model::{AlignedBytes, ElementType, ModelBuilder, OpKind, OpSpec, TensorSpec};

struct One {
    kind: OpKind,
    dtype: ElementType,
    x: &'static [u32],
    y: &'static [u32],
    y_quant: (f32, i32),
    params: Vec<u32>,
    /// Scratch bytes the op record asks for (0 here: SUM without scratch must be refused).
    scratch: u32,
}

fn model(o: &One) -> Vec<u8> {
    let mut b = ModelBuilder::new();
    let x = b.add_tensor(TensorSpec::activation("x", o.dtype, o.x).per_tensor(0.5, 0));
    let y = b.add_tensor(TensorSpec::activation("y", o.dtype, o.y).per_tensor(o.y_quant.0, o.y_quant.1));
    b.add_op(OpSpec {
        kind: o.kind,
        name: "op".into(),
        inputs: vec![Some(x)],
        outputs: vec![y],
        params: o.params.clone(),
        in_place: false,
        scratch_len: o.scratch,
    });
    b.set_io(&[x], &[y]);
    // The arena ends where the output does (the header must say exactly what tensors reach).
    let y_bytes = o.y.iter().product::<u32>() * if o.dtype == ElementType::I16 { 2 } else { 1 };
    b.set_arena_offsets(&[(x, 0), (y, 256)], 256 + y_bytes);
    b.finish().unwrap()
}

fn load_error(o: &One) -> Error {
    let bytes = AlignedBytes::new(&model(o));
    let mut arena = vec![0u8; 4096];
    Interpreter::new(&bytes, &mut arena).err().expect("refused at load")
}

fn resize(kind: OpKind, dtype: ElementType) -> One {
    One { kind, dtype, x: &[1, 2, 3, 2], y: &[1, 4, 6, 2], y_quant: (0.5, 0), params: vec![0, 1], scratch: 0 }
}

#[test]
fn bad_resize_ops_are_refused_at_load() {
    let bad = |o: One, what: &str| {
        let e = load_error(&o);
        assert!(matches!(e, Error::BadOp { index: 0, .. } | Error::BadKernelArgument { .. }), "{what}: {e:?}");
        println!("{what}: {e}");
    };
    bad(One { y_quant: (0.25, 0), ..resize(OpKind::ResizeBilinear, ElementType::I8) }, "requantizing resize");
    bad(resize(OpKind::ResizeBilinear, ElementType::I16), "int16 bilinear");
    bad(One { params: vec![2, 0], ..resize(OpKind::ResizeNearestNeighbor, ElementType::I8) }, "option word 2");
    bad(One { params: vec![1, 1], ..resize(OpKind::ResizeBilinear, ElementType::I8) }, "bilinear with both flags");
    bad(One { y: &[1, 4, 6, 3], ..resize(OpKind::ResizeNearestNeighbor, ElementType::I8) }, "channel change");
    bad(One { params: vec![0], ..resize(OpKind::ResizeNearestNeighbor, ElementType::I8) }, "short words");
}

#[test]
fn bad_reductions_are_refused_at_load() {
    let max = One {
        kind: OpKind::ReduceMax,
        dtype: ElementType::I8,
        x: &[2, 3, 4],
        y: &[3],
        y_quant: (0.5, 0),
        params: vec![2, 0, 2],
        scratch: 0,
    };
    let e = load_error(&One { y_quant: (0.5, 3), ..max.clone_one() });
    assert!(matches!(e, Error::BadOp { index: 0, reason } if reason.contains("quantization")), "{e:?}");
    let e = load_error(&One { params: vec![1, 3], ..max.clone_one() });
    assert!(matches!(e, Error::BadKernelArgument { .. }), "axis 3 of rank 3: {e:?}");
    let sum = One { kind: OpKind::Sum, scratch: 0, y_quant: (2.0, 1), ..max.clone_one() };
    let e = load_error(&sum);
    assert!(matches!(e, Error::BadOp { index: 0, reason } if reason.contains("scratch")), "sum without scratch: {e:?}");
}

impl One {
    fn clone_one(&self) -> One {
        One { params: self.params.clone(), ..*self }
    }
}

#[test]
fn a_nearest_resize_runs() {
    let bytes = AlignedBytes::new(&model(&resize(OpKind::ResizeNearestNeighbor, ElementType::I8)));
    let mut arena = vec![0u8; 4096];
    let mut it = Interpreter::new(&bytes, &mut arena).unwrap();
    it.input_i8(0).unwrap().copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    it.invoke().unwrap();
    // half_pixel_centers, 2x: each input pixel twice along both axes.
    let y = it.output_i8(0).unwrap();
    assert_eq!(&y[..12], &[1, 2, 1, 2, 3, 4, 3, 4, 5, 6, 5, 6]);
    assert_eq!(&y[12..24], &y[..12]);
}
