//! `modelInputs(bytes)`: the inputs a model declares, before `loadModel`, so that a page can
//! ask for what loading needs: the extents of dynamic axes (`inputShapes`, prefilled with the
//! model's own `dim_param` names) and the values of non-float inputs (`inputValues`).

use alloc::string::String;

use js_sys::{Array, Object};
use microquant::onnx::Dim;
use wasm_bindgen::prelude::*;

use crate::error::Context;
use crate::js;

/// The JS element type name of an ONNX element type (`FLOAT` → `"float32"`).
fn js_dtype(onnx: &str) -> String {
    match onnx {
        "FLOAT" => String::from("float32"),
        "DOUBLE" => String::from("float64"),
        "FLOAT16" => String::from("float16"),
        other => other.to_ascii_lowercase(),
    }
}

/// The inputs of a model, as it declares them: `[{name, dtype, dims, needsShape, needsValue}]`.
/// `dims` holds a number for a static extent, the `dim_param` name (a string) for a named
/// dynamic one, `null` for an unnamed one (`dims` itself is `null` when the model declares no
/// shape). `needsShape`: an extent other than the first is dynamic, so `loadModel` needs
/// `inputShapes[name]` (a dynamic first axis is the batch: 1 unless given). `needsValue`: the
/// input is not float32, so `loadModel` needs `inputValues[name]`. ONNX models only declare
/// dynamic inputs: for a TFLite or `.mq` model the list holds the static shapes (both flags
/// false). Throws an `Error` for bytes that are no model.
#[wasm_bindgen(
    js_name = modelInputs,
    unchecked_return_type = "{ name: string; dtype: string; dims: (number | string | null)[] | null; needsShape: boolean; needsValue: boolean }[]"
)]
pub fn model_inputs(
    #[wasm_bindgen(unchecked_param_type = "Uint8Array | ArrayBuffer")] bytes: JsValue,
) -> Result<Array, JsValue> {
    let b = js::bytes(&bytes, "the model")?;
    let out = Array::new();
    let entry = |name: &str, dtype: &str, dims: JsValue, needs_shape: bool, needs_value: bool| {
        let o = Object::new();
        js::set(&o, "name", name);
        js::set(&o, "dtype", dtype);
        js::set(&o, "dims", dims);
        js::set(&o, "needsShape", needs_shape);
        js::set(&o, "needsValue", needs_value);
        o
    };
    let static_dims = |s: &[usize]| JsValue::from(js::usize_array(s));
    if b.starts_with(&microquant::model::MAGIC) {
        let m = crate::runtime::Compiled::new(b, "mq", String::from("model"), None)?;
        for io in &m.inputs {
            out.push(&entry(&io.name, "int8", static_dims(&io.shape), false, false));
        }
    } else if b.get(4..8) == Some(b"TFL3".as_slice()) {
        let g = microquant::tflite::import(&b).ctx("reading the TFLite model")?;
        for t in g.inputs.iter().filter_map(|&id| g.tensor(id)) {
            out.push(&entry(&t.name, "float32", static_dims(&t.shape), false, false));
        }
    } else {
        for i in microquant::onnx::model_inputs(&b).ctx("reading the ONNX model")? {
            let dims = match &i.dims {
                None => JsValue::NULL,
                Some(d) => d
                    .iter()
                    .map(|d| match d {
                        Dim::Fixed(v) => JsValue::from_f64(*v as f64),
                        Dim::Dynamic(Some(p)) => JsValue::from_str(p),
                        Dim::Dynamic(None) => JsValue::NULL,
                    })
                    .collect::<Array>()
                    .into(),
            };
            out.push(&entry(&i.name, &js_dtype(&i.dtype), dims, i.needs_shape(), !i.is_float()));
        }
    }
    Ok(out)
}
