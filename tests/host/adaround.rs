//! AdaRound (`PtqOptions::adaround`, `microquant quantize --adaround`) end to end on the MLPerf
//! Tiny KWS float model (DS-CNN: a conv, four depthwise + pointwise pairs, a fully-connected
//! classifier) with 4-bit weights, against round-to-nearest.
//!
//! The reconstruction errors are measured here, independently of AdaRound's own figures: for
//! each layer, the float graph with that layer's weights alone replaced by their dequantized
//! integers (`q · s`) is run on held-out samples, and the layer's output (after its fused
//! activation) is compared with the float graph's. Round-to-nearest is computed here too
//! (TFLite's symmetric int4, `scale = max |w| / 7` per output channel, `round(w / scale)` half
//! away from zero in [-7, 7]).
//!
//! Data is synthetic, as in `ptq_int4.rs`: uniform int8 noise over the published int8 model's
//! input range (SplitMix64), calibration and held-out samples from different seeds.

use microquant::float::FloatExecutor;
use microquant::graph::{ConstData, Graph, Op};
use microquant::ptq::*;
use microquant_tests::rng::SplitMix64;

use crate::onnx_golden;

const KWS: &str = "models/mlperf-tiny/kws_ref_model_float32.tflite";
const KWS_LEN: usize = 49 * 10;
const KWS_SCALE: f32 = 0.584_702_9;
const KWS_ZERO_POINT: i32 = 83;

fn kws() -> Graph {
    microquant::tflite::import(&std::fs::read(onnx_golden::repo_dir().join(KWS)).unwrap()).unwrap()
}

fn samples(seed: u64, n: usize) -> Vec<Vec<Vec<f32>>> {
    (0..n as u64)
        .map(|s| {
            let mut q = vec![0i8; KWS_LEN];
            SplitMix64::new(seed + s).fill_i8(&mut q);
            vec![q.iter().map(|&v| (v as f32 - KWS_ZERO_POINT as f32) * KWS_SCALE).collect()]
        })
        .collect()
}

fn options(adaround: Option<AdaRoundOptions>) -> PtqOptions {
    PtqOptions {
        calibration: CalibrationOptions { observer: ObserverKind::MinMax, ..Default::default() },
        quantize: QuantizeOptions { weight_bits: 4, ..Default::default() },
        adaround,
        ..Default::default()
    }
}

/// Round-to-nearest int4 per output channel (axis `axis`), as TFLite's quantizer.
fn nearest_int4(w: &[f32], shape: &[usize], axis: usize) -> (Vec<i8>, Vec<f32>) {
    let channels = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let ch = |k: usize| (k / inner) % channels;
    let mut amax = vec![0f32; channels];
    for (k, v) in w.iter().enumerate() {
        amax[ch(k)] = amax[ch(k)].max(v.abs());
    }
    let scales: Vec<f32> = amax.iter().map(|&a| if a > 0.0 { a / 7.0 } else { 1.0 }).collect();
    (w.iter().enumerate().map(|(k, &v)| (v / scales[ch(k)]).round().clamp(-7.0, 7.0) as i8).collect(), scales)
}

/// SQNR (dB) of layer `node`'s output over `eval` when its weights alone are `q · s`.
fn layer_sqnr(float: &Graph, node: usize, q: &[i8], scales: &[f32], eval: &[Vec<Vec<f32>>]) -> f64 {
    let n = &float.nodes[node];
    let (w, y) = (n.input(1).unwrap(), n.output(0).unwrap());
    let shape = float.tensor(w).unwrap().shape.clone();
    let axis = if matches!(n.op, Op::DepthwiseConv2d(_)) { 3 } else { 0 };
    let inner: usize = shape[axis + 1..].iter().product();
    let deq: Vec<f32> = q.iter().enumerate().map(|(k, &v)| v as f32 * scales[(k / inner) % scales.len()]).collect();
    let mut g = float.clone();
    g.tensors[w.index()].data = Some(ConstData::F32(deq));
    let (fe, qe) = (FloatExecutor::new(float).unwrap(), FloatExecutor::new(&g).unwrap());
    let (mut signal, mut noise) = (0f64, 0f64);
    for s in eval {
        let x = [s[0].as_slice()];
        let (a, b) = (fe.run_all(&x).unwrap(), qe.run_all(&x).unwrap());
        let (a, b) = (a[y.index()].as_ref().unwrap(), b[y.index()].as_ref().unwrap());
        for (u, v) in a.iter().zip(b) {
            signal += f64::from(*u) * f64::from(*u);
            noise += f64::from(u - v) * f64::from(u - v);
        }
    }
    10.0 * (signal / noise).log10()
}

#[test]
fn adaround_beats_round_to_nearest_on_every_kws_layer_and_at_the_output() {
    let graph = kws();
    let (calib, held_out) = (samples(120_000, 64), samples(130_000, 32));
    let ada_options = AdaRoundOptions::default();
    let start = std::time::Instant::now();
    let ada = convert(&graph, &calib, None, &options(Some(ada_options.clone())), &mut |_| {}).unwrap();
    let took = start.elapsed();
    let rtn = convert(&graph, &calib, None, &options(None), &mut |_| {}).unwrap();
    let rounding = ada.adaround.as_ref().unwrap();
    println!("{rounding}");
    assert_eq!(rounding.layers.len(), 10, "1 conv, 4 depthwise, 4 pointwise, 1 fully connected");
    assert!(rounding.skipped.is_empty(), "{:?}", rounding.skipped);

    for l in &rounding.layers {
        let n = &ada.float.nodes[l.node];
        let (w, shape) = {
            let t = ada.float.tensor(n.input(1).unwrap()).unwrap();
            (t.data.as_ref().unwrap().as_f32().unwrap().to_vec(), t.shape.clone())
        };
        let axis = if matches!(n.op, Op::DepthwiseConv2d(_)) { 3 } else { 0 };
        let (near, scales) = nearest_int4(&w, &shape, axis);
        // AdaRound keeps the quantizer's scales and only moves weights by one step from w / s.
        assert_eq!(l.scales, scales, "{}", l.name);
        for (k, (&a, &v)) in l.weights.iter().zip(&w).enumerate() {
            let r = v / scales[(k / shape[axis + 1..].iter().product::<usize>()) % scales.len()];
            assert!((-7..=7).contains(&a) && (a as f32 - r).abs() < 1.0 + 1e-4, "{}: {a} for {r}", l.name);
        }
        // The quantized graph has AdaRound's weights.
        let qn = &ada.quantized.graph.nodes[ada.quantized.node_map[l.node]];
        match &ada.quantized.graph.tensor(qn.input(1).unwrap()).unwrap().data {
            Some(ConstData::I4(q)) => assert_eq!(q, &l.weights, "{}", l.name),
            other => panic!("{}: not int4 weights: {other:?}", l.name),
        }
        // Held out: the layer's output is closer to float with AdaRound's weights.
        let (s_near, s_ada) = (
            layer_sqnr(&ada.float, l.node, &near, &scales, &held_out),
            layer_sqnr(&ada.float, l.node, &l.weights, &scales, &held_out),
        );
        println!("{:>3} {:<12} nearest {s_near:6.2} dB, adaround {s_ada:6.2} dB (held out)", l.node, n.op.name());
        assert!(l.error_adaround < l.error_nearest, "{}: calibration error not lowered", l.name);
        assert!(s_ada > s_near, "{}: held-out layer SQNR {s_ada:.2} dB vs nearest {s_near:.2} dB", l.name);
    }

    // The whole int8 model (W4A8) on the held-out samples.
    let (r_ada, r_rtn) = (ada.evaluate(&held_out, None).unwrap(), rtn.evaluate(&held_out, None).unwrap());
    let (s_ada, s_rtn) = (r_ada.model.output_sqnr_db.unwrap(), r_rtn.model.output_sqnr_db.unwrap());
    println!("kws w4a8 held out: output SQNR {s_rtn:.2} dB nearest, {s_ada:.2} dB adaround (adaround run {took:.1?})");
    assert!(s_ada >= s_rtn + 2.0, "output SQNR {s_ada:.2} dB with AdaRound vs {s_rtn:.2} dB nearest");

    // Deterministic given the seed: the same .mq again.
    let again = convert(&graph, &calib, None, &options(Some(ada_options)), &mut |_| {}).unwrap();
    assert_eq!(again.compiled.bytes, ada.compiled.bytes);
}
