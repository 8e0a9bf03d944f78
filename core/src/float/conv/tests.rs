//! The float convolutions' tests: the GEMM paths against the reference loops and the ordered
//! sums, bit for bit where the module docs promise it.
use super::*;
use alloc::format;

#[test]
fn conv_same_padding_by_hand() -> Result<(), KernelError> {
    // 3x3 input of ones, one 3x3 filter of ones, SAME: each output counts its valid taps.
    let geo =
        ConvGeometry { input: [1, 3, 3, 1], kernel: [3, 3], stride: [1, 1], dilation: [1, 1], padding: Padding::Same };
    let y = conv2d_f32(&[1.0; 9], &[1.0; 9], Some(&[0.5]), &geo, 1, FusedActivation::None)?;
    assert_eq!(y, [4.5, 6.5, 4.5, 6.5, 9.5, 6.5, 4.5, 6.5, 4.5]);
    // Two output channels, two input channels: channel sums.
    let geo =
        ConvGeometry { input: [1, 1, 1, 2], kernel: [1, 1], stride: [1, 1], dilation: [1, 1], padding: Padding::Valid };
    let y = conv2d_f32(&[2.0, 3.0], &[1.0, 10.0, -1.0, 0.0], None, &geo, 2, FusedActivation::Relu)?;
    assert_eq!(y, [32.0, 0.0]);
    Ok(())
}

/// The depthwise rows with the CPU's widest build (AVX on x86-64) equal the portable build bit
/// for bit: channel counts around the vector widths, strides, dilations, both paddings.
#[test]
fn depthwise_rows_are_the_same_in_every_build() -> Result<(), KernelError> {
    let val = |len: usize, k: u32| -> Vec<f32> {
        (0..len as u32).map(|i| ((i.wrapping_mul(2_654_435_761) ^ k) % 2001) as f32 / 997.0 - 1.0).collect()
    };
    for (c, stride, dilation, padding) in [
        (1, 1, 1, Padding::Same),
        (7, 2, 1, Padding::Same),
        (8, 1, 2, Padding::Valid),
        (13, 1, 1, Padding::Same),
        (32, 2, 1, Padding::Valid),
        (35, 1, 1, Padding::Same),
    ] {
        let geo = ConvGeometry {
            input: [2, 11, 9, c],
            kernel: [3, 3],
            stride: [stride, stride],
            dilation: [dilation, dilation],
            padding,
        };
        let (x, f, b) = (val(2 * 11 * 9 * c, 1), val(9 * c, 2), val(c, 3));
        let taps = Taps::new(&geo)?;
        let rows = DepthwiseRows { x: &x, filter: &f, channels: c, taps };
        let n_rows = 2 * taps.out[0];
        let mut portable = bias_rows(n_rows * taps.out[1], Some(&b), c)?;
        rows.run(0, &mut portable);
        let got = depthwise_conv2d_f32(&x, &f, Some(&b), &geo, 1, FusedActivation::None)?;
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&portable), "c {c} stride {stride} dilation {dilation}");
    }
    Ok(())
}

/// The fast kernels (GEMM, f32 lanes) agree with the f64 reference loops within f32 rounding
/// on random geometries: strides, dilations, both paddings, 1×1 pointwise, batches, depth
/// multipliers, transposed convolutions with padding cropped, every fused activation.
/// Large enough for bands on threads (conv: GEMM row bands; depthwise: output rows): the
/// same bits with one thread and with four.
#[cfg(feature = "std")]
#[test]
fn threads_do_not_change_a_bit() -> Result<(), KernelError> {
    let geo = ConvGeometry {
        input: [2, 40, 36, 24],
        kernel: [3, 3],
        stride: [1, 1],
        dilation: [1, 1],
        padding: Padding::Same,
    };
    let val = |len: usize, k: u32| -> Vec<f32> {
        (0..len as u32).map(|i| ((i.wrapping_mul(2_654_435_761) ^ k) % 2001) as f32 / 1000.0 - 1.0).collect()
    };
    let (x, f, fd, b) = (val(2 * 40 * 36 * 24, 1), val(32 * 9 * 24, 2), val(9 * 24, 3), val(32, 4));
    let run = |threads: usize| -> Result<_, KernelError> {
        crate::parallel::set_max_threads(threads);
        let c = conv2d_f32(&x, &f, Some(&b), &geo, 32, FusedActivation::None);
        let d = depthwise_conv2d_f32(&x, &fd, Some(&b[..24]), &geo, 1, FusedActivation::Relu);
        crate::parallel::set_max_threads(0);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        Ok((bits(&c?), bits(&d?)))
    };
    assert_eq!(run(1)?, run(4)?);
    Ok(())
}

#[test]
fn fast_kernels_match_the_reference() -> Result<(), KernelError> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |m: usize| {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 33) as usize % m
    };
    let close = |a: &[f32], b: &[f32], what: &str| {
        assert_eq!(a.len(), b.len(), "{what}");
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() <= 2e-5 * (1.0 + y.abs()), "{what}: {x} vs {y}");
        }
    };
    let acts = [FusedActivation::None, FusedActivation::Relu, FusedActivation::Relu6];
    for case in 0..120 {
        let (n, h, w, ic) = (1 + next(2), 1 + next(9), 1 + next(9), 1 + next(12));
        let (kh, kw) = (1 + next(3), 1 + next(3));
        let geo = ConvGeometry {
            input: [n, h, w, ic],
            kernel: [kh, kw],
            stride: [1 + next(2), 1 + next(2)],
            dilation: [1 + next(2), 1],
            padding: if next(2) == 0 { Padding::Same } else { Padding::Valid },
        };
        if geo.windows().is_err() {
            continue;
        }
        let oc = 1 + next(20);
        let mut val = |len: usize| -> Vec<f32> { (0..len).map(|_| next(2001) as f32 / 1000.0 - 1.0).collect() };
        let x = val(n * h * w * ic);
        let f = val(oc * kh * kw * ic);
        let bias = val(oc);
        let act = acts[case % 3];
        let b = (case % 4 != 0).then_some(bias.as_slice());
        let what = format!("conv {geo:?} oc {oc}");
        close(&conv2d_f32(&x, &f, b, &geo, oc, act)?, &conv2d_f32_reference(&x, &f, b, &geo, oc, act)?, &what);
        let fd = val(kh * kw * ic);
        let bd = val(ic);
        close(
            &depthwise_conv2d_f32(&x, &fd, Some(&bd), &geo, 1, act)?,
            &depthwise_conv2d_f32_reference(&x, &fd, Some(&bd), &geo, 1, act)?,
            &what,
        );
        let tgeo = TransposeConvGeometry {
            input: [n, h, w, ic],
            kernel: [kh, kw],
            stride: geo.stride,
            pad: [next(kh), next(kw)],
            output: [(h - 1) * geo.stride[0] + kh - next(kh), (w - 1) * geo.stride[1] + kw - next(kw)],
        };
        close(
            &transpose_conv2d_f32(&x, &f, b, &tgeo, oc, act)?,
            &transpose_conv2d_f32_reference(&x, &f, b, &tgeo, oc, act)?,
            &format!("transpose conv {tgeo:?} oc {oc}"),
        );
    }
    Ok(())
}

/// The grouped sums are each channel's plain sum: bit for bit the value of
/// `sum::<f64>()` over the products in input-channel order, for 1 to 21 output channels (whole
/// groups of 8 and remainders), with cancellations that make the order matter; and no output
/// channels at all is an empty result, not a panic.
#[test]
fn conv_sums_are_the_ordered_sums() -> Result<(), KernelError> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let v = ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 1e4;
        if state % 3 == 0 { v * 1e-6 } else { v }
    };
    for oc in 0..=21 {
        let (ic, kh, kw) = (7, 2, 3);
        let geo = ConvGeometry {
            input: [1, 4, 5, ic],
            kernel: [kh, kw],
            stride: [1, 2],
            dilation: [1, 1],
            padding: Padding::Same,
        };
        let x: Vec<f32> = (0..4 * 5 * ic).map(|_| next()).collect();
        let f: Vec<f32> = (0..oc * kh * kw * ic).map(|_| next()).collect();
        let bias: Vec<f32> = (0..oc).map(|_| next()).collect();
        let y = conv2d_f32_reference(&x, &f, Some(&bias), &geo, oc, FusedActivation::None)?;
        let (wh, ww) = geo.windows()?;
        let mut want = Vec::new();
        for oy in 0..wh.output {
            for ox in 0..ww.output {
                for c in 0..oc {
                    let mut a = f64::from(bias[c]);
                    for ky in 0..kh {
                        let Some(iy) = tap(oy, ky, 1, 1, wh.pad_before, 4) else { continue };
                        for kx in 0..kw {
                            let Some(ix) = tap(ox, kx, 2, 1, ww.pad_before, 5) else { continue };
                            let xs = &x[(iy * 5 + ix) * ic..][..ic];
                            let fs = &f[((c * kh + ky) * kw + kx) * ic..][..ic];
                            a += xs.iter().zip(fs).map(|(&p, &q)| f64::from(p) * f64::from(q)).sum::<f64>();
                        }
                    }
                    want.push(a as f32);
                }
            }
        }
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&y), bits(&want), "{oc} output channels");
    }
    Ok(())
}

/// Patches read in place (where the CPU has the kernel) give the same bits as copied and
/// packed patches: padding, strides, dilation, several images, ragged row tiles and panels,
/// and depths that cross the packed blocks inside a tap.
#[test]
fn patches_in_place_equal_copied_patches() -> Result<(), KernelError> {
    let mut state = 0x51_7cc1_b727_220au64;
    let mut next = move |m: usize| {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 33) as usize % m
    };
    let shapes = [(2, 9, 7, 3, 3, 3, 5), (1, 6, 11, 300, 3, 3, 17), (1, 5, 5, 40, 1, 1, 33), (3, 4, 9, 7, 2, 5, 16)];
    for (case, &(n, h, w, ic, kh, kw, oc)) in shapes.iter().enumerate() {
        for (stride, dilation, padding) in
            [([1, 1], [1, 1], Padding::Same), ([2, 1], [1, 2], Padding::Valid), ([1, 2], [1, 1], Padding::Same)]
        {
            let geo = ConvGeometry { input: [n, h, w, ic], kernel: [kh, kw], stride, dilation, padding };
            let Ok((wh, ww)) = geo.windows() else { continue };
            let mut val = |len: usize| -> Vec<f32> { (0..len).map(|_| next(20001) as f32 / 7000.0 - 1.4).collect() };
            let (x, f, bias) = (val(n * h * w * ic), val(oc * kh * kw * ic), val(oc));
            let b = PackedRhs::weights(&f, kh * kw * ic, oc).map_err(gemm_err)?;
            let rows = n * wh.output * ww.output;
            let mut copied = bias_rows(rows, Some(&bias), oc)?;
            conv_im2col(&x, &b, &geo, &mut copied)?;
            let mut in_place = bias_rows(rows, Some(&bias), oc)?;
            let from_c = Epilogue { start: None, clamp: None };
            let ran = conv_in_place(&x, &b, &geo, &mut in_place, from_c)?;
            // Starting from the bias and clamping as it stores: the same as the separate passes.
            let mut fused = vec![f32::NAN; rows * oc];
            let epilogue = Epilogue { start: Some(&bias), clamp: FusedActivation::Relu6.float_range() };
            assert_eq!(conv_in_place(&x, &b, &geo, &mut fused, epilogue)?, ran);
            let mut clamped = copied.clone();
            apply_activation(&mut clamped, FusedActivation::Relu6);
            assert_eq!(ran, b.reads_in_place());
            if ran {
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&in_place), bits(&copied), "case {case} {geo:?}");
                assert_eq!(bits(&fused), bits(&clamped), "case {case} {geo:?} with the epilogue");
            }
        }
    }
    Ok(())
}

#[test]
fn depthwise_multiplier() -> Result<(), KernelError> {
    // 1x1 kernel, 2 channels, multiplier 2: output channel k reads input channel k / 2.
    let geo =
        ConvGeometry { input: [1, 1, 1, 2], kernel: [1, 1], stride: [1, 1], dilation: [1, 1], padding: Padding::Valid };
    let y = depthwise_conv2d_f32(
        &[2.0, 3.0],
        &[1.0, 2.0, 3.0, 4.0],
        Some(&[0.0, 0.0, 0.0, 1.0]),
        &geo,
        2,
        FusedActivation::None,
    )?;
    assert_eq!(y, [2.0, 4.0, 9.0, 13.0]);
    Ok(())
}
