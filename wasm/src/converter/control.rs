//! Long operations in JS: the progress callback, the `AbortSignal` and the chunks of work between
//! yields to the event loop (`Control`), and the `Promise` that wraps each operation.

use alloc::format;

use js_sys::{Function, Object, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use crate::error::{abort_error, range_error, type_error};
use crate::js::{self, describe, get, set};

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(handler: &Function, timeout: i32) -> JsValue;
}

/// `future_to_promise` of `f`, boxed: one copy of the executor glue for every promise-returning
/// method (instead of one per future type).
pub(super) fn promise(f: impl core::future::Future<Output = Result<JsValue, JsValue>> + 'static) -> Promise {
    let f: core::pin::Pin<alloc::boxed::Box<dyn core::future::Future<Output = Result<JsValue, JsValue>>>> =
        alloc::boxed::Box::pin(f);
    future_to_promise(f)
}

/// Lets the event loop run (a `setTimeout(0)` macrotask): pending messages, clicks and
/// `AbortSignal` events are handled before the next chunk of work.
pub(super) async fn yield_now() {
    let p = Promise::new(&mut |resolve, _| {
        set_timeout(&resolve, 0);
    });
    let _ = wasm_bindgen_futures::JsFuture::from(p).await;
}

pub(super) fn now_ms() -> f64 {
    js_sys::Date::now()
}

/// Progress callback, abort signal and chunk length of a long operation.
pub(super) struct Control {
    progress: Option<Function>,
    signal: JsValue,
    chunk_ms: f64,
    last_yield: f64,
}

impl Control {
    pub(super) fn from_options(options: &JsValue) -> Result<Self, JsValue> {
        let progress = js::opt_function(options, "onProgress")?;
        let signal = get(options, "signal");
        if !(signal.is_undefined() || signal.is_null()) && get(&signal, "aborted").as_bool().is_none() {
            return Err(type_error(format!("options.signal must be an AbortSignal, got {}", describe(&signal))));
        }
        let chunk_ms = js::opt_number(options, "chunkMs")?.unwrap_or(40.0);
        if chunk_ms < 0.0 {
            return Err(range_error(format!("options.chunkMs must be >= 0, got {chunk_ms}")));
        }
        Ok(Self { progress, signal, chunk_ms, last_yield: now_ms() })
    }

    /// The chunk length (`options.chunkMs`).
    pub(super) fn chunk_ms(&self) -> f64 {
        self.chunk_ms
    }

    /// Rejects with the signal's reason (or an `AbortError`) once it is aborted.
    pub(super) fn check_abort(&self) -> Result<(), JsValue> {
        if get(&self.signal, "aborted").as_bool() == Some(true) {
            let reason = get(&self.signal, "reason");
            return Err(if reason.is_undefined() { abort_error() } else { reason });
        }
        Ok(())
    }

    /// Calls `onProgress({stage, pass, passes, done, total})`.
    pub(super) fn report(&self, stage: &str, pass: u32, passes: u32, done: usize, total: usize) -> Result<(), JsValue> {
        if let Some(f) = &self.progress {
            let o = Object::new();
            set(&o, "stage", stage);
            set(&o, "pass", pass);
            set(&o, "passes", passes);
            set(&o, "done", done as f64);
            set(&o, "total", total as f64);
            f.call1(&JsValue::NULL, &o)?;
        }
        Ok(())
    }

    /// After a unit of work: if the chunk time is up (or `force`), report progress, yield to the
    /// event loop and check the signal.
    pub(super) async fn tick(
        &mut self,
        force: bool,
        stage: &str,
        pass: u32,
        passes: u32,
        done: usize,
        total: usize,
    ) -> Result<(), JsValue> {
        if force || now_ms() - self.last_yield >= self.chunk_ms {
            self.report(stage, pass, passes, done, total)?;
            yield_now().await;
            self.check_abort()?;
            self.last_yield = now_ms();
        }
        Ok(())
    }
}
