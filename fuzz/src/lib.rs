//! What the fuzz targets run, shared by them and by `make_seeds`.
//!
//! Each function takes arbitrary bytes and must return (an `Ok` or a typed error) without
//! panicking, hanging or allocating without bound; libFuzzer reports anything else.

use microquant::interp::Interpreter;
use microquant::model::Model;

/// Arena of the `mq_load` target: fixed, as on a device (models that need more get
/// `ArenaTooSmall`, which is a fine answer).
pub const MQ_ARENA_BYTES: usize = 256 * 1024;

/// Largest arena the `wasm_load` mirror allocates (see [`wasm_load`]).
pub const WASM_ARENA_CAP: usize = 64 * 1024 * 1024;

/// Offsets of the `.mq` header fields re-sealed by [`reseal_mq`] (docs/FORMAT.md).
const FILE_LEN: usize = 12;
const CRC: usize = 16;

/// Fixes the file-length and CRC-32 fields of `.mq` bytes so that a mutation anywhere else is
/// seen by the validator instead of stopping at the CRC check.
pub fn reseal_mq(buf: &mut [u8]) {
    if buf.len() < 64 {
        return;
    }
    let len = buf.len() as u32;
    buf[FILE_LEN..FILE_LEN + 4].copy_from_slice(&len.to_le_bytes());
    buf[CRC..CRC + 4].fill(0);
    let crc = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC).checksum(buf);
    buf[CRC..CRC + 4].copy_from_slice(&crc.to_le_bytes());
}

/// A 16-byte aligned copy of `bytes` (models live in aligned flash or a `Vec<u128>` in wasm).
pub fn aligned(bytes: &[u8]) -> Vec<u128> {
    let mut words = vec![0u128; bytes.len().div_ceil(16)];
    let view: &mut [u8] = bytemuck_bytes_mut(&mut words);
    view[..bytes.len()].copy_from_slice(bytes);
    words
}

fn bytemuck_bytes_mut(w: &mut [u128]) -> &mut [u8] {
    bytemuck::cast_slice_mut(w)
}

fn bytes_of(w: &[u128], len: usize) -> &[u8] {
    &bytemuck::cast_slice(w)[..len]
}

/// The `mq_load` target: `data[0]` bit 0 set = re-seal the rest (see [`reseal_mq`]); then
/// [`Interpreter::new`] with a fixed arena and, if the model validates, every accessor and one
/// invoke with zeroed inputs.
pub fn mq_load(data: &[u8], arena: &mut [u128]) {
    let Some((&ctl, rest)) = data.split_first() else { return };
    let mut bytes = rest.to_vec();
    if ctl & 1 == 1 {
        reseal_mq(&mut bytes);
    }
    let words = aligned(&bytes);
    let model = bytes_of(&words, bytes.len());
    // A misaligned copy too (a model slice at an odd address must be refused, not misread).
    if ctl & 2 == 2 && !bytes.is_empty() {
        let mut shifted = vec![0u128; (bytes.len() + 1).div_ceil(16)];
        let s = bytemuck_bytes_mut(&mut shifted);
        s[1..=bytes.len()].copy_from_slice(&bytes);
        let _ = Model::parse(&s[1..=bytes.len()]);
    }
    if let Ok(m) = Model::parse(model) {
        let _ = m.format_version();
        let _ = m.const_bytes();
        let _ = m.meta_value("producer");
        for i in 0..m.num_ops() as u32 {
            let _ = m.op_macs(i);
        }
    }
    arena.fill(0);
    let arena_bytes = bytemuck_bytes_mut(arena);
    let Ok(mut it) = Interpreter::new(model, arena_bytes) else { return };
    for i in 0..it.model().num_inputs() {
        if let Ok(b) = it.input_bytes(i) {
            b.fill(0);
        }
        let _ = it.input_i8(i);
    }
    let _ = it.invoke();
    for i in 0..it.model().num_outputs() {
        let _ = it.output_bytes(i);
        let _ = it.output_i8(i);
    }
    for t in 0..it.model().num_tensors() as u32 {
        let _ = it.tensor_bytes(t);
    }
}

/// The `onnx_import` target.
pub fn onnx_import(data: &[u8]) {
    if let Ok(imported) = microquant::onnx::import(data) {
        for io in imported.inputs.iter().chain(&imported.outputs) {
            let n = io.model_shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
            if let Some(n) = n.filter(|&n| n <= 1 << 16) {
                let _ = io.to_graph_layout(&vec![0f32; n]);
                let _ = io.to_model_layout(&vec![0f32; n]);
            }
        }
    }
}

/// The `tflite_import` target.
pub fn tflite_import(data: &[u8]) {
    let _ = microquant::tflite::import_with_tensor_map(data);
}

/// What the wasm package's `loadModel` does with the bytes, without JS: `wasm/src/lib.rs`
/// `load_model` → `detect`, then
/// - `.mq` (`runtime::Compiled::new`): parse, an arena of the declared size, `Interpreter::new`;
/// - TFLite: `tflite::import`, then if quantized `compile` and the `.mq` path, else the
///   `FloatModel` path;
/// - ONNX: `onnx::import`, then the `FloatModel` path (`converter::FloatGraph::new`:
///   `ptq::prepare`, `FloatExecutor::new`).
///
/// Its functions return `JsValue` errors (which panic off wasm32), so this mirror calls the same
/// core functions in the same order. `data[0]` bit 0 re-seals `.mq` bytes as in [`mq_load`].
/// The arena is capped at [`WASM_ARENA_CAP`]: the wasm crate allocates (fallibly) the arena the
/// model declares, which the reader bounds by what its tensors reach; a model with a real
/// multi-gigabyte tensor would make this process's allocation slow, not wrong.
pub fn wasm_load(data: &[u8]) {
    let Some((&ctl, rest)) = data.split_first() else { return };
    let mut b = rest.to_vec();
    if b.starts_with(&microquant::model::MAGIC) {
        if ctl & 1 == 1 {
            reseal_mq(&mut b);
        }
        run_mq(&b);
    } else if b.get(4..8) == Some(b"TFL3".as_slice()) {
        let Ok(g) = microquant::tflite::import(&b) else { return };
        if is_quantized(&g) {
            let opts = microquant::compile::CompileOptions::default();
            if let Ok(c) = microquant::compile::compile(&g, &opts) {
                run_mq(&c.bytes);
            }
        } else {
            float_model(g);
        }
    } else if b.starts_with(b"\x93NUMPY") || b.is_empty() {
    } else if let Ok(imported) = microquant::onnx::import(&b) {
        float_model(imported.graph);
    }
}

fn is_quantized(g: &microquant::graph::Graph) -> bool {
    use microquant::graph::DType;
    g.tensors.iter().any(|t| !t.is_constant() && matches!(t.dtype, DType::I8 | DType::I16))
}

fn float_model(mut g: microquant::graph::Graph) {
    let _ = g.constant_totals();
    if microquant::ptq::prepare(&mut g).is_ok() {
        let _ = microquant::float::FloatExecutor::new(&g);
    }
}

fn run_mq(bytes: &[u8]) {
    let words = aligned(bytes);
    let model = bytes_of(&words, bytes.len());
    let Ok(m) = Model::parse(model) else { return };
    let arena_len = m.arena_len();
    if arena_len > WASM_ARENA_CAP {
        return;
    }
    let mut arena = vec![0u128; (arena_len + 16).div_ceil(16)];
    let _ = Interpreter::new(model, bytemuck_bytes_mut(&mut arena));
}

/// Core's `.npy` reader (`microquant::npy`, which the CLI and the npm package read with) on `data`: its error, or `None` if it reads it (every conversion then done).
pub fn core_npy_error(data: &[u8]) -> Option<microquant::npy::NpyError> {
    match microquant::npy::Npy::parse(data) {
        Ok(a) => {
            let _ = (a.to_f32(), a.to_i64(), a.to_i8());
            None
        }
        Err(e) => Some(e),
    }
}

/// The `npy_read` target: the reader, and every conversion of what it reads.
pub fn npy_read(data: &[u8]) {
    let _ = core_npy_error(data);
}
