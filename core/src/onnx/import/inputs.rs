//! Graph inputs: their declared shapes ([`model_inputs`]), and how each becomes a graph input or
//! a constant under [`ImportOptions::input_shapes`] / [`ImportOptions::input_values`].

use super::*;
use crate::onnx::{Dim, InputSpec};

/// How a graph input is imported.
pub(super) enum InputKind {
    /// A float graph input of this static shape.
    Data(Vec<usize>),
    /// A constant (the value given at conversion).
    Const(Konst),
}

/// The tensor type of a value info, if it is a tensor.
fn tensor_type(vi: &pb::ValueInfoProto) -> Option<&pb::type_proto::Tensor> {
    match vi.r#type.as_ref().and_then(|t| t.value.as_ref()) {
        Some(pb::type_proto::Value::TensorType(t)) => Some(t),
        _ => None,
    }
}

/// The declared extents (`None`: no shape at all).
fn declared_dims(tt: &pb::type_proto::Tensor) -> Option<Vec<Dim>> {
    use pb::tensor_shape_proto::dimension::Value as D;
    let shape = tt.shape.as_ref()?;
    Some(
        shape
            .dim
            .iter()
            .map(|d| match &d.value {
                Some(D::DimValue(v)) if *v > 0 => Dim::Fixed(*v as usize),
                Some(D::DimParam(p)) if !p.is_empty() => Dim::Dynamic(Some(p.clone())),
                _ => Dim::Dynamic(None),
            })
            .collect(),
    )
}

/// The graph inputs that are not initializers.
fn real_inputs(graph: &pb::GraphProto) -> impl Iterator<Item = &pb::ValueInfoProto> {
    graph.input.iter().filter(|vi| {
        let name = vi.name.as_deref().unwrap_or("");
        !graph.initializer.iter().any(|t| t.name.as_deref() == Some(name))
    })
}

pub(crate) fn model_inputs(bytes: &[u8]) -> Result<Vec<InputSpec>, ConvertError> {
    let model = pb::ModelProto::decode(bytes).map_err(|e| decode_error(e, bytes.len()))?;
    let graph = model.graph.as_ref().ok_or_else(|| {
        ConvertError::new(Kind::Malformed, format!("no graph in the {}-byte protobuf: not an ONNX model", bytes.len()))
    })?;
    Ok(real_inputs(graph)
        .map(|vi| {
            let tt = tensor_type(vi);
            InputSpec {
                name: vi.name.clone().unwrap_or_default(),
                dtype: tt.map_or_else(|| String::from("not a tensor"), |t| dtype_name(t.elem_type.unwrap_or(0))),
                dims: tt.and_then(declared_dims),
            }
        })
        .collect())
}

/// Fails if an option names an input the model does not have.
pub(super) fn check_option_names(graph: &pb::GraphProto, options: &ImportOptions) -> Result<(), ConvertError> {
    let names: Vec<&str> = real_inputs(graph).filter_map(|vi| vi.name.as_deref()).collect();
    let given = options
        .input_shapes
        .iter()
        .map(|(n, _)| ("an input shape", n))
        .chain(options.input_values.iter().map(|(n, _)| ("an input value", n)));
    for (what, n) in given {
        if !names.contains(&n.as_str()) {
            return Err(ConvertError::new(
                Kind::Malformed,
                format!("{what} is given for {n:?}, but the model has no input of that name (inputs: {names:?})"),
            ));
        }
    }
    Ok(())
}

/// `1x3x<height>x<width>`: the declared shape, dynamic extents by their names.
fn shape_hint(dims: &[Dim]) -> String {
    let parts: Vec<String> = dims
        .iter()
        .enumerate()
        .map(|(axis, d)| match d {
            Dim::Fixed(v) => v.to_string(),
            Dim::Dynamic(Some(p)) => format!("<{p}>"),
            Dim::Dynamic(None) => format!("<extent {axis}>"),
        })
        .collect();
    parts.join("x")
}

/// Where the options are set, for error messages.
const WHERE_SHAPES: &str =
    "(--input-shape on the command line, inputShapes in the npm package's loadModel, ImportOptions::input_shapes)";
const WHERE_VALUES: &str =
    "(--input-value on the command line, inputValues in the npm package's loadModel, ImportOptions::input_values)";

/// How graph input `vi` (named `name`, index `index` among the graph's inputs) is imported.
pub(super) fn resolve_input(
    vi: &pb::ValueInfoProto,
    name: &str,
    index: usize,
    options: &ImportOptions,
) -> Result<InputKind, ConvertError> {
    let unsupported = |m: String| ConvertError::new(Kind::Unsupported, m).with_tensor(index, name);
    let tt = tensor_type(vi).ok_or_else(|| unsupported(format!("input {name:?} is not a tensor")))?;
    let elem = tt.elem_type.unwrap_or(0);
    let given_shape = options.input_shapes.iter().find(|(n, _)| n == name).map(|(_, s)| s.as_slice());
    let value = options.input_values.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_slice());
    let declared = declared_dims(tt);

    // The shape: given, or declared with a dynamic batch as 1 (a value's single dynamic extent
    // is its count's).
    let shape: Vec<usize> = match (given_shape, &declared) {
        (Some(g), Some(d)) => {
            if g.len() != d.len() {
                return Err(unsupported(format!(
                    "input {name:?} has rank {} ({}), but the shape given for it, {g:?}, has rank {}",
                    d.len(),
                    shape_hint(d),
                    g.len()
                )));
            }
            for (axis, (&v, dim)) in g.iter().zip(d).enumerate() {
                if let Dim::Fixed(s) = dim {
                    if *s != v {
                        return Err(unsupported(format!(
                            "input {name:?} has the static extent {s} on axis {axis} ({}), but the shape given \
                             for it, {g:?}, says {v}",
                            shape_hint(d)
                        )));
                    }
                }
            }
            g.to_vec()
        }
        (Some(g), None) => g.to_vec(),
        (None, None) => match value {
            Some([_]) => Vec::new(),
            Some(v) => vec![v.len()],
            None => {
                return Err(unsupported(format!(
                    "input {name:?} has no shape: give it {WHERE_SHAPES}, e.g. --input-shape {name}=1x3x224x224"
                )));
            }
        },
        (None, Some(d)) => {
            let dynamic: Vec<usize> = (0..d.len()).filter(|&a| matches!(d[a], Dim::Dynamic(_))).collect();
            let mut s: Vec<usize> = d.iter().map(|x| if let Dim::Fixed(v) = x { *v } else { 1 }).collect();
            let known = crate::graph::num_elements(&s).unwrap_or(0);
            match (value, dynamic.as_slice()) {
                // A value with one dynamic extent: the count tells it.
                (Some(v), [axis]) if known > 0 && v.len() % known == 0 => s[*axis] = v.len() / known,
                (_, []) | (_, [0]) => {}
                (_, _) => {
                    let axis = dynamic.iter().copied().find(|&a| a > 0).unwrap_or(0);
                    let what = match &d[axis] {
                        Dim::Dynamic(Some(p)) => format!("a dynamic extent ({p:?})"),
                        _ => String::from("an unknown extent"),
                    };
                    // The example: a dynamic batch as 1, the other dynamic extents by name.
                    let mut example = d.clone();
                    if let Some(first @ Dim::Dynamic(_)) = example.first_mut() {
                        *first = Dim::Fixed(1);
                    }
                    return Err(unsupported(format!(
                        "input {name:?} has {what} on axis {axis} (declared {}): give the input's shape {WHERE_SHAPES}, \
                         e.g. --input-shape {name}={}",
                        shape_hint(d),
                        shape_hint(&example)
                    )));
                }
            }
            s
        }
    };
    if let Some(axis) = shape.iter().position(|&v| v == 0) {
        return Err(unsupported(format!("input {name:?} of shape {shape:?} has an extent 0 on axis {axis}")));
    }
    let n = crate::graph::num_elements(&shape);
    let Some(values) = value else {
        if elem != dt::FLOAT {
            return Err(ConvertError::new(
                Kind::UnsupportedDType,
                format!(
                    "input {name:?} is {} of shape {shape:?}: the graph takes float32 inputs; fix its value at \
                     conversion {WHERE_VALUES}, e.g. --input-value {name}={} (comma-separated values in row-major \
                     order for a tensor of several elements)",
                    dtype_name(elem),
                    if elem == dt::BOOL { "1" } else { "16000" }
                ),
            )
            .with_tensor(index, name));
        }
        // Refused before the graph allocates anything for it.
        if n.is_none_or(|n| n > crate::float::MAX_TENSOR_ELEMENTS) {
            return Err(unsupported(format!("input {name:?} of shape {shape:?} has more than 2^26 elements")));
        }
        return Ok(InputKind::Data(shape));
    };
    if n != Some(values.len()) {
        return Err(unsupported(format!(
            "input {name:?} has shape {shape:?} ({} element(s)), but {} values are given for it",
            n.map_or_else(|| String::from("too many"), |n| n.to_string()),
            values.len()
        )));
    }
    let bad_value =
        |v: f64, what: &str| unsupported(format!("input {name:?} is {}: the value {v} is {what}", dtype_name(elem)));
    let data = match elem {
        dt::FLOAT | dt::DOUBLE | dt::FLOAT16 | dt::BFLOAT16 => KData::F32(values.iter().map(|&v| v as f32).collect()),
        dt::BOOL => {
            let mut out = Vec::with_capacity(values.len());
            for &v in values {
                if v != 0.0 && v != 1.0 {
                    return Err(bad_value(v, "not 0 or 1"));
                }
                out.push(v == 1.0);
            }
            KData::Bool(out)
        }
        dt::INT8 | dt::UINT8 | dt::INT16 | dt::UINT16 | dt::INT32 | dt::UINT32 | dt::INT64 | dt::UINT64 => {
            let mut out = Vec::with_capacity(values.len());
            for &v in values {
                // 2^63 (exact in f64) is the first value past i64.
                const TWO_63: f64 = 9_223_372_036_854_775_808.0;
                if !(v.is_finite() && libm::trunc(v) == v && (-TWO_63..TWO_63).contains(&v)) {
                    return Err(bad_value(v, "not a whole number in the 64-bit range"));
                }
                out.push(v as i64);
            }
            KData::I64(out)
        }
        other => {
            return Err(ConvertError::new(
                Kind::UnsupportedDType,
                format!("input {name:?} is {}: no value of that type can be given", dtype_name(other)),
            )
            .with_tensor(index, name));
        }
    };
    Ok(InputKind::Const(Konst { shape, data }))
}
