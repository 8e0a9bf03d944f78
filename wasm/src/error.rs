//! JS errors: every failure becomes an `Error` (or a `TypeError` for a value of the wrong kind)
//! whose message names the problem, built from core's `Display` text.

use alloc::string::String;
use core::fmt::Display;

use wasm_bindgen::JsValue;

/// A JS `Error` with `message`.
pub(crate) fn error(message: impl AsRef<str>) -> JsValue {
    js_sys::Error::new(message.as_ref()).into()
}

/// A JS `TypeError` with `message` (a value of the wrong kind was passed).
pub(crate) fn type_error(message: impl AsRef<str>) -> JsValue {
    js_sys::TypeError::new(message.as_ref()).into()
}

/// A JS `RangeError` with `message` (a number outside its allowed range).
pub(crate) fn range_error(message: impl AsRef<str>) -> JsValue {
    js_sys::RangeError::new(message.as_ref()).into()
}

/// An `Error` named `AbortError` (what `AbortSignal` consumers reject with when the signal has
/// no reason).
pub(crate) fn abort_error() -> JsValue {
    let e = js_sys::Error::new("the operation was aborted");
    e.set_name("AbortError");
    e.into()
}

/// `result.ctx("loading the model")?`: the error's text, prefixed with what was being done.
pub(crate) trait Context<T> {
    /// Maps the error to a JS `Error` whose message is `"{what}: {error}"`.
    fn ctx(self, what: &str) -> Result<T, JsValue>;
}

impl<T, E: Display> Context<T> for Result<T, E> {
    fn ctx(self, what: &str) -> Result<T, JsValue> {
        self.map_err(|e| {
            let mut m = String::from(what);
            if !m.is_empty() {
                m.push_str(": ");
            }
            m.push_str(&alloc::format!("{e}"));
            error(m)
        })
    }
}
