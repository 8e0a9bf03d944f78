//! Cross-layer equalization (`--cle`, `PtqOptions::cle`) on real depthwise-separable models:
//! the MLPerf Tiny KWS float model (DS-CNN: a conv, four depthwise + pointwise pairs, average
//! pooling and a fully-connected classifier, every conv with a fused ReLU) and the digits DS-CNN
//! of `tests/golden/peers` (real data: scikit-learn's digits).
//!
//! KWS data is synthetic, as in `ptq.rs`: SplitMix64 int8 values mapped through the published
//! int8 model's input scale and zero point (uniform noise over the input range); 64 samples
//! calibrate, 32 others evaluate. The KWS figure is the SQNR of the logits (the classifier's
//! output, before the softmax: on noise inputs the softmax saturates and its SQNR swings by
//! several dB with any change); the digits figure is the model output's SQNR on its 500 test
//! samples. The observer is min/max (deterministic, no model-level choice in between).
//!
//! Measured (printed by `kws_and_digits_figures`; `--nocapture`): per-tensor W8A8 with CLE does
//! **not** reach per-channel W8A8 within 0.5 dB. KWS logits: per-channel 36.3 dB, per-tensor
//! 36.2, per-tensor + CLE 34.8. The KWS float model's convolution weights are int8 per channel in
//! the file (a dynamic-range model, dequantized by `prepare`), so per-channel requantization
//! finds them on its grid and per-tensor loses little; equalized, they leave that grid: with
//! int8 weights alone (float activations) the logits go from 38.4 (per-channel) and 38.5
//! (per-tensor) to 34.9 dB. Digits: per-channel 33.5, per-tensor 27.8, per-tensor + CLE 28.2
//! (its first conv and first pointwise conv feed a residual add, which CLE does not cross).
//! The assertions below hold the measured order and gaps with a margin; the expected values are
//! computed independently of the equalizer (channel ranges from the weights, the float model's
//! outputs).

use microquant::float::FloatExecutor;
use microquant::graph::{Graph, Op};
use microquant::ptq::*;
use microquant_tests::rng::SplitMix64;

use crate::{onnx_golden, peers_common};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

const KWS: &str = "models/mlperf-tiny/kws_ref_model_float32.tflite";
const KWS_SHAPE: [usize; 4] = [1, 49, 10, 1];
const KWS_SCALE: f32 = 0.584_702_9;
const KWS_ZERO_POINT: i32 = 83;

fn kws() -> Result<Graph> {
    Ok(microquant::tflite::import(&std::fs::read(onnx_golden::repo_dir().join(KWS))?)?)
}

fn samples(seed: u64, n: usize) -> Vec<Vec<Vec<f32>>> {
    let len: usize = KWS_SHAPE.iter().product();
    (0..n as u64)
        .map(|s| {
            let mut q = vec![0i8; len];
            SplitMix64::new(seed + s).fill_i8(&mut q);
            vec![q.iter().map(|&v| (v as f32 - KWS_ZERO_POINT as f32) * KWS_SCALE).collect()]
        })
        .collect()
}

/// The f32 weights and their shape of node `n`.
fn weights(g: &Graph, n: usize) -> Result<(Vec<f32>, Vec<usize>)> {
    let t = g.nodes[n].input(1).and_then(|w| g.tensor(w)).ok_or("no weights")?;
    let data = t.data.as_ref().and_then(|d| d.as_f32()).ok_or("weights not f32")?;
    Ok((data.to_vec(), t.shape.clone()))
}

/// Largest |w| per output channel (`out`) or per input channel of `channels` (written from the
/// layouts: conv OHWI, fully connected [out, in] with input column j reading channel j mod C of
/// a flattened NHWC map, depthwise [1, kh, kw, c] with multiplier 1).
fn ranges(g: &Graph, n: usize, out: bool, channels: usize) -> Result<Vec<f32>> {
    let (w, shape) = weights(g, n)?;
    let last = *shape.last().ok_or("scalar weights")?;
    let depthwise = matches!(g.nodes[n].op, Op::DepthwiseConv2d(_));
    let mut r = vec![0f32; channels];
    for (k, v) in w.iter().enumerate() {
        let c = match (depthwise, out) {
            (true, _) => k % last,
            (false, true) => k / (w.len() / shape[0]),
            (false, false) => (k % last) % channels,
        };
        r[c] = r[c].max(v.abs());
    }
    Ok(r)
}

#[test]
fn kws_equalized_keeps_its_function_and_evens_each_pairs_ranges() -> Result<()> {
    let mut before = kws()?;
    prepare(&mut before)?;
    let mut after = before.clone();
    let report = equalize(&mut after, &CleOptions::default())?;
    println!("{report}");
    assert!(report.converged, "{report}");
    assert!(report.skipped.is_empty() && report.relu6_replaced.is_empty());
    // conv -> dw -> pw -> dw -> pw -> dw -> pw -> dw -> pw -> (average pool, reshape) -> fc.
    let kinds: Vec<(&str, &str)> = report
        .pairs
        .iter()
        .map(|p| (after.nodes[p.first_index].op.name(), after.nodes[p.second_index].op.name()))
        .collect();
    let mut want = vec![("Conv2d", "DepthwiseConv2d")];
    for _ in 0..4 {
        want.extend([("DepthwiseConv2d", "Conv2d"), ("Conv2d", "DepthwiseConv2d")]);
    }
    want.pop();
    want.push(("Conv2d", "FullyConnected"));
    assert_eq!(kinds, want);
    for p in &report.pairs {
        let r1 = ranges(&after, p.first_index, true, p.channels)?;
        let r2 = ranges(&after, p.second_index, false, p.channels)?;
        for (i, (a, b)) in r1.iter().zip(&r2).enumerate() {
            assert!(
                (a - b).abs() <= 1e-3 * a.max(*b),
                "#{} -> #{} channel {i}: {a} vs {b}",
                p.first_index,
                p.second_index
            );
        }
    }
    for l in &report.layers {
        assert!(l.precision_after > l.precision_before, "#{}: {l:?}", l.index);
    }
    // The float function: the same outputs (softmax probabilities) within float rounding.
    let (x, y) = (FloatExecutor::new(&before)?, FloatExecutor::new(&after)?);
    for s in samples(5_000, 4) {
        let inputs = [s[0].as_slice()];
        for (a, b) in x.run(&inputs)?[0].iter().zip(&y.run(&inputs)?[0]) {
            assert!((a - b).abs() <= 1e-5, "{a} vs {b}");
        }
    }
    Ok(())
}

/// KWS: the logits' SQNR (dB) on the evaluation samples.
fn kws_logits_sqnr(per_channel: bool, cle: bool) -> Result<f64> {
    let options = PtqOptions {
        calibration: CalibrationOptions { observer: ObserverKind::MinMax, ..Default::default() },
        quantize: QuantizeOptions { per_channel, ..Default::default() },
        cle: cle.then(CleOptions::default),
        ..Default::default()
    };
    let out = convert(&kws()?, &samples(7_000, 64), None, &options, &mut |_| {})?;
    let report = out.evaluate(&samples(8_000, 32), None)?;
    let fc = report.layers.iter().rfind(|l| l.op == "FullyConnected").ok_or("no classifier")?;
    Ok(fc.sqnr_db.ok_or("no SQNR")?)
}

/// KWS weight-only (int8 weights, float compute: no activation quantization): the logits' SQNR.
fn kws_weight_only_logits_sqnr(per_channel: bool, cle: bool) -> Result<f64> {
    let mut g = kws()?;
    prepare(&mut g)?;
    if cle {
        equalize(&mut g, &CleOptions::default())?;
    }
    let hybrid = quantize_weight_only(&g, &HybridOptions { per_channel })?;
    let report = evaluate_hybrid(&g, &hybrid, &samples(8_000, 32), None, &mut |_| {})?;
    let fc = report.layers.iter().rfind(|l| l.op == "FullyConnected").ok_or("no classifier")?;
    Ok(fc.sqnr_db.ok_or("no SQNR")?)
}

/// Digits DS-CNN: the output's SQNR (dB) on the 500 test samples.
fn digits_sqnr(per_channel: bool, cle: bool) -> Result<f64> {
    let dir = peers_common::peers_dir();
    let imported = peers_common::import(&dir.join("dscnn_nchw.onnx"));
    let calib = peers_common::samples(&imported, &peers_common::read_npy(&dir.join("calib_nchw.npy")));
    let test = peers_common::samples(&imported, &peers_common::read_npy(&dir.join("test_nchw.npy")));
    let options = PtqOptions {
        calibration: CalibrationOptions { observer: ObserverKind::MinMax, ..Default::default() },
        quantize: QuantizeOptions { per_channel, ..Default::default() },
        cle: cle.then(CleOptions::default),
        ..Default::default()
    };
    let out = convert(&imported.graph, &calib, None, &options, &mut |_| {})?;
    Ok(out.evaluate(&test, None)?.model.output_sqnr_db.ok_or("no SQNR")?)
}

#[test]
fn kws_and_digits_figures() -> Result<()> {
    let (pc, pt, ptc) = (kws_logits_sqnr(true, false)?, kws_logits_sqnr(false, false)?, kws_logits_sqnr(false, true)?);
    println!("KWS logits SQNR (dB): per-channel {pc:.2}, per-tensor {pt:.2}, per-tensor + CLE {ptc:.2}");
    let (wc, wt, wtc) = (
        kws_weight_only_logits_sqnr(true, false)?,
        kws_weight_only_logits_sqnr(false, false)?,
        kws_weight_only_logits_sqnr(false, true)?,
    );
    println!("KWS weight-only logits SQNR (dB): per-channel {wc:.2}, per-tensor {wt:.2}, per-tensor + CLE {wtc:.2}");
    let (dc, dt, dtc) = (digits_sqnr(true, false)?, digits_sqnr(false, false)?, digits_sqnr(false, true)?);
    println!("digits DS-CNN output SQNR (dB): per-channel {dc:.2}, per-tensor {dt:.2}, per-tensor + CLE {dtc:.2}");
    // KWS: CLE misses per-channel by about 1.5 dB (and per-tensor without it by 1.4 dB).
    assert!(ptc > pc - 2.5, "KWS: per-tensor + CLE {ptc:.2} dB, per-channel {pc:.2} dB");
    // Digits: CLE gains about 0.4 dB over per-tensor, 5 dB short of per-channel.
    assert!(dtc > dt, "digits: per-tensor + CLE {dtc:.2} dB, per-tensor {dt:.2} dB");
    Ok(())
}
