//! AdaRound in JS: the `adaround` option of `quantize` and `calibrateAndQuantize`, run step by
//! step (a sample, then some optimization steps, between yields to the event loop) so that it
//! reports progress (`stage: "adaround"`, pass 0 the samples, pass 1 the optimization) and stops
//! when the `AbortSignal` fires.

use alloc::format;
use alloc::vec::Vec;

use microquant::graph::Graph;
use microquant::ptq::adaround::AdaRound;
use microquant::ptq::{AdaRoundOptions, AdaRounding, QuantizeOptions};
use wasm_bindgen::prelude::*;

use super::control::Control;
use crate::error::{Context, range_error, type_error};
use crate::js::{self, describe, get};

/// Optimization steps between checks of the clock (each runs every layer's group once).
const STEPS: usize = 10;

/// `options.adaround`: absent or `false` (none), `true` (the defaults) or `{iterations, patches,
/// seed}`.
pub(super) fn adaround_option(options: &JsValue) -> Result<Option<AdaRoundOptions>, JsValue> {
    let v = get(options, "adaround");
    if v.is_undefined() || v.is_null() || v.as_bool() == Some(false) {
        return Ok(None);
    }
    let mut o = AdaRoundOptions::default();
    if v.as_bool() == Some(true) {
        return Ok(Some(o));
    }
    if !v.is_object() || js_sys::Array::is_array(&v) {
        return Err(type_error(format!(
            "options.adaround must be true or {{iterations, patches, seed}}, got {}",
            describe(&v)
        )));
    }
    let count = |key: &str, min: f64| -> Result<Option<f64>, JsValue> {
        match js::opt_number(&v, key)? {
            Some(n) if !(n >= min && n.fract() == 0.0 && n <= 9_007_199_254_740_991.0) => {
                Err(range_error(format!("options.adaround.{key} must be an integer >= {min}, got {n}")))
            }
            n => Ok(n),
        }
    };
    if let Some(n) = count("iterations", 1.0)? {
        o.iterations = n as usize;
    }
    if let Some(n) = count("patches", 1.0)? {
        o.patches = n as usize;
    }
    if let Some(n) = count("seed", 0.0)? {
        o.seed = n as u64;
    }
    Ok(Some(o))
}

/// AdaRound of `graph` (the calibrated float graph) on `samples`, with progress and abort.
pub(super) async fn adaround_task(
    graph: &Graph,
    quantize: &QuantizeOptions,
    options: &AdaRoundOptions,
    samples: &[Vec<Vec<f32>>],
    ctl: &mut Control,
) -> Result<AdaRounding, JsValue> {
    let total = samples.len();
    let mut ada = AdaRound::new(graph, quantize, options, total).ctx("AdaRound")?;
    ctl.tick(true, "adaround", 0, 2, 0, total).await?;
    for (i, s) in samples.iter().enumerate() {
        let inputs: Vec<&[f32]> = s.iter().map(Vec::as_slice).collect();
        ada.add_sample(&inputs).ctx("AdaRound")?;
        ctl.tick(false, "adaround", 0, 2, i + 1, total).await?;
    }
    let all = ada.total_iterations();
    let mut done = 0;
    ctl.tick(true, "adaround", 1, 2, 0, all).await?;
    loop {
        let ran = ada.optimize(STEPS).ctx("AdaRound")?;
        if ran == 0 {
            break;
        }
        done += ran;
        ctl.tick(false, "adaround", 1, 2, done, all).await?;
    }
    ctl.tick(true, "adaround", 1, 2, all, all).await?;
    ada.finish().ctx("AdaRound")
}
