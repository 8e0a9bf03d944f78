//! `Calibration`, the JS class of calibration statistics: one observer per activation, fed in
//! chunks (cancellable, with progress), saved as bytes and merged across workers.

use alloc::format;
use alloc::rc::Rc;
use alloc::string::String;
use alloc::vec::Vec;
use core::cell::RefCell;

use js_sys::{Array, Function, Object, Promise, Reflect, Symbol, Uint8Array};
use microquant::graph::Graph;
use microquant::ptq::{CalibrationOptions, Calibrator, ReplaySamples};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use super::control::{Control, promise};
use super::float_graph::FloatGraph;
use crate::error::{Context, error, type_error};
use crate::js::{self, describe, get, set};

/// What a `Calibration` shares with its running task: the statistics and where they are.
pub(super) struct CalState {
    /// `Calibrator::to_state` bytes (`None`: nothing observed yet).
    pub(super) bytes: Option<Vec<u8>>,
    pub(super) pass: u32,
    pub(super) passes: u32,
    pub(super) samples: usize,
    pub(super) busy: bool,
    /// What the automatic observers kept of the samples this object observed in the first pass
    /// with `keepForReplay` ([`Calibration::replay_pass`]).
    pub(super) replay: Option<ReplaySamples>,
}

/// Bytes of the first pass's samples a calibration keeps in wasm memory so that the automatic
/// observers' error pass does not run the float graph again ([`Calibrator::keep_for_replay`]):
/// 256 MB, as the host. At most 32 KB per activation and sample (8192 values: 32 samples of
/// mobilenet_v2 take 157 MB); more samples than fit take the second pass as before. A Web Worker
/// of `calibrateInWorkers` keeps its share of the samples (each at most this much), the
/// main thread's `calibrate` its own until the pass is measured.
pub(super) const REPLAY_BYTES: usize = 256 << 20;

/// The result of a calibration run.
pub(super) struct Calibrated {
    pub(super) bytes: Vec<u8>,
    pass: u32,
    passes: u32,
    samples: usize,
    /// With `keep` in the first pass: what was kept of its samples.
    replay: Option<ReplaySamples>,
}

/// A calibrator of `g` with `opts`, holding `state` (`toState()` bytes) if given.
pub(super) fn calibrator<'g>(
    g: &'g Graph,
    opts: &CalibrationOptions,
    state: Option<&[u8]>,
) -> Result<Calibrator<'g>, JsValue> {
    let mut cal = Calibrator::new(g, opts).ctx("calibration options")?;
    if let Some(s) = state {
        cal.load_state(s).ctx("")?;
    }
    Ok(cal)
}

/// Runs `data` through the calibrator: the current pass only, or every remaining pass. With
/// every pass from the start, the automatic observers' error pass is measured from what they
/// kept of the first pass when the samples fit in [`REPLAY_BYTES`] (the same statistics bit for
/// bit, without a second run of the float graph). `keep`: in the first pass, what the observers
/// keep of these samples (when they fit in that many bytes) is returned, for
/// [`Calibration::replay_pass`].
pub(super) async fn calibrate_task(
    model: &FloatGraph,
    opts: &CalibrationOptions,
    state: Option<&[u8]>,
    data: &[Vec<Vec<f32>>],
    all_passes: bool,
    keep: Option<usize>,
    ctl: &mut Control,
) -> Result<Calibrated, JsValue> {
    ctl.check_abort()?;
    let mut cal = calibrator(&model.graph, opts, state)?;
    if cal.pass() >= cal.passes() {
        return Err(error("the calibration is complete: no pass left to observe"));
    }
    let n = data.len();
    // Every pass over these samples alone: the error pass can be replayed.
    let replayable = all_passes && cal.pass() == 0 && cal.samples() == 0;
    let keeping = match keep {
        Some(cap) if !all_passes => cal.keep_for_replay(n, cap),
        _ => replayable && cal.keep_for_replay(n, REPLAY_BYTES),
    };
    loop {
        let (pass, passes) = (cal.pass(), cal.passes());
        if replayable && cal.replay_error_pass().ctx("replaying the error pass")? {
            ctl.tick(true, "calibrate", pass, passes, n, n).await?;
            if cal.pass() >= cal.passes() {
                break;
            }
            continue;
        }
        for (i, s) in data.iter().enumerate() {
            let inputs: Vec<&[f32]> = s.iter().map(Vec::as_slice).collect();
            cal.observe(&inputs).ctx(&format!("calibration sample {i}"))?;
            ctl.tick(i + 1 == n, "calibrate", pass, passes, i + 1, n).await?;
        }
        if !all_passes {
            break;
        }
        cal.end_pass().ctx("ending the calibration pass")?;
        if cal.pass() >= cal.passes() {
            break;
        }
    }
    let replay = if keeping && !all_passes { cal.take_replay() } else { None };
    Ok(Calibrated { bytes: cal.to_state(), pass: cal.pass(), passes: cal.passes(), samples: cal.samples(), replay })
}

/// Whether `samples` is a stream of batches: an async iterable (an object with a
/// `[Symbol.asyncIterator]` method) or a function that returns one (called once per pass).
pub(super) fn is_batch_stream(samples: &JsValue) -> bool {
    samples.is_function()
        || (samples.is_object() && Reflect::get(samples, &Symbol::async_iterator()).is_ok_and(|f| f.is_function()))
}

/// An async iterator over the batches of `source` for `pass` (0-based, of `passes`): a function
/// is called for a new iterable; an iterable is asked for a new iterator. An iterator that is
/// the one the last pass used up (an async generator object returns itself) cannot start over:
/// an `Error` that says what to pass instead.
fn open_batches(source: &JsValue, previous: Option<&JsValue>, pass: u32, passes: u32) -> Result<JsValue, JsValue> {
    let iterable = match source.dyn_ref::<Function>() {
        Some(f) => f.call0(&JsValue::UNDEFINED)?,
        None => source.clone(),
    };
    let open = Reflect::get(&iterable, &Symbol::async_iterator())
        .ok()
        .and_then(|f| f.dyn_into::<Function>().ok())
        .ok_or_else(|| type_error("samples: the function did not return an async iterable of batches"))?;
    let iterator = open.call0(&iterable)?;
    if previous.is_some_and(|p| Object::is(p, &iterator)) {
        return Err(error(format!(
            "samples: this calibration needs {passes} passes over the data and the async iterable cannot start over \
             for pass {} (an async generator is used up after one pass): pass a function that returns a new \
             iterable for each pass (() => batches()), or an object whose [Symbol.asyncIterator]() starts over",
            pass + 1
        )));
    }
    Ok(iterator)
}

/// Tells the iterator the calibration stopped early (its `return()`, if any: an async
/// generator runs its `finally` blocks), ignoring what that returns.
fn close_batches(iterator: &JsValue) {
    if let Some(f) = Reflect::get(iterator, &"return".into()).ok().and_then(|f| f.dyn_into::<Function>().ok()) {
        let _ = f.call0(iterator);
    }
}

/// The next batch of `iterator` (`None` when it is done).
async fn next_batch(iterator: &JsValue, batch: usize) -> Result<Option<JsValue>, JsValue> {
    let next = Reflect::get(iterator, &"next".into())
        .ok()
        .and_then(|f| f.dyn_into::<Function>().ok())
        .ok_or_else(|| type_error("samples: the async iterator has no next() method"))?;
    let step = JsFuture::from(Promise::resolve(&next.call0(iterator)?))
        .await
        .map_err(|e| annotate(e, &format!("samples: batch {batch}")))?;
    if get(&step, "done").as_bool().unwrap_or(false) {
        return Ok(None);
    }
    Ok(Some(get(&step, "value")))
}

/// `e` (a JS value thrown by user code) with `what` before its message when it is an `Error`.
fn annotate(e: JsValue, what: &str) -> JsValue {
    match e.dyn_ref::<js_sys::Error>() {
        Some(err) => error(format!("{what}: {}", String::from(err.message()))),
        None => e,
    }
}

/// [`calibrate_task`] over a stream of batches ([`is_batch_stream`]): each batch (any form of
/// `Samples`) is converted, observed and dropped, so memory does not grow with the number of
/// samples. Every pass iterates the source again ([`open_batches`]). Progress: `total` is the
/// count of the last pass (the first pass counts up).
pub(super) async fn calibrate_stream_task(
    model: &FloatGraph,
    opts: &CalibrationOptions,
    state: Option<&[u8]>,
    source: &JsValue,
    all_passes: bool,
    ctl: &mut Control,
) -> Result<Calibrated, JsValue> {
    ctl.check_abort()?;
    let mut cal = calibrator(&model.graph, opts, state)?;
    if cal.pass() >= cal.passes() {
        return Err(error("the calibration is complete: no pass left to observe"));
    }
    let mut previous: Option<JsValue> = None;
    let mut last_total = 0usize;
    loop {
        let (pass, passes) = (cal.pass(), cal.passes());
        let iterator = open_batches(source, previous.as_ref(), pass, passes)?;
        let mut done = 0usize;
        let mut batch = 0usize;
        let r: Result<(), JsValue> = async {
            while let Some(value) = next_batch(&iterator, batch).await? {
                let data = model.samples(&value, &format!("samples: batch {batch}"))?;
                for s in &data {
                    let inputs: Vec<&[f32]> = s.iter().map(Vec::as_slice).collect();
                    cal.observe(&inputs).ctx(&format!("calibration sample {done} (batch {batch})"))?;
                    done += 1;
                    ctl.tick(false, "calibrate", pass, passes, done, last_total.max(done)).await?;
                }
                batch += 1;
            }
            Ok(())
        }
        .await;
        if let Err(e) = r {
            close_batches(&iterator);
            return Err(e);
        }
        if done == 0 {
            return Err(error(format!("samples: the async iterable gave no sample in pass {} of {passes}", pass + 1)));
        }
        ctl.tick(true, "calibrate", pass, passes, done, done).await?;
        last_total = done;
        previous = Some(iterator);
        if !all_passes {
            break;
        }
        cal.end_pass().ctx("ending the calibration pass")?;
        if cal.pass() >= cal.passes() {
            break;
        }
    }
    Ok(Calibrated {
        bytes: cal.to_state(),
        pass: cal.pass(),
        passes: cal.passes(),
        samples: cal.samples(),
        replay: None,
    })
}

/// Calibration statistics: one observer per activation of a `FloatModel`. Feed it samples with
/// `calibrate` (every pass) or `observe` + `endPass` (pass by pass); split the data over Web
/// Workers and combine their `toState()` bytes with `merge`.
#[wasm_bindgen]
pub struct Calibration {
    pub(super) model: Rc<FloatGraph>,
    pub(super) options: CalibrationOptions,
    pub(super) state: Rc<RefCell<CalState>>,
}

impl core::fmt::Debug for Calibration {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let s = self.state.borrow();
        write!(
            f,
            "Calibration({}, pass {} of {}, {} samples)",
            self.options.observer.name(),
            s.pass,
            s.passes,
            s.samples
        )
    }
}

impl Calibration {
    fn run(&self, samples: JsValue, options: JsValue, all_passes: bool) -> Promise {
        let model = self.model.clone();
        let opts = self.options.clone();
        let state = self.state.clone();
        promise(async move {
            let (bytes, kept) = {
                let mut s = state.borrow_mut();
                if s.busy {
                    return Err(error("a calibration is already running on this object"));
                }
                s.busy = true;
                (s.bytes.clone(), s.replay.as_ref().map_or(0, ReplaySamples::bytes))
            };
            let r = async {
                let options = js::options(&options, "options")?;
                let keep = js::opt_bool(&options, "keepForReplay", false)?;
                let mut ctl = Control::from_options(&options)?;
                if is_batch_stream(&samples) {
                    return calibrate_stream_task(&model, &opts, bytes.as_deref(), &samples, all_passes, &mut ctl)
                        .await;
                }
                let data = model.samples(&samples, "samples")?;
                let keep = keep.then(|| REPLAY_BYTES.saturating_sub(kept));
                calibrate_task(&model, &opts, bytes.as_deref(), &data, all_passes, keep, &mut ctl).await
            }
            .await;
            let mut s = state.borrow_mut();
            s.busy = false;
            let c = r?;
            // Kept samples go with the first pass they were observed in (appended in order).
            s.replay = match (s.replay.take(), c.replay) {
                _ if c.pass > 0 => None,
                (Some(mut a), Some(b)) => a.append(b).then_some(a),
                (None, b) => b,
                (Some(_), None) => None,
            };
            s.bytes = Some(c.bytes);
            s.pass = c.pass;
            s.passes = c.passes;
            s.samples = c.samples;
            Ok(JsValue::UNDEFINED)
        })
    }

    fn with_calibrator<R>(&self, f: impl FnOnce(&mut Calibrator<'_>) -> Result<R, JsValue>) -> Result<R, JsValue> {
        let s = self.state.try_borrow().map_err(|_| error("the calibration is busy"))?;
        if s.busy {
            return Err(error("a calibration is running on this object"));
        }
        let mut cal = calibrator(&self.model.graph, &self.options, s.bytes.as_deref())?;
        drop(s);
        f(&mut cal)
    }

    fn commit(&self, cal: &Calibrator<'_>) {
        let mut s = self.state.borrow_mut();
        s.bytes = Some(cal.to_state());
        s.pass = cal.pass();
        s.passes = cal.passes();
        s.samples = cal.samples();
    }
}

#[wasm_bindgen]
impl Calibration {
    /// The current pass (0-based; `passes` once complete).
    #[wasm_bindgen(getter)]
    pub fn pass(&self) -> u32 {
        self.state.borrow().pass
    }

    /// Passes over the data the observers need (1, or 2 for two-pass histograms).
    #[wasm_bindgen(getter)]
    pub fn passes(&self) -> u32 {
        self.state.borrow().passes
    }

    /// Samples observed in the current pass.
    #[wasm_bindgen(getter)]
    pub fn samples(&self) -> usize {
        self.state.borrow().samples
    }

    /// True once every pass has ended (ready for `FloatModel.quantize`).
    #[wasm_bindgen(getter)]
    pub fn complete(&self) -> bool {
        let s = self.state.borrow();
        s.pass >= s.passes
    }

    /// The default observer's name.
    #[wasm_bindgen(getter)]
    pub fn observer(&self) -> String {
        String::from(self.options.observer.name())
    }

    /// Observes `samples` in every remaining pass (a `Promise`). `samples`: `.npy` bytes, a
    /// `Float32Array` of one or more samples back to back, or an array of samples, in the
    /// model's layout; or a stream of such batches, so that memory does not grow with the data:
    /// an async iterable that starts over when asked again (`[Symbol.asyncIterator]()`), or a
    /// function returning a new async iterable for each pass (an async generator alone serves
    /// one pass: enough for min/max, not for two-pass histograms, which say so). `options`: `onProgress({stage, pass, passes, done, total})`, `signal`
    /// (an `AbortSignal`: the promise rejects with its reason and the calibration is left as it
    /// was), `chunkMs` (work between yields to the event loop, default 40).
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn calibrate(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Samples | SampleBatches")] samples: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "ProgressOptions")] options: Option<JsValue>,
    ) -> Promise {
        let options = options.unwrap_or(JsValue::UNDEFINED);
        self.run(samples, options, true)
    }

    /// Observes `samples` in the current pass only (a `Promise`), as `calibrate`; call
    /// `endPass()` when every sample of the pass has been seen (here or in merged states).
    /// `options.keepForReplay` (default false): in the first pass, with `"auto"` observers and
    /// samples given whole (not a stream), keep what the error pass needs of them (at most 256 MB
    /// in all) so that `replayPass()` measures that pass without running the model again.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn observe(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Samples | SampleBatches")] samples: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "ObserveOptions")] options: Option<JsValue>,
    ) -> Promise {
        let options = options.unwrap_or(JsValue::UNDEFINED);
        self.run(samples, options, false)
    }

    /// In the last pass (the automatic observers' error pass), before any sample of it: observes
    /// the samples this object observed in the first pass with `keepForReplay: true`, from what
    /// their observers kept of them, without running the model (the same statistics bit for bit
    /// as `observe` on the same samples again). True if done; false (nothing done) if nothing
    /// was kept (the samples did not fit in 256 MB, the observers are not all `"auto"`, the pass
    /// is another one, or the object observed samples in the first pass without the option):
    /// `observe` the samples then. The kept samples are freed either way.
    #[wasm_bindgen(js_name = replayPass)]
    pub fn replay_pass(&self) -> Result<bool, JsValue> {
        let kept = {
            let mut s = self.state.try_borrow_mut().map_err(|_| error("the calibration is busy"))?;
            if s.busy {
                return Err(error("a calibration is running on this object"));
            }
            s.replay.take()
        };
        let Some(kept) = kept else { return Ok(false) };
        self.with_calibrator(|cal| {
            let done = cal.replay_pass(kept).ctx("replaying the error pass")?;
            if done {
                self.commit(cal);
            }
            Ok(done)
        })
    }

    /// Ends the current pass (two-pass histograms fix their ranges from the first pass).
    #[wasm_bindgen(js_name = endPass)]
    pub fn end_pass(&self) -> Result<(), JsValue> {
        self.with_calibrator(|cal| {
            cal.end_pass().ctx("ending the calibration pass")?;
            self.commit(cal);
            Ok(())
        })
    }

    /// The statistics as bytes (transferable to and from workers): pass, sample count and every
    /// observer's state.
    #[wasm_bindgen(js_name = toState)]
    pub fn to_state(&self) -> Result<Uint8Array, JsValue> {
        self.with_calibrator(|cal| Ok(Uint8Array::from(cal.to_state().as_slice())))
    }

    /// Replaces the statistics with `toState()` bytes of a calibration of the same model with
    /// the same options (an `Error` with the byte offset otherwise).
    #[wasm_bindgen(js_name = loadState)]
    pub fn load_state(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array")] state: JsValue,
    ) -> Result<(), JsValue> {
        let bytes = js::bytes(&state, "state")?;
        self.with_calibrator(|cal| {
            cal.load_state(&bytes).ctx("")?;
            self.commit(cal);
            Ok(())
        })
    }

    /// Folds in another calibration's statistics (a `Calibration` of the same model and options,
    /// or its `toState()` bytes), e.g. from workers that each observed a share of the samples in
    /// the same pass. Exact: the merged ranges are those of one calibration over all the data.
    pub fn merge(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Calibration | Uint8Array")] other: JsValue,
    ) -> Result<(), JsValue> {
        let bytes = if other.dyn_ref::<Uint8Array>().is_some() || other.dyn_ref::<js_sys::ArrayBuffer>().is_some() {
            js::bytes(&other, "other")?
        } else {
            let f = get(&other, "toState");
            let f = f.dyn_ref::<Function>().ok_or_else(|| {
                type_error(format!("merge() takes a Calibration or its toState() bytes, got {}", describe(&other)))
            })?;
            js::bytes(&f.call0(&other)?, "other.toState()")?
        };
        self.with_calibrator(|cal| {
            let mut theirs = calibrator(&self.model.graph, &self.options, None)?;
            theirs.load_state(&bytes).ctx("")?;
            cal.merge(&theirs).ctx("merging calibrations")?;
            self.commit(cal);
            Ok(())
        })
    }

    /// A copy (same model, options and statistics).
    #[wasm_bindgen(js_name = clone)]
    pub fn clone_js(&self) -> Calibration {
        let s = self.state.borrow();
        let state = CalState {
            bytes: s.bytes.clone(),
            pass: s.pass,
            passes: s.passes,
            samples: s.samples,
            busy: false,
            replay: None,
        };
        Calibration { model: self.model.clone(), options: self.options.clone(), state: Rc::new(RefCell::new(state)) }
    }

    /// The calibrated range of every activation: `{tensor, name, observer, min, max}` (activations
    /// whose observer has no data yet are left out).
    #[wasm_bindgen(unchecked_return_type = "ActivationRange[]")]
    pub fn ranges(&self) -> Result<Array, JsValue> {
        self.with_calibrator(|cal| {
            let g = &self.model.graph;
            let mut ids: Vec<_> = g.inputs.clone();
            ids.extend(g.nodes.iter().filter_map(|n| n.output(0)));
            Ok(ids
                .into_iter()
                .filter_map(|t| {
                    let (lo, hi) = cal.range(t).ok()?;
                    let o = Object::new();
                    set(&o, "tensor", t.0);
                    set(&o, "name", g.tensor(t).map(|t| t.name.as_str()).unwrap_or(""));
                    set(&o, "observer", cal.kind(t).map(|k| k.name()).unwrap_or(""));
                    set(&o, "min", lo);
                    set(&o, "max", hi);
                    Some(JsValue::from(o))
                })
                .collect())
        })
    }
}
