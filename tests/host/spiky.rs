//! The `auto` observer against outlier samples (`tests/golden/spiky/`, written by
//! `tests/gen/gen_spiky_calib.py`): the web demo's digits CNN calibrated on its 100 images, 4 of
//! which carry sensor spikes (3 pixels at 12.0, twelve times the largest clean pixel), measured
//! on 200 clean held-out images. ONNX Runtime 1.32.0's `quantize_static` with MinMax, Entropy,
//! Percentile (99.9, 99.99, 99.999) and Distribution on the same samples gives the peers'
//! figures: the SQNR of the int8 model's output against the float model's, pooled over the
//! evaluation images.
//!
//! Asserted: microquant's default (the `auto` observer, [`ObserverKind::Auto`]: per-tensor
//! candidates, the model's ranges chosen by the int8 output error) reaches at least 38 dB there
//! and beats every peer figure; the input's range leaves the spiked samples out; on the clean
//! images it is no worse than min/max by more than 0.5 dB.

use crate::peers_common::*;

use std::path::PathBuf;

use microquant::ptq::{CalibrationOptions, ObserverKind, PtqOptions, convert};
use serde_json::Value;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("golden").join("spiky")
}

fn demo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join("web-demo").join("examples")
}

/// SQNR on the evaluation images of the model calibrated on `calib` with `observer`, and the
/// report's record of the input layer's consumer.
fn sqnr(calib: &str, observer: ObserverKind) -> (f64, microquant::ptq::Report) {
    let imported = import(&demo().join("digits_cnn.onnx"));
    let calib_path = if calib == "clean" { demo().join("digits_calib.npy") } else { dir().join("calib_spiky.npy") };
    let calib = samples(&imported, &read_npy(&calib_path));
    let eval = samples(&imported, &read_npy(&dir().join("eval.npy")));
    let options =
        PtqOptions { calibration: CalibrationOptions { observer, ..Default::default() }, ..Default::default() };
    let out = convert(&imported.graph, &calib, None, &options, &mut |_| {}).unwrap();
    let r = out.evaluate(&eval, None).unwrap();
    (r.model.output_sqnr_db.unwrap_or(f64::INFINITY), r)
}

#[test]
fn the_default_beats_every_peer_on_spiky_calibration() {
    let peers: Value = serde_json::from_str(&std::fs::read_to_string(dir().join("peers.json")).unwrap()).unwrap();
    assert_eq!(CalibrationOptions::default().observer, ObserverKind::Auto, "auto is the default");
    let (auto, report) = sqnr("spiky", ObserverKind::Auto);
    let mut lines = vec![format!("microquant default (auto): {auto:.2} dB")];
    for kind in [
        ObserverKind::MinMax,
        ObserverKind::Histogram,
        ObserverKind::Entropy,
        ObserverKind::Percentile(99.9),
        ObserverKind::Percentile(99.999),
    ] {
        lines.push(format!("microquant {kind:?}: {:.2} dB", sqnr("spiky", kind).0));
    }
    let mut best_peer = f64::NEG_INFINITY;
    for (name, v) in peers["spiky_sqnr_db"].as_object().unwrap() {
        let v = v.as_f64().unwrap();
        lines.push(format!("ONNX Runtime {name}: {v:.2} dB"));
        best_peer = best_peer.max(v);
    }
    eprintln!("{}", lines.join("\n"));
    assert!(auto >= 38.0, "auto on spiky calibration: {auto:.2} dB < 38 dB\n{}", lines.join("\n"));
    assert!(auto > best_peer, "auto {auto:.2} dB <= best peer {best_peer:.2} dB\n{}", lines.join("\n"));
    // Every layer says what it chose; the first conv's range leaves the spikes out.
    let json = report.to_json();
    assert!(json.contains("\"observer\":\"auto\",\"choice\":"), "{json}");
    // The input's range leaves the 4 spiked samples out.
    let input = report.inputs[0].auto.as_ref().expect("the input's choice");
    assert_eq!(input.outliers, 4, "{json}");
    assert!(input.range().1 <= 1.0, "{json}");
    // The model-level choice is reported with every policy's score.
    let choice = report.model.range_choice.as_ref().expect("the model-level choice");
    assert!(choice.scores.iter().filter(|s| s.sqnr_db.is_some()).count() >= 2, "{json}");
    assert!(json.contains("\"range_choice\":{\"chosen\":"), "{json}");
    assert!(json.contains("\"inputs\":[{\"name\":\"x\"") && json.contains("(4 outlier samples left out)"), "{json}");
}

#[test]
fn the_default_on_clean_calibration_no_worse_than_minmax() {
    let (auto, _) = sqnr("clean", ObserverKind::Auto);
    let (minmax, _) = sqnr("clean", ObserverKind::MinMax);
    eprintln!("clean calibration: auto {auto:.2} dB, minmax {minmax:.2} dB");
    assert!(auto >= minmax - 0.5, "clean: auto {auto:.2} dB, minmax {minmax:.2} dB");
}
