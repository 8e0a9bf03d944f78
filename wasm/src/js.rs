//! Reading JS values: option objects, typed arrays, and the names of values for error messages.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use js_sys::{Array, Function, Object, Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};

use crate::error::{range_error, type_error};

/// `obj[key]` (`undefined` for a missing key or a non-object).
pub(crate) fn get(obj: &JsValue, key: &str) -> JsValue {
    if !obj.is_object() && !obj.is_function() {
        return JsValue::UNDEFINED;
    }
    Reflect::get(obj, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
}

/// `obj[key] = value` on a fresh plain object (cannot fail).
pub(crate) fn set(obj: &Object, key: &str, value: impl Into<JsValue>) {
    let _ = Reflect::set(obj, &JsValue::from_str(key), &value.into());
}

/// A short description of a value for messages: `a QTensor`, `an Int8Array`, `a string`, `null`.
pub(crate) fn describe(v: &JsValue) -> String {
    if v.is_undefined() {
        return "undefined".into();
    }
    if v.is_null() {
        return "null".into();
    }
    if is_qtensor(v) {
        return "a QTensor (quantized data)".into();
    }
    if let Some(s) = v.as_string() {
        return format!("a string ({:?})", s.chars().take(24).collect::<String>());
    }
    if v.as_f64().is_some() {
        return "a number".into();
    }
    if v.as_bool().is_some() {
        return "a boolean".into();
    }
    if Array::is_array(v) {
        return "an Array".into();
    }
    if v.is_function() {
        return "a function".into();
    }
    if v.is_object() {
        let name = get(&get(v, "constructor"), "name").as_string().unwrap_or_default();
        if !name.is_empty() && name != "Object" {
            let article = if name.starts_with(['A', 'E', 'I', 'O', 'U']) { "an" } else { "a" };
            return format!("{article} {name}");
        }
        return "an object".into();
    }
    "a value".into()
}

/// True for a [`crate::QTensor`] (it has the marker getter).
pub(crate) fn is_qtensor(v: &JsValue) -> bool {
    v.is_object() && get(v, "__microquantQTensor").as_bool() == Some(true)
}

/// Checks that `options` is `undefined`, `null` or an object.
pub(crate) fn options(options: &JsValue, what: &str) -> Result<JsValue, JsValue> {
    if options.is_undefined() || options.is_null() {
        return Ok(JsValue::UNDEFINED);
    }
    if !options.is_object() || Array::is_array(options) {
        return Err(type_error(format!("{what} must be an object, got {}", describe(options))));
    }
    Ok(options.clone())
}

/// `options[key]` as a boolean (`default` when absent).
pub(crate) fn opt_bool(options: &JsValue, key: &str, default: bool) -> Result<bool, JsValue> {
    let v = get(options, key);
    if v.is_undefined() || v.is_null() {
        return Ok(default);
    }
    v.as_bool().ok_or_else(|| type_error(format!("options.{key} must be a boolean, got {}", describe(&v))))
}

/// `options[key]` as a string (`None` when absent).
pub(crate) fn opt_string(options: &JsValue, key: &str) -> Result<Option<String>, JsValue> {
    let v = get(options, key);
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    v.as_string().map(Some).ok_or_else(|| type_error(format!("options.{key} must be a string, got {}", describe(&v))))
}

/// `options[key]` as a finite number (`None` when absent).
pub(crate) fn opt_number(options: &JsValue, key: &str) -> Result<Option<f64>, JsValue> {
    let v = get(options, key);
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    match v.as_f64() {
        Some(x) if x.is_finite() => Ok(Some(x)),
        Some(x) => Err(range_error(format!("options.{key} must be a finite number, got {x}"))),
        None => Err(type_error(format!("options.{key} must be a number, got {}", describe(&v)))),
    }
}

/// `options[key]` as a function (`None` when absent).
pub(crate) fn opt_function(options: &JsValue, key: &str) -> Result<Option<Function>, JsValue> {
    let v = get(options, key);
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    v.dyn_into::<Function>()
        .map(Some)
        .map_err(|v| type_error(format!("options.{key} must be a function, got {}", describe(&v))))
}

/// `options[key]` as an array of strings (empty when absent).
pub(crate) fn opt_strings(options: &JsValue, key: &str) -> Result<Vec<String>, JsValue> {
    let v = get(options, key);
    if v.is_undefined() || v.is_null() {
        return Ok(Vec::new());
    }
    if !Array::is_array(&v) {
        return Err(type_error(format!("options.{key} must be an array of strings, got {}", describe(&v))));
    }
    Array::from(&v)
        .iter()
        .enumerate()
        .map(|(i, s)| {
            s.as_string()
                .ok_or_else(|| type_error(format!("options.{key}[{i}] must be a string, got {}", describe(&s))))
        })
        .collect()
}

/// The bytes of a `Uint8Array`, `ArrayBuffer`, `DataView` or other typed array / Node `Buffer`
/// (`what` names the argument in the error).
pub(crate) fn bytes(v: &JsValue, what: &str) -> Result<Vec<u8>, JsValue> {
    if let Some(a) = v.dyn_ref::<Uint8Array>() {
        return Ok(a.to_vec());
    }
    if let Some(b) = v.dyn_ref::<js_sys::ArrayBuffer>() {
        return Ok(Uint8Array::new(b).to_vec());
    }
    if js_sys::ArrayBuffer::is_view(v) {
        let buffer = get(v, "buffer");
        let offset = get(v, "byteOffset").as_f64().unwrap_or(0.0) as u32;
        let len = get(v, "byteLength").as_f64().unwrap_or(0.0) as u32;
        return Ok(Uint8Array::new_with_byte_offset_and_length(&buffer, offset, len).to_vec());
    }
    Err(type_error(format!("{what} must be a Uint8Array or an ArrayBuffer (the file's bytes), got {}", describe(v))))
}

/// A JS array of numbers from usizes.
pub(crate) fn usize_array(v: &[usize]) -> Array {
    v.iter().map(|&d| JsValue::from_f64(d as f64)).collect()
}

/// A JS array of numbers from u32s.
pub(crate) fn u32_array(v: &[u32]) -> Array {
    v.iter().map(|&d| JsValue::from_f64(f64::from(d))).collect()
}

/// A shape given as an array of non-negative integers.
pub(crate) fn shape(v: &JsValue, what: &str) -> Result<Vec<usize>, JsValue> {
    if !Array::is_array(v) {
        return Err(type_error(format!("{what} must be an array of integers, got {}", describe(v))));
    }
    Array::from(v)
        .iter()
        .enumerate()
        .map(|(i, d)| match d.as_f64() {
            Some(x) if x >= 0.0 && x.fract() == 0.0 && x <= u32::MAX as f64 => Ok(x as usize),
            _ => Err(type_error(format!("{what}[{i}] must be a non-negative integer, got {}", describe(&d)))),
        })
        .collect()
}

/// Formats a shape as `[1, 8, 8, 3]`.
pub(crate) fn shape_text<T: ToString>(s: &[T]) -> String {
    let parts: Vec<String> = s.iter().map(ToString::to_string).collect();
    format!("[{}]", parts.join(", "))
}
