//! Streaming calibration ([`SampleSource`], [`Calibrator::calibrate_source`], [`Evaluator`],
//! [`convert_source`]) gives what the per-sample path gives, bit for bit: the calibration state
//! ([`Calibrator::to_state`]: every observer's statistics), the `.mq` bytes and the report's
//! JSON, for one-pass (min/max, moving average) and two-pass observers (histogram, entropy,
//! percentile, auto with the samples it keeps for its model-level choice), for a source whose chunks are cut anywhere (not at [`CHUNK_SAMPLES`]), and for a
//! streaming LSTM whose state is carried from sample to sample across the chunks (and for the
//! same model with `reset_state`).
//!
//! The reference here is the per-sample API ([`Calibrator::observe`] / [`Calibrator::end_pass`],
//! one [`Evaluator::add_chunk`] of all the samples), itself checked against ONNX Runtime and
//! PyTorch (`observers_real.rs`, `ptq.rs`, `onnx_streaming.rs`).

use microquant::compile::{CompileOptions, Compiled, compile};
use microquant::graph::Graph;
use microquant::ptq::*;
use microquant_tests::rng::SplitMix64;

use crate::onnx_golden;

/// Samples in memory, given at most `cut` at a time whatever is asked (chunk boundaries that
/// fall anywhere), counting its rewinds; `fail_at`: a read error at that sample.
struct Chunky<'a> {
    samples: &'a [Sample],
    cut: usize,
    at: usize,
    rewinds: usize,
    fail_at: Option<usize>,
    announce: usize,
}

impl<'a> Chunky<'a> {
    fn new(samples: &'a [Sample], cut: usize) -> Self {
        Self { samples, cut, at: 0, rewinds: 0, fail_at: None, announce: samples.len() }
    }
}

impl SampleSource for Chunky<'_> {
    fn sample_count(&self) -> usize {
        self.announce
    }
    fn rewind(&mut self) -> Result<(), SourceError> {
        self.at = 0;
        self.rewinds += 1;
        Ok(())
    }
    fn next_chunk(&mut self, max: usize) -> Result<&[Sample], SourceError> {
        let end = (self.at + max.min(self.cut)).min(self.samples.len());
        if let Some(f) = self.fail_at.filter(|&f| f < end) {
            return Err(SourceError::new(SourceErrorKind::Truncated, "the file ends here")
                .in_file("part_2.npy")
                .at_sample(f)
                .at_offset(128 + 48 * f as u64));
        }
        let c = &self.samples[self.at..end];
        self.at = end;
        Ok(c)
    }
}

fn normal_samples(len: usize, seed: u64, n: usize) -> Vec<Sample> {
    let mut r = SplitMix64::new(seed);
    let mut u = || ((r.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    (0..n)
        .map(|_| {
            vec![
                (0..len)
                    .map(|_| ((-2.0 * u().ln()).sqrt() * (2.0 * std::f64::consts::PI * u()).cos()) as f32)
                    .collect(),
            ]
        })
        .collect()
}

fn onnx_case(name: &str) -> (Graph, usize) {
    let m = onnx_golden::float_models().into_iter().find(|m| m.name == name).unwrap();
    let mut g = m.import().graph;
    prepare(&mut g).unwrap();
    let len = g.tensor(g.inputs[0]).unwrap().num_elements().unwrap();
    (g, len)
}

/// The per-sample path: every pass sample by sample.
fn calibrate_per_sample<'g>(g: &'g Graph, opts: &CalibrationOptions, samples: &[Sample]) -> Calibrator<'g> {
    let mut cal = Calibrator::new(g, opts).unwrap();
    while cal.pass() < cal.passes() {
        for s in samples {
            let inputs: Vec<&[f32]> = s.iter().map(Vec::as_slice).collect();
            cal.observe(&inputs).unwrap();
        }
        cal.end_pass().unwrap();
    }
    cal
}

fn report_json(cal: &Calibrator<'_>, q: &Quantized, c: &Compiled, samples: &[Sample], chunk: usize) -> String {
    let mut ev = Evaluator::new(cal, q, c, None).unwrap();
    for part in samples.chunks(chunk) {
        ev.add_chunk(part).unwrap();
    }
    assert_eq!(ev.samples(), samples.len());
    ev.finish().unwrap().to_json()
}

/// Streams `samples` through every step and checks each against the per-sample path.
fn check_stream_equals_per_sample(g: &Graph, opts: &CalibrationOptions, samples: &[Sample], what: &str) {
    let reference = calibrate_per_sample(g, opts, samples);
    for cut in [1, 5, CHUNK_SAMPLES, 1000] {
        let mut source = Chunky::new(samples, cut);
        let mut cal = Calibrator::new(g, opts).unwrap();
        let mut calls = 0;
        cal.calibrate_source(&mut source, &mut |p| {
            calls += 1;
            assert_eq!(p.total, samples.len());
        })
        .unwrap();
        // The automatic observers' error pass replays the samples their statistics pass kept
        // (calibration on the host, samples that fit in REPLAY_BYTES): one pass reads them.
        let replayed = opts.observer == ObserverKind::Auto && opts.overrides.is_empty();
        let reads = if replayed { 1 } else { cal.passes() as usize };
        assert_eq!(source.rewinds, reads, "{what}: one rewind per pass read");
        assert_eq!(calls, samples.len() * cal.passes() as usize, "{what}: one progress call per sample and pass");
        assert!(cal.to_state() == reference.to_state(), "{what}, chunks of {cut}: calibration state differs");
    }
    let q = quantize(&reference, &QuantizeOptions::default()).unwrap();
    let c = compile(&q.graph, &CompileOptions::default()).unwrap();
    let whole = report_json(&reference, &q, &c, samples, samples.len());
    assert_eq!(whole, evaluate(&reference, &q, &c, samples, None).unwrap().to_json(), "{what}");
    for chunk in [1, 3, CHUNK_SAMPLES] {
        assert_eq!(report_json(&reference, &q, &c, samples, chunk), whole, "{what}: evaluator in chunks of {chunk}");
    }
}

#[test]
fn every_observer_streams_as_it_runs_per_sample() {
    let (g, len) = onnx_case("conv_bn_opset13");
    let samples = normal_samples(len, 41, 37);
    for kind in [
        ObserverKind::MinMax,
        ObserverKind::MovingAverage,
        ObserverKind::Histogram,
        ObserverKind::Entropy,
        ObserverKind::Percentile(99.9),
        ObserverKind::Auto,
    ] {
        for two_pass in [true, false] {
            let opts = CalibrationOptions { observer: kind, two_pass, ..Default::default() };
            check_stream_equals_per_sample(&g, &opts, &samples, &format!("{} two_pass={two_pass}", kind.name()));
        }
    }
}

#[test]
fn convert_source_equals_convert() {
    let (g, len) = onnx_case("mlp_classifier_opset17");
    let samples = normal_samples(len, 43, 45);
    let labels: Vec<usize> = (0..samples.len()).map(|i| i % 3).collect();
    for observer in [ObserverKind::MinMax, ObserverKind::Entropy, ObserverKind::Auto] {
        let options =
            PtqOptions { calibration: CalibrationOptions { observer, ..Default::default() }, ..Default::default() };
        let mut slice_progress = Vec::new();
        let a = convert(&g, &samples, Some(&labels), &options, &mut |p| slice_progress.push(p)).unwrap();
        let mut source = Chunky::new(&samples, 7);
        let mut stream_progress = Vec::new();
        let b = convert_source(&g, &mut source, Some(&labels), &options, &mut |p| stream_progress.push(p)).unwrap();
        assert!(a.compiled.bytes == b.compiled.bytes, "{}: .mq bytes differ", observer.name());
        assert_eq!(a.report.to_json(), b.report.to_json(), "{}", observer.name());
        assert_eq!(slice_progress, stream_progress);
        let passes = stream_progress.last().unwrap().passes as usize;
        assert_eq!(stream_progress.len(), samples.len() * passes, "every calibration pass and the evaluation");
        assert!(b.report.model.float_accuracy.is_some());
    }
}

#[test]
fn a_streaming_lstm_carries_its_state_across_chunks() {
    let (c, g) = crate::onnx_streaming::case();
    let mut prepared = g.clone();
    prepare(&mut prepared).unwrap();
    let samples: Vec<Sample> = crate::onnx_streaming::frames(&c.calibration).into_iter().map(|f| vec![f]).collect();
    assert!(samples.len() > CHUNK_SAMPLES, "the stream spans several chunks");
    for reset_state in [false, true] {
        for observer in [ObserverKind::MinMax, ObserverKind::Histogram, ObserverKind::Auto] {
            let opts = CalibrationOptions { observer, reset_state, ..Default::default() };
            assert_eq!(Calibrator::new(&prepared, &opts).unwrap().carries_state(), !reset_state);
            check_stream_equals_per_sample(
                &prepared,
                &opts,
                &samples,
                &format!("LSTM {} reset_state={reset_state}", observer.name()),
            );
        }
        let options =
            PtqOptions { calibration: CalibrationOptions { reset_state, ..Default::default() }, ..Default::default() };
        let a = convert(&g, &samples, None, &options, &mut |_| {}).unwrap();
        let b = convert_source(&g, &mut Chunky::new(&samples, 3), None, &options, &mut |_| {}).unwrap();
        assert!(a.compiled.bytes == b.compiled.bytes);
        assert_eq!(a.report.to_json(), b.report.to_json());
    }
}

#[test]
fn source_errors_come_back_typed() {
    let (g, len) = onnx_case("conv_bn_opset13");
    let samples = normal_samples(len, 45, 20);
    let mut source = Chunky::new(&samples, 4);
    source.fail_at = Some(9);
    let e = convert_source(&g, &mut source, None, &PtqOptions::default(), &mut |_| {}).unwrap_err();
    let StreamError::Source(s) = &e else { panic!("{e}") };
    assert_eq!(
        (s.kind(), s.file(), s.sample(), s.offset()),
        (SourceErrorKind::Truncated, Some("part_2.npy"), Some(9), Some(560))
    );
    assert_eq!(e.to_string(), "part_2.npy: sample 9 (byte 560): truncated: the file ends here");

    // A source that gives fewer samples than it announced.
    let mut source = Chunky::new(&samples, 4);
    source.announce = 25;
    let e = convert_source(&g, &mut source, None, &PtqOptions::default(), &mut |_| {}).unwrap_err();
    assert!(matches!(&e, StreamError::Source(s) if s.kind() == SourceErrorKind::Count), "{e}");

    // No samples at all.
    let e = convert_source(&g, &mut Chunky::new(&[], 4), None, &PtqOptions::default(), &mut |_| {}).unwrap_err();
    assert!(matches!(e, StreamError::Convert(_)), "{e}");
}

/// The automatic observer's model-level choice measures the first
/// [`CalibrationOptions::selection_samples`] samples: calibration split over "workers" (each a
/// share of the samples, its state shipped as bytes and merged in order, pass by pass) keeps the
/// same samples, makes the same choice and the same `.mq` as one calibration; a state with more
/// kept samples than the calibrator keeps is refused.
#[test]
fn auto_split_over_workers_keeps_the_same_samples_and_choice() {
    let (g, len) = onnx_case("conv_bn_opset13");
    let samples = normal_samples(len, 47, 29);
    let opts = CalibrationOptions { observer: ObserverKind::Auto, selection_samples: 9, ..Default::default() };
    let whole = calibrate_per_sample(&g, &opts, &samples);
    let mut merged = Calibrator::new(&g, &opts).unwrap();
    while merged.pass() < merged.passes() {
        let start = merged.to_state();
        let mut parts = Vec::new();
        for part in [&samples[..4], &samples[4..17], &samples[17..]] {
            let mut w = Calibrator::new(&g, &opts).unwrap();
            w.load_state(&start).unwrap();
            for s in part {
                let inputs: Vec<&[f32]> = s.iter().map(Vec::as_slice).collect();
                w.observe(&inputs).unwrap();
            }
            parts.push(w.to_state());
        }
        let mut next = Calibrator::new(&g, &opts).unwrap();
        next.load_state(&start).unwrap();
        for p in &parts {
            let mut w = Calibrator::new(&g, &opts).unwrap();
            w.load_state(p).unwrap();
            next.merge(&w).unwrap();
        }
        next.end_pass().unwrap();
        merged = next;
    }
    assert!(merged.to_state() == whole.to_state(), "the merged statistics and kept samples differ");
    let qa = quantize(&whole, &QuantizeOptions::default()).unwrap();
    let qb = quantize(&merged, &QuantizeOptions::default()).unwrap();
    let choice = qa.range_choice.clone().expect("a model-level choice");
    assert_eq!(choice.samples, 9);
    assert_eq!(qb.range_choice, Some(choice.clone()));
    let ca = compile(&qa.graph, &CompileOptions::default()).unwrap();
    let cb = compile(&qb.graph, &CompileOptions::default()).unwrap();
    assert!(ca.bytes == cb.bytes, ".mq bytes differ");
    // The report says which policy won and why, and every automatic layer names the range taken.
    let json = evaluate(&whole, &qa, &ca, &samples, None).unwrap().to_json();
    assert!(json.contains(&format!("\"range_choice\":{{\"chosen\":\"{}\"", choice.chosen.name())), "{json}");
    assert!(json.contains("\"why\":\"the model-level choice"), "{json}");
    // No choice is made without kept samples: each tensor keeps its own range.
    let none = CalibrationOptions { selection_samples: 0, ..opts.clone() };
    let own = calibrate_per_sample(&g, &none, &samples);
    assert_eq!(quantize(&own, &QuantizeOptions::default()).unwrap().range_choice, None);
    // A state holding 9 kept samples does not load into a calibrator that keeps 5.
    let five = CalibrationOptions { selection_samples: 5, ..opts };
    let err = Calibrator::new(&g, &five).unwrap().load_state(&whole.to_state()).unwrap_err();
    assert!(err.to_string().contains("9 kept samples, this calibrator keeps 5"), "{err}");
}
