//! What the converter writes into a `.mq`'s metadata (producer, source file and its CRC-32), as
//! the CLI writes it, and the entries `options.metadata` adds.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use js_sys::{Array, Object};
use wasm_bindgen::prelude::*;

use crate::error::type_error;
use crate::js::{describe, get};

/// The CRC-32 (ISO-HDLC, as zlib) of a source model: its `source_crc32` metadata entry.
pub(crate) fn crc32(bytes: &[u8]) -> u32 {
    microquant::model::crc32(bytes)
}

/// The `.mq` metadata entries the converter adds, the same keys in the same order as
/// `microquant quantize` (producer, source file, observer, calibration samples), so that the
/// same model, samples and options give the same bytes here and in the CLI. `options.metadata`
/// (`{key: value}`) replaces values or adds entries.
pub(crate) fn metadata(options: &JsValue, base: Vec<(String, String)>) -> Result<Vec<(String, String)>, JsValue> {
    let mut meta = base;
    let m = get(options, "metadata");
    if !(m.is_undefined() || m.is_null()) {
        if !m.is_object() || Array::is_array(&m) {
            return Err(type_error(format!("options.metadata must be an object of strings, got {}", describe(&m))));
        }
        for entry in Object::entries(&Object::from(m)).iter() {
            let pair = Array::from(&entry);
            let key = pair.get(0).as_string().unwrap_or_default();
            let value = pair.get(1).as_string().ok_or_else(|| {
                type_error(format!("options.metadata[{key:?}] must be a string, got {}", describe(&pair.get(1))))
            })?;
            match meta.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = value,
                None => meta.push((key, value)),
            }
        }
    }
    Ok(meta)
}

/// The producer entry: `microquant <version> quantize` (the same in the CLI and here).
pub(crate) fn producer(what: &str) -> (String, String) {
    (String::from("producer"), format!("microquant {} {what}", env!("CARGO_PKG_VERSION")))
}
