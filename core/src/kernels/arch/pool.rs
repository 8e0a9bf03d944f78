//! Max and average pooling with the channels innermost, the fast path of every target that has
//! one (`pooling::{max,avg}_pool_s{8,16}` dispatch here): the reference reads one channel at a
//! time across the window, striding through memory by the channel count, where this reads each
//! window pixel's channels in memory order into a block of accumulators. The same values, bit
//! for bit: the maximum, or the same wrapping int32 sum finished by the same `average`.
#![forbid(unsafe_code)]

/// Channels per accumulator block of [`pool_channels_inner`].
const POOL_BLOCK: usize = 64;

/// Max and average pooling (`AVG`) with the channels innermost: for each output pixel and block
/// of up to 64 channels, the window's pixels are read in memory order into 64 int32
/// accumulators (contiguous slices: the loop vectorizes), then finished as the reference does
/// (the maximum; the wrapping sum's `average`). The same values as the reference, which reads
/// one channel at a time across the window. Shapes validated by the caller.
pub(crate) fn pool_channels_inner<X: crate::kernels::common::ActivationElement, const AVG: bool>(
    p: &crate::kernels::params::PoolParams,
    input: &[X],
    output: &mut [X],
) {
    use crate::kernels::window::{average, for_each_window};
    let (w, c) = (p.input.w, p.input.c.max(1));
    let init = if AVG { 0 } else { X::RANGE.min };
    for_each_window(p, input, output, |in_b, out_px, (y0, y1), (x0, x1)| {
        let count = ((y1 - y0) * (x1 - x0)) as i32;
        for (b, out_blk) in out_px.chunks_mut(POOL_BLOCK).enumerate() {
            let c0 = b * POOL_BLOCK;
            let mut acc = [init; POOL_BLOCK];
            for y in y0..y1 {
                for x in x0..x1 {
                    let start = (y * w + x) * c + c0;
                    let Some(src) = in_b.get(start..start + out_blk.len()) else { continue };
                    for (a, v) in acc.iter_mut().zip(src) {
                        *a = if AVG { a.wrapping_add(v.to_i32()) } else { (*a).max(v.to_i32()) };
                    }
                }
            }
            for (o, &a) in out_blk.iter_mut().zip(&acc) {
                let v = if AVG { average(a, count) } else { a };
                *o = X::from_clamped(p.activation.apply(v));
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::arch::test_rng::Rng;
    use crate::kernels::common::{Hw, Padding, compute_window};
    use crate::kernels::params::PoolParams;
    use crate::kernels::pooling::{avg_pool_s8_reference, max_pool_s8_reference};
    use crate::kernels::{ActivationRange, Dims4};

    /// Random shapes (channels across the 64-channel blocks, windows, strides, SAME and VALID
    /// padding, clamps): the same bytes as the reference kernels, average and max.
    #[test]
    fn matches_the_reference() {
        let mut rng = Rng(7);
        let mut checked = 0;
        for case in 0..400 {
            let r = |rng: &mut Rng, n: usize| (rng.next() % n as u64) as usize;
            let c = 1 + r(&mut rng, 150);
            let (h, w) = (1 + r(&mut rng, 9), 1 + r(&mut rng, 9));
            let filter = Hw::new(1 + r(&mut rng, h.max(3)), 1 + r(&mut rng, w.max(3)));
            let stride = Hw::new(1 + r(&mut rng, 3), 1 + r(&mut rng, 3));
            let padding = if case % 2 == 0 { Padding::Same } else { Padding::Valid };
            let Ok(win) = compute_window(padding, Hw::new(h, w), filter, stride, Hw::square(1)) else { continue };
            let input = Dims4::new(1 + r(&mut rng, 2), h, w, c);
            let lo = -128 + r(&mut rng, 100) as i32;
            let p = PoolParams {
                input,
                output: Dims4::new(input.n, win.output.h, win.output.w, c),
                filter,
                stride,
                padding: win.padding,
                activation: ActivationRange { min: lo, max: lo + 27 + r(&mut rng, 228 - (lo + 128) as usize) as i32 },
            };
            let (Some(n_in), Some(n_out)) = (input.checked_len(), p.output.checked_len()) else { continue };
            let x = rng.bytes(n_in);
            let mut want = std::vec![0i8; n_out];
            let mut got = want.clone();
            // A window entirely in the padding is refused by the reference (and never reaches
            // the fast path, whose caller validates the same way): skip that shape.
            if avg_pool_s8_reference(&p, &x, &mut want).is_err() {
                continue;
            }
            pool_channels_inner::<i8, true>(&p, &x, &mut got);
            assert_eq!(want, got, "average, case {case}: {p:?}");
            assert_eq!(max_pool_s8_reference(&p, &x, &mut want), Ok(()), "case {case}");
            pool_channels_inner::<i8, false>(&p, &x, &mut got);
            assert_eq!(want, got, "max, case {case}: {p:?}");
            checked += 1;
        }
        assert!(checked >= 200, "only {checked} of 400 random shapes were valid");
    }
}
