// Runs one benchmark layer (`layers.rs`) through the reference kernel and the dispatched kernel
// (the fast path of the target), with random data from a seed; shared by the firmware bench
// (firmware/src/bin/bench_kernels.rs, SysTick under QEMU -icount), the wasm bench
// (wasm/tests/bench_kernels.rs, performance.now() in Node) and the host bench
// (core/examples/bench_kernels.rs, std::time::Instant). `no_std`, no allocation: the caller
// passes the buffers. Needs `layers` and `rng` (tests/src/rng.rs) as sibling modules.

use super::layers::{Kind, Layer};
use super::rng::SplitMix64;
use microquant::kernels::common::{Hw, Padding, compute_window};
use microquant::kernels::conv::{ConvParams, conv_s8, conv_s8_reference, conv_s8_scratch_len};
use microquant::kernels::depthwise_conv::{DepthwiseConvParams, depthwise_conv_s8, depthwise_conv_s8_reference};
use microquant::kernels::fully_connected::{
    FullyConnectedParams, FullyConnectedPerChannelQuant, fully_connected_per_channel_s8,
    fully_connected_per_channel_s8_reference, fully_connected_s8_scratch_len,
};
use microquant::kernels::{ActivationRange, Dims4, PerChannelQuant, Rounding};

/// Buffer sizes the layers of `layers.rs` need.
pub const MAX_IN: usize = 48 * 48 * 16;
pub const MAX_OUT: usize = 48 * 48 * 16;
pub const MAX_FILTER: usize = 640 * 128;
pub const MAX_CH: usize = 640;
pub const MAX_SCRATCH: usize = 8192;

/// The caller's buffers (at least the `MAX_*` sizes above).
pub struct Bufs<'a> {
    pub x: &'a mut [i8],
    pub w: &'a mut [i8],
    pub bias: &'a mut [i32],
    pub m: &'a mut [i32],
    pub s: &'a mut [i32],
    pub want: &'a mut [i8],
    pub got: &'a mut [i8],
    pub scratch: &'a mut [u8],
}

/// Runs layer `l` through the reference and through the dispatched kernel, each once inside
/// `time` (which runs the closure it is given and measures it): `(reference, fast, same output)`,
/// or `None` if the buffers are too small or the shape is invalid.
pub fn run<T>(
    l: &Layer,
    b: &mut Bufs<'_>,
    seed: u64,
    mut time: impl FnMut(&mut dyn FnMut()) -> T,
) -> Option<(T, T, bool)> {
    let mut r = SplitMix64::new(seed);
    let n_in = l.input.iter().product::<usize>();
    let n_out = l.output.iter().product::<usize>();
    let (n_w, ch) = match l.kind {
        Kind::Conv => (l.filter.iter().product::<usize>(), l.filter[0]),
        Kind::Depthwise => (l.filter[1] * l.filter[2] * l.filter[3], l.filter[3]),
        Kind::FullyConnected => (l.filter[0] * l.filter[1], l.filter[0]),
    };
    let x = b.x.get_mut(..n_in)?;
    let w = b.w.get_mut(..n_w)?;
    r.fill_i8(x);
    r.fill_i8(w);
    let (m, s, bias) = (b.m.get_mut(..ch)?, b.s.get_mut(..ch)?, b.bias.get_mut(..ch)?);
    // Realistic requantization: effective scales about 2^-9 .. 2^-6, biases up to +-2^12.
    for ((m, s), bias) in m.iter_mut().zip(s.iter_mut()).zip(bias.iter_mut()) {
        *m = (1 << 30) + (r.next_u64() >> 35) as i32;
        *s = -6 - (r.next_u64() % 4) as i32;
        *bias = (r.next_u64() as i32) >> 19;
    }
    let (x, w): (&[i8], &[i8]) = (x, w);
    let q = PerChannelQuant { multiplier: m, shift: s };
    let bias = Some(&*bias);
    let want = b.want.get_mut(..n_out)?;
    let got = b.got.get_mut(..n_out)?;
    let activation = ActivationRange { min: -128, max: 127 };
    let (in_off, out_off) = (5, -3);
    let (t_ref, t_fast) = match l.kind {
        Kind::Conv | Kind::Depthwise => {
            let pad = if l.same { Padding::Same } else { Padding::Valid };
            let (kh, kw) = (l.filter[1], l.filter[2]);
            let stride = Hw::new(l.stride[0], l.stride[1]);
            let win =
                compute_window(pad, Hw::new(l.input[1], l.input[2]), Hw::new(kh, kw), stride, Hw::square(1)).ok()?;
            let input = Dims4::new(1, l.input[1], l.input[2], l.input[3]);
            let output = Dims4::new(1, l.output[1], l.output[2], l.output[3]);
            if l.kind == Kind::Conv {
                let p = ConvParams {
                    input,
                    filter: Dims4::new(l.filter[0], kh, kw, l.filter[3]),
                    output,
                    stride,
                    dilation: Hw::square(1),
                    padding: win.padding,
                    input_offset: in_off,
                    output_offset: out_off,
                    activation,
                    rounding: Rounding::Double,
                };
                let scratch = b.scratch.get_mut(..conv_s8_scratch_len(&p))?;
                let t_ref = time(&mut || {
                    let _ = conv_s8_reference(&p, &q, x, w, bias, want);
                });
                let t_fast = time(&mut || {
                    let _ = conv_s8(&p, &q, x, w, bias, got, scratch);
                });
                (t_ref, t_fast)
            } else {
                let p = DepthwiseConvParams {
                    input,
                    filter: Hw::new(kh, kw),
                    output,
                    depth_multiplier: 1,
                    stride,
                    dilation: Hw::square(1),
                    padding: win.padding,
                    input_offset: in_off,
                    output_offset: out_off,
                    activation,
                    rounding: Rounding::Double,
                };
                let t_ref = time(&mut || {
                    let _ = depthwise_conv_s8_reference(&p, &q, x, w, bias, want);
                });
                let t_fast = time(&mut || {
                    let _ = depthwise_conv_s8(&p, &q, x, w, bias, got, &mut []);
                });
                (t_ref, t_fast)
            }
        }
        Kind::FullyConnected => {
            let p = FullyConnectedParams {
                batches: 1,
                input_depth: l.filter[1],
                output_depth: l.filter[0],
                input_offset: in_off,
                output_offset: out_off,
                activation,
                rounding: Rounding::Double,
            };
            // Per-channel weights, double rounding: what TFLite Micro runs for these layers.
            let pc = FullyConnectedPerChannelQuant { fixed: q, exact: &[] };
            let scratch = b.scratch.get_mut(..fully_connected_s8_scratch_len(&p))?;
            let t_ref = time(&mut || {
                let _ = fully_connected_per_channel_s8_reference(&p, &pc, x, w, bias, want);
            });
            let t_fast = time(&mut || {
                let _ = fully_connected_per_channel_s8(&p, &pc, x, w, bias, got, scratch);
            });
            (t_ref, t_fast)
        }
    };
    Some((t_ref, t_fast, want == got))
}
