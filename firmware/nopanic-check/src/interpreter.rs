//! The interpreter on a real model: load, validate, invoke, profiled invoke, the build-validated boot.

use core::hint::black_box;

/// The interpreter on a real model (the tiny M0 test model, embedded by build.rs) seen through
/// `black_box`, so every op kind's validation and evaluation stays in the image: load (parse,
/// validate), fill the input, invoke (plain and profiled), read the output and tensors.
#[inline(never)]
pub(crate) fn interpreter() {
    use microquant::interp::{Interpreter, Profiler};
    use microquant::model::OpKind;
    #[repr(C, align(16))]
    struct Aligned<T: ?Sized>(T);
    static MODEL: &Aligned<[u8]> = &Aligned(*include_bytes!(concat!(env!("OUT_DIR"), "/model.mq")));
    struct Count(u32);
    impl Profiler for Count {
        fn op_start(&mut self, i: u32, _: OpKind) {
            self.0 = self.0.wrapping_add(black_box(i));
        }
        fn op_end(&mut self, i: u32, k: OpKind) {
            self.0 = self.0.wrapping_add(black_box(i) ^ u32::from(k.code()));
        }
    }
    let mut arena = [0u8; 4096];
    let model: &[u8] = black_box(&MODEL.0);
    if let Ok(mut it) = Interpreter::new(model, black_box(&mut arena[..])) {
        if let Ok(x) = it.input_i8(0) {
            x.fill(black_box(3));
        }
        let _ = black_box(it.invoke());
        let mut p = Count(0);
        let _ = black_box(it.invoke_profiled(&mut p));
        black_box(p.0);
        let _ = black_box(it.run_op(black_box(0)));
        let _ = black_box(it.output_i8(0).map(|y| y.first().copied()));
        let _ = black_box(it.tensor_bytes(black_box(1)).map(|b| b.len()));
        let _ = black_box(it.output_info(0).map(|t| t.len()));
    }
    // The boot path of an embedded model (header and CRC only, validated at build time).
    if let Ok(mut it) = Interpreter::<microquant::interp::AllOps>::new_prevalidated(
        model,
        black_box(&mut arena[..]),
        black_box(0x1234_5678),
    ) {
        let _ = black_box(it.invoke());
    }
    let _ = black_box(microquant::model::crc32(model));
}
