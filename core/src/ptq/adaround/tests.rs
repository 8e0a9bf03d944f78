//! AdaRound's pieces on cases small enough to work out by hand (the expected values are derived
//! in the comments, not read from this code's output).

use alloc::vec;
use alloc::vec::Vec;

use super::optimizer::{Adam, beta_at, rectified_sigmoid, rectified_sigmoid_inverse, regularizer};
use super::patches::{Cut, Patches, SplitMix64, select};
use super::problem::{Group, LayerProblem};
use super::{AdaRound, AdaRoundOptions};
use crate::float::conv::{ConvGeometry, Taps};
use crate::graph::{
    ConstData, ConvertError, ConvertErrorKind as Kind, DType, FullyConnected, FusedActivation, Graph, GraphMetadata,
    Node, Op, Padding, PaddingValues, Tensor,
};
use crate::ptq::QuantizeOptions;

fn close(a: f32, b: f32, tol: f32) -> bool {
    (a - b).abs() <= tol
}

fn fail(what: &str) -> ConvertError {
    ConvertError::new(Kind::InvalidGraph, alloc::string::String::from(what))
}

#[test]
fn rectified_sigmoid_values() {
    // h(0) = σ(0)·(1.1 + 0.1) - 0.1 = 0.5·1.2 - 0.1 = 0.5; dh/dV = σ(1 - σ)·1.2 = 0.25·1.2 = 0.3.
    let (h, dh) = rectified_sigmoid(0.0);
    assert!(close(h, 0.5, 1e-6) && close(dh, 0.3, 1e-6), "{h} {dh}");
    // σ(V) below 0.1 / 1.2 clips to 0, above 1.1 / 1.2 to 1, with no gradient.
    assert_eq!(rectified_sigmoid(-10.0), (0.0, 0.0));
    assert_eq!(rectified_sigmoid(10.0), (1.0, 0.0));
    // h = 0.25: σ = 0.35 / 1.2 = 0.291 666, V = ln(0.291 666 / 0.708 333) = -0.887 303.
    let v = rectified_sigmoid_inverse(0.25);
    assert!(close(v, -0.887_303, 1e-5), "{v}");
    for h in [0.0f32, 0.1, 0.5, 0.9, 0.999] {
        assert!(close(rectified_sigmoid(rectified_sigmoid_inverse(h)).0, h, 1e-5), "{h}");
    }
}

#[test]
fn regularizer_values() {
    // 1 - |2h - 1|^β: 1 at h = 0.5 (flat), 0 at 0 and 1.
    assert_eq!(regularizer(0.5, 2.0), (1.0, 0.0));
    assert_eq!(regularizer(0.0, 20.0).0, 0.0);
    assert_eq!(regularizer(1.0, 20.0).0, 0.0);
    // β = 2, h = 0.75: 1 - 0.5² = 0.75; d/dh = -2·2·0.5 = -2 (towards 1). h = 0.25: +2 (towards 0).
    let (v, g) = regularizer(0.75, 2.0);
    assert!(close(v, 0.75, 1e-6) && close(g, -2.0, 1e-6), "{v} {g}");
    let (v, g) = regularizer(0.25, 2.0);
    assert!(close(v, 0.75, 1e-6) && close(g, 2.0, 1e-6), "{v} {g}");
    // β = 20, h = 0.6: 1 - 0.2^20 ≈ 1, almost no pull away from the middle.
    let (v, g) = regularizer(0.6, 20.0);
    assert!(close(v, 1.0, 1e-9) && g.abs() < 1e-10, "{v} {g}");
}

#[test]
fn annealing_schedule() {
    // 10 iterations: the first 2 (20 %) are the warm-up; then β falls linearly from 20 at
    // iteration 2 to 2 at iteration 9: at iteration 5, 2 + 18·(1 - 3/7) = 12.285 714.
    assert_eq!(beta_at(0, 10), None);
    assert_eq!(beta_at(1, 10), None);
    assert_eq!(beta_at(2, 10), Some(20.0));
    assert!(beta_at(5, 10).is_some_and(|b| close(b, 12.285_714, 1e-4)));
    assert_eq!(beta_at(9, 10), Some(2.0));
    // One iteration: no warm-up, the end value.
    assert_eq!(beta_at(0, 1), Some(2.0));
}

#[test]
fn adam_first_step_is_the_learning_rate_against_the_gradient() {
    // Bias-corrected first moments: m̂ = g, v̂ = g², the step lr·g / (|g| + ε) ≈ lr·sign(g).
    let mut adam = Adam::new(2, 0.1);
    let mut p = [1.0f32, -1.0];
    adam.step(&mut p, &[0.5, -4.0]);
    assert!(close(p[0], 0.9, 1e-6) && close(p[1], -0.9, 1e-6), "{p:?}");
}

#[test]
fn patch_draw_is_seeded_distinct_and_sorted() {
    assert_eq!(select(5, 9, &mut SplitMix64::new(1)), vec![0, 1, 2, 3, 4]);
    let a = select(1000, 50, &mut SplitMix64::new(7));
    assert_eq!(a.len(), 50);
    assert!(a.windows(2).all(|w| w[0] < w[1]) && a.iter().all(|&i| i < 1000));
    assert_eq!(a, select(1000, 50, &mut SplitMix64::new(7)));
    assert_ne!(a, select(1000, 50, &mut SplitMix64::new(8)));
}

#[test]
fn gram_of_rows_and_of_conv_windows() -> Result<(), ConvertError> {
    // Two rows [1, 2], [3, 4]: G = ½([1 2; 2 4] + [9 12; 12 16]) = [5 7; 7 10].
    let mut p = Patches::new(Cut::Rows { k: 2 }, 4, 1, 100, &mut SplitMix64::new(0));
    p.add(0, &[1.0, 2.0, 3.0, 4.0])?;
    assert_eq!(p.count(), 2);
    assert_eq!(p.take_grams(), vec![vec![5.0, 7.0, 7.0, 10.0]]);
    // k = 16 takes the GEMM: rows e_0 and 2·e_3 give G = ½ diag(1, 0, 0, 4, 0, ...).
    let mut x = vec![0f32; 32];
    x[0] = 1.0;
    x[16 + 3] = 2.0;
    let mut p = Patches::new(Cut::Rows { k: 16 }, 32, 1, 100, &mut SplitMix64::new(0));
    p.add(0, &x)?;
    let g = p.take_grams().concat();
    for (i, &v) in g.iter().enumerate() {
        let want = match i {
            0 => 0.5,
            51 => 2.0, // (3, 3)
            _ => 0.0,
        };
        assert_eq!(v, want, "G[{i}]");
    }
    // A 2×2 image [1 2; 3 4], 2×2 filter, padding 1 below and right: the window of output
    // pixel (1, 1) reads 4 and three zeros; of (0, 0), the whole image.
    let padding = Padding::Explicit(PaddingValues { top: 0, bottom: 1, left: 0, right: 1 });
    let geo = ConvGeometry { input: [1, 2, 2, 1], kernel: [2, 2], stride: [1, 1], dilation: [1, 1], padding };
    let taps = Taps::new(&geo).map_err(|_| fail("taps"))?;
    let cut = Cut::Conv { taps, count: 4, images: 1, image: 4, channels: 1 };
    assert_eq!(cut.positions(4), 4);
    let mut out = [9f32; 4];
    cut.patch(&[1.0, 2.0, 3.0, 4.0], 3, 0, &mut out);
    assert_eq!(out, [4.0, 0.0, 0.0, 0.0]);
    cut.patch(&[1.0, 2.0, 3.0, 4.0], 0, 0, &mut out);
    assert_eq!(out, [1.0, 2.0, 3.0, 4.0]);
    // Depthwise, a 2×1 image of 2 channels [[1, 10], [2, 20]], 2×1 filter: channel 0's window
    // [1, 2], channel 1's [10, 20].
    let geo =
        ConvGeometry { input: [1, 2, 1, 2], kernel: [2, 1], stride: [1, 1], dilation: [1, 1], padding: Padding::Valid };
    let taps = Taps::new(&geo).map_err(|_| fail("taps"))?;
    let cut = Cut::Depthwise { taps, count: 2, images: 1, image: 2, channels: 2 };
    let mut out = [0f32; 2];
    cut.patch(&[1.0, 10.0, 2.0, 20.0], 0, 1, &mut out);
    assert_eq!(out, [10.0, 20.0]);
    cut.patch(&[1.0, 10.0, 2.0, 20.0], 0, 0, &mut out);
    assert_eq!(out, [1.0, 2.0]);
    Ok(())
}

/// One row `w = [0.4, 0.3]`, scale 1, one input patch `x = [1, 2]`: `w·x = 1.0`.
/// Nearest rounds both down, `[0, 0]`: output error `(0 - 1)² = 1`. `[1, 0]` gives `1·1 + 0·2
/// = 1`, error 0: the best rounding, and it rounds 0.4 *up*. (`[0, 1]`: 2, error 1; `[1, 1]`:
/// 3, error 4.)
#[test]
fn the_best_rounding_of_a_row_is_found_where_it_differs_from_nearest() -> Result<(), ConvertError> {
    let gram = vec![1.0, 2.0, 2.0, 4.0]; // x xᵀ
    let group = Group::new(2, gram, vec![0.4, 0.3], vec![1.0], vec![0, 1], 127, 0.01)?;
    let mut problem = LayerProblem::new(vec![group], 1000);
    assert!(close(problem.error(&[0, 0])? as f32, 1.0, 1e-6));
    assert!(close(problem.error(&[1, 0])? as f32, 0.0, 1e-6));
    assert!(close(problem.error(&[1, 1])? as f32, 4.0, 1e-6));
    assert!(close(problem.signal()? as f32, 0.01 * 10.0 * 10.0, 1e-6)); // (0.4 + 0.6)²
    assert_eq!(problem.run(5000)?, 1000);
    assert!(problem.finished());
    assert_eq!(problem.scatter(2, Group::rounded), vec![1, 0]);
    Ok(())
}

/// int4: `w = 6.8` at scale 1 sits below 7, the top of [-7, 7]; a second weight's error can only
/// be cancelled by rounding it up to 8, which the clip forbids: it stays 7.
#[test]
fn rounding_up_stops_at_the_top_of_the_range() -> Result<(), ConvertError> {
    // w = [6.8, 0.5], x = [1, -1]: w·x = 6.3. [7, 0] gives 7 (error 0.49), [7, 1] gives 6
    // (error 0.09), [6, 0] gives 6 (0.09), [6, 1]: 5 (1.69). Either best keeps 6.8 at most 7.
    let group = Group::new(2, vec![1.0, -1.0, -1.0, 1.0], vec![6.8, 0.5], vec![1.0], vec![0, 1], 7, 0.01)?;
    let mut problem = LayerProblem::new(vec![group], 500);
    problem.run(500)?;
    let q = problem.scatter(2, Group::rounded);
    assert!(q[0] <= 7 && q[0] >= 6, "{q:?}");
    assert!(close(problem.error(&q)? as f32, 0.09, 1e-4), "{q:?}: {}", problem.error(&q)?);
    Ok(())
}

/// A fully-connected graph `[1, 4] → [3, 4]ᵀ`, AdaRounded twice with one seed and once with
/// another (fewer patches than rows, so the draw matters).
fn fc_graph() -> Result<Graph, ConvertError> {
    let mut g = Graph::new(GraphMetadata::new("test", "adaround"));
    let x = g.add_tensor(Tensor::new("x", vec![8, 4], DType::F32))?;
    let w: Vec<f32> = (0..12).map(|i| ((i * 7 % 11) as f32 - 5.0) * 0.137).collect();
    let w = g.add_tensor(Tensor::constant("w", vec![3, 4], ConstData::F32(w)))?;
    let y = g.add_tensor(Tensor::new("y", vec![8, 3], DType::F32))?;
    let fc = Op::FullyConnected(FullyConnected { activation: FusedActivation::None, keep_num_dims: false });
    g.add_node(Node::new("fc", fc, vec![Some(x), Some(w)], vec![y]));
    g.inputs.push(x);
    g.outputs.push(y);
    Ok(g)
}

fn run_fc(g: &Graph, seed: u64) -> Result<super::AdaRounding, ConvertError> {
    let options = AdaRoundOptions { iterations: 200, patches: 20, seed, learning_rate: 0.01 };
    let quantize = QuantizeOptions { weight_bits: 4, ..Default::default() };
    let mut ada = AdaRound::new(g, &quantize, &options, 3)?;
    for s in 0..3 {
        let x: Vec<f32> = (0..32).map(|i| libm::sinf((i * 3 + s * 17) as f32)).collect();
        ada.add_sample(&[&x])?;
    }
    ada.finish()
}

#[test]
fn adaround_is_deterministic_given_the_seed() -> Result<(), ConvertError> {
    let g = fc_graph()?;
    let (a, b, c) = (run_fc(&g, 5)?, run_fc(&g, 5)?, run_fc(&g, 6)?);
    assert_eq!(a, b);
    assert_eq!(a.layers.len(), 1);
    let l = &a.layers[0];
    assert_eq!((l.bits, l.patches, l.weights.len()), (4, 20, 12));
    // Another seed draws other patches: another problem.
    assert_ne!(a.layers[0].signal, c.layers[0].signal);
    // Never worse than nearest on its own patches.
    assert!(l.error_adaround <= l.error_nearest);
    Ok(())
}
