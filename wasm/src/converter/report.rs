//! The per-layer quantization report as a plain JS object (camelCase keys), shared by
//! `QuantizedModel.report` and `HybridModel.report`.

use js_sys::{Array, Object};
use microquant::ptq::Report;
use wasm_bindgen::prelude::*;

use crate::js::{set, usize_array};

fn opt_f64(v: Option<f64>) -> JsValue {
    match v {
        Some(x) if x.is_finite() => JsValue::from_f64(x),
        _ => JsValue::NULL,
    }
}

/// The report with camelCase keys (the same fields as `microquant::ptq::Report::to_json`).
pub(super) fn report_object(r: &Report) -> Object {
    let m = &r.model;
    let model = Object::new();
    set(&model, "mode", m.mode);
    set(&model, "samples", m.samples as f64);
    set(&model, "top1Agreement", opt_f64(m.top1_agreement));
    set(&model, "floatAccuracy", opt_f64(m.float_accuracy));
    set(&model, "int8Accuracy", opt_f64(m.int8_accuracy));
    set(&model, "outputSqnrDb", opt_f64(m.output_sqnr_db));
    set(&model, "floatWeightBytes", m.float_weight_bytes as f64);
    set(&model, "int8WeightBytes", m.int8_weight_bytes as f64);
    set(&model, "modelBytes", m.model_bytes as f64);
    set(&model, "arenaBytes", m.arena_bytes as f64);
    set(&model, "macs", m.macs as f64);
    if let Some(c) = &m.range_choice {
        let o = Object::new();
        set(&o, "chosen", c.chosen.name());
        set(&o, "why", c.why().as_str());
        set(&o, "samples", c.samples as f64);
        let scores: Array = c
            .scores
            .iter()
            .map(|x| {
                let s = Object::new();
                set(&s, "policy", x.policy.name());
                set(&s, "sqnrDb", opt_f64(x.sqnr_db));
                set(&s, "samples", x.samples as f64);
                JsValue::from(s)
            })
            .collect();
        set(&o, "scores", scores);
        set(&model, "rangeChoice", o);
    }
    let io = |list: &[microquant::ptq::IoQuant]| -> Array {
        list.iter()
            .map(|t| {
                let o = Object::new();
                set(&o, "name", t.name.as_str());
                set(&o, "shape", usize_array(&t.shape));
                set(&o, "dtype", t.dtype);
                set(&o, "scale", opt_f64(Some(f64::from(t.scale))));
                set(&o, "zeroPoint", t.zero_point);
                if let Some(c) = &t.auto {
                    set(&o, "choice", c.name());
                    set(&o, "why", c.why().as_str());
                }
                JsValue::from(o)
            })
            .collect()
    };
    let layers: Array = r
        .layers
        .iter()
        .map(|l| {
            let o = Object::new();
            set(&o, "index", l.index as f64);
            set(&o, "name", l.name.as_str());
            set(&o, "op", l.op.as_str());
            set(&o, "output", l.output.as_str());
            set(&o, "dtype", l.dtype);
            set(&o, "scale", opt_f64(Some(f64::from(l.scale))));
            set(&o, "zeroPoint", l.zero_point);
            set(&o, "qparams", l.qparams);
            set(&o, "observer", l.observer);
            if let Some(c) = &l.auto {
                set(&o, "choice", c.name());
                set(&o, "why", c.why().as_str());
            }
            let range: Array = [l.range.0, l.range.1].iter().map(|&v| JsValue::from_f64(f64::from(v))).collect();
            set(&o, "range", range);
            match l.weight_scales {
                Some((lo, hi, n)) => {
                    let w = Object::new();
                    set(&w, "min", lo);
                    set(&w, "max", hi);
                    set(&w, "count", n as f64);
                    set(&o, "weightScales", w);
                }
                None => set(&o, "weightScales", JsValue::NULL),
            }
            match l.weight_bits {
                Some(b) => set(&o, "weightBits", f64::from(b)),
                None => set(&o, "weightBits", JsValue::NULL),
            }
            set(&o, "sqnrDb", opt_f64(l.sqnr_db));
            set(&o, "maxAbsError", l.max_abs_error);
            set(&o, "elements", l.elements as f64);
            JsValue::from(o)
        })
        .collect();
    let o = Object::new();
    set(&o, "model", model);
    set(&o, "inputs", io(&r.inputs));
    set(&o, "outputs", io(&r.outputs));
    set(&o, "layers", layers);
    o
}
