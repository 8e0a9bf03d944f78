//! Writing `.mq` bytes (conversion time, `alloc`).

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use super::format::*;
use super::reader::ABSENT;
use crate::Error;

#[derive(Debug, Clone)]
enum SpecStorage {
    Arena,
    Const(Vec<u8>),
}

#[derive(Debug, Clone)]
enum SpecQuant {
    None,
    PerTensor(f32, i32),
    PerChannel { scales: Vec<f32>, zero_points: Vec<i32>, axis: u8 },
    PerChannelStripped { channels: u16, axis: u8 },
}

/// A tensor to add to a [`ModelBuilder`].
#[derive(Debug, Clone)]
pub struct TensorSpec {
    name: String,
    dtype: ElementType,
    dims: Vec<u32>,
    storage: SpecStorage,
    quant: SpecQuant,
}

impl TensorSpec {
    /// An activation (lives in the arena).
    pub fn activation(name: &str, dtype: ElementType, dims: &[u32]) -> Self {
        Self { name: name.into(), dtype, dims: dims.into(), storage: SpecStorage::Arena, quant: SpecQuant::None }
    }
    /// A constant with its little-endian bytes.
    pub fn constant(name: &str, dtype: ElementType, dims: &[u32], bytes: Vec<u8>) -> Self {
        Self { name: name.into(), dtype, dims: dims.into(), storage: SpecStorage::Const(bytes), quant: SpecQuant::None }
    }
    /// An int8 constant.
    pub fn const_i8(name: &str, dims: &[u32], data: &[i8]) -> Self {
        Self::constant(name, ElementType::I8, dims, data.iter().map(|&v| v as u8).collect())
    }
    /// An int32 constant.
    pub fn const_i32(name: &str, dims: &[u32], data: &[i32]) -> Self {
        Self::constant(name, ElementType::I32, dims, data.iter().flat_map(|v| v.to_le_bytes()).collect())
    }
    /// Sets per-tensor quantization.
    pub fn per_tensor(mut self, scale: f32, zero_point: i32) -> Self {
        self.quant = SpecQuant::PerTensor(scale, zero_point);
        self
    }
    /// Sets per-channel quantization along `axis`.
    pub fn per_channel(mut self, scales: Vec<f32>, zero_points: Vec<i32>, axis: u8) -> Self {
        self.quant = SpecQuant::PerChannel { scales, zero_points, axis };
        self
    }
    /// Element count (saturating).
    fn count(&self) -> u64 {
        self.dims.iter().fold(1u64, |a, &d| a.saturating_mul(d as u64))
    }
    /// Byte length (saturating).
    pub fn byte_len(&self) -> u64 {
        self.dtype.byte_len(self.count()).unwrap_or(u64::MAX)
    }
    /// The shape.
    pub(crate) fn dims(&self) -> &[u32] {
        &self.dims
    }
    /// The element type.
    pub(crate) fn dtype(&self) -> ElementType {
        self.dtype
    }
    /// True for an activation (arena) tensor.
    pub fn is_activation(&self) -> bool {
        matches!(self.storage, SpecStorage::Arena)
    }
}

/// An op to add to a [`ModelBuilder`].
#[derive(Debug, Clone)]
pub struct OpSpec {
    /// The op kind.
    pub kind: OpKind,
    /// Name (for diagnostics).
    pub name: String,
    /// Input tensor indices (`None` = absent optional input).
    pub inputs: Vec<Option<u32>>,
    /// Output tensor indices.
    pub outputs: Vec<u32>,
    /// The parameter block, as 32-bit words.
    pub params: Vec<u32>,
    /// Runs in place (output over the first input).
    pub in_place: bool,
    /// Scratch bytes the kernel needs.
    pub scratch_len: u32,
}

/// Assembles a `.mq` file.
#[derive(Debug, Clone, Default)]
pub struct ModelBuilder {
    tensors: Vec<TensorSpec>,
    ops: Vec<OpSpec>,
    inputs: Vec<u32>,
    outputs: Vec<u32>,
    meta: Vec<(String, String)>,
    arena_offsets: Vec<Option<u32>>,
    scratch_offsets: Vec<u32>,
    /// Output rows per chunk of the ops that run in place by chunks (0 for the others).
    chunk_rows: Vec<u8>,
    arena_len: u32,
    flags: u32,
}

fn align_up(v: usize, a: usize) -> usize {
    v.div_ceil(a) * a
}

impl ModelBuilder {
    /// An empty model.
    pub fn new() -> Self {
        Self::default()
    }
    /// Adds a tensor and returns its index.
    pub fn add_tensor(&mut self, t: TensorSpec) -> u32 {
        self.tensors.push(t);
        self.arena_offsets.push(None);
        (self.tensors.len() - 1) as u32
    }
    /// Adds an op and returns its index.
    pub fn add_op(&mut self, op: OpSpec) -> u32 {
        self.ops.push(op);
        self.scratch_offsets.push(0);
        self.chunk_rows.push(0);
        (self.ops.len() - 1) as u32
    }
    /// The tensors added so far.
    pub fn tensors(&self) -> &[TensorSpec] {
        &self.tensors
    }
    /// The ops added so far.
    pub fn ops(&self) -> &[OpSpec] {
        &self.ops
    }
    /// Sets the model inputs and outputs.
    pub fn set_io(&mut self, inputs: &[u32], outputs: &[u32]) {
        self.inputs = inputs.into();
        self.outputs = outputs.into();
    }
    /// The model inputs and outputs.
    pub fn io(&self) -> (&[u32], &[u32]) {
        (&self.inputs, &self.outputs)
    }
    /// Adds a metadata entry.
    pub fn add_meta(&mut self, key: &str, value: &str) {
        self.meta.push((key.into(), value.into()));
    }
    /// Marks the model as converted for single (TFLite interpreter) rounding.
    pub fn set_single_rounding(&mut self, on: bool) {
        if on {
            self.flags |= FLAG_SINGLE_ROUNDING;
        } else {
            self.flags &= !FLAG_SINGLE_ROUNDING;
        }
    }
    /// Sets the planned arena offsets of activation tensors and the arena length.
    pub fn set_arena_offsets(&mut self, offsets: &[(u32, u32)], arena_len: u32) {
        for &(t, off) in offsets {
            if let Some(slot) = self.arena_offsets.get_mut(t as usize) {
                *slot = Some(off);
            }
        }
        self.arena_len = arena_len;
    }
    /// Marks op `op` as running in place (output over its first input).
    pub fn set_in_place(&mut self, op: u32) {
        if let Some(o) = self.ops.get_mut(op as usize) {
            o.in_place = true;
        }
    }
    /// Marks op `op` (a convolution) as running in place by chunks of `rows` output rows
    /// ([`OpInfo::chunk_rows`](crate::model::OpInfo::chunk_rows)), with `scratch_len` bytes of
    /// scratch (its row buffer and its kernel's scratch).
    pub fn set_in_place_rows(&mut self, op: u32, rows: u8, scratch_len: u32) {
        if let Some(o) = self.ops.get_mut(op as usize) {
            o.in_place = true;
            o.scratch_len = scratch_len;
        }
        if let Some(r) = self.chunk_rows.get_mut(op as usize) {
            *r = rows;
        }
    }
    /// Sets the planned scratch offset of op `op`.
    pub fn set_scratch_offset(&mut self, op: u32, offset: u32) {
        if let Some(s) = self.scratch_offsets.get_mut(op as usize) {
            *s = offset;
        }
    }

    /// Lays out and serializes the model.
    ///
    /// # Errors
    /// [`Error::BadTensor`] for an activation without an arena offset, a constant whose bytes do
    /// not match its shape, or a file beyond 4 GiB.
    pub fn finish(&self) -> Result<Vec<u8>, Error> {
        let too_big = Error::BadHeader { reason: "model larger than 4 GiB" };
        let u32_of = |v: usize| u32::try_from(v).map_err(|_| too_big);
        // Strings.
        let mut strings: Vec<u8> = Vec::new();
        let mut add_str = |s: &str| -> (u32, u32) {
            let off = strings.len() as u32;
            strings.extend_from_slice(s.as_bytes());
            (off, s.len() as u32)
        };
        let tensor_names: Vec<_> = self.tensors.iter().map(|t| add_str(&t.name)).collect();
        let op_names: Vec<_> = self.ops.iter().map(|o| add_str(&o.name)).collect();
        let meta_strs: Vec<_> = self.meta.iter().map(|(k, v)| (add_str(k), add_str(v))).collect();

        // Section layout.
        let tensors_off = HEADER_LEN;
        let ops_off = align_up(tensors_off + TENSOR_RECORD_LEN * self.tensors.len(), ALIGN);
        let io_off = align_up(ops_off + OP_RECORD_LEN * self.ops.len(), ALIGN);
        let meta_off = align_up(io_off + 8 + 4 * (self.inputs.len() + self.outputs.len()), ALIGN);
        let mut cursor = meta_off + META_RECORD_LEN * self.meta.len();
        // Op input/output lists and parameter blocks.
        let mut op_lists = Vec::with_capacity(self.ops.len());
        for op in &self.ops {
            let ins = align_up(cursor, 4);
            let outs = ins + 4 * op.inputs.len();
            let params = outs + 4 * op.outputs.len();
            cursor = params + 4 * op.params.len();
            op_lists.push((ins, outs, params));
        }
        let strings_off = align_up(cursor, ALIGN);
        cursor = strings_off + strings.len();
        // Per-channel tables and constant data.
        let mut quant_offs = Vec::with_capacity(self.tensors.len());
        for t in &self.tensors {
            if let SpecQuant::PerChannel { scales, .. } = &t.quant {
                let s = align_up(cursor, ALIGN);
                let z = align_up(s + 4 * scales.len(), ALIGN);
                cursor = z + 4 * scales.len();
                quant_offs.push((s, z));
            } else {
                quant_offs.push((0, 0));
            }
        }
        let mut data_offs = Vec::with_capacity(self.tensors.len());
        for (i, t) in self.tensors.iter().enumerate() {
            match &t.storage {
                SpecStorage::Const(bytes) => {
                    if bytes.len() as u64 != t.byte_len() {
                        return Err(Error::BadTensor {
                            index: i as u32,
                            reason: "constant bytes do not match the shape",
                        });
                    }
                    let off = align_up(cursor, ALIGN);
                    cursor = off + bytes.len();
                    data_offs.push(off);
                }
                SpecStorage::Arena => {
                    let off = self.arena_offsets[i]
                        .ok_or(Error::BadTensor { index: i as u32, reason: "activation has no arena offset" })?;
                    data_offs.push(off as usize);
                }
            }
        }
        let file_len = align_up(cursor, 4);
        let mut out = vec![0u8; file_len];
        let put32 = |out: &mut [u8], off: usize, v: u32| out[off..off + 4].copy_from_slice(&v.to_le_bytes());
        let put16 = |out: &mut [u8], off: usize, v: u16| out[off..off + 2].copy_from_slice(&v.to_le_bytes());

        out[hdr::MAGIC..hdr::MAGIC + 4].copy_from_slice(&MAGIC);
        put16(&mut out, hdr::MAJOR, FORMAT_MAJOR);
        // 1.1 only adds the stripped flag: a file without it is a 1.0 file, byte for byte.
        put16(&mut out, hdr::MINOR, if self.flags & FLAG_STRIPPED != 0 { FORMAT_MINOR } else { 0 });
        put32(&mut out, hdr::HEADER_LEN, HEADER_LEN as u32);
        put32(&mut out, hdr::FILE_LEN, u32_of(file_len)?);
        put32(&mut out, hdr::FLAGS, self.flags);
        put32(&mut out, hdr::ARENA_LEN, self.arena_len);
        put32(&mut out, hdr::TENSORS_OFF, tensors_off as u32);
        put32(&mut out, hdr::N_TENSORS, self.tensors.len() as u32);
        put32(&mut out, hdr::OPS_OFF, u32_of(ops_off)?);
        put32(&mut out, hdr::N_OPS, self.ops.len() as u32);
        put32(&mut out, hdr::IO_OFF, u32_of(io_off)?);
        put32(&mut out, hdr::STRINGS_OFF, u32_of(strings_off)?);
        put32(&mut out, hdr::STRINGS_LEN, u32_of(strings.len())?);
        put32(&mut out, hdr::META_OFF, u32_of(meta_off)?);
        put32(&mut out, hdr::N_META, self.meta.len() as u32);

        for (i, t) in self.tensors.iter().enumerate() {
            let r = tensors_off + TENSOR_RECORD_LEN * i;
            if t.dims.len() > MAX_RANK {
                return Err(Error::BadTensor { index: i as u32, reason: "rank above 6" });
            }
            out[r] = t.dtype.code();
            out[r + 1] = t.dims.len() as u8;
            out[r + 2] = if t.is_activation() { 0 } else { 1 };
            for (k, &d) in t.dims.iter().enumerate() {
                put32(&mut out, r + 4 + 4 * k, d);
            }
            put32(&mut out, r + 28, u32_of(data_offs[i])?);
            put32(&mut out, r + 32, u32::try_from(t.byte_len()).map_err(|_| too_big)?);
            match &t.quant {
                SpecQuant::None => {}
                SpecQuant::PerTensor(scale, zp) => {
                    out[r + 3] = 1;
                    put32(&mut out, r + 36, scale.to_bits());
                    put32(&mut out, r + 40, *zp as u32);
                    put16(&mut out, r + 44, 1);
                }
                SpecQuant::PerChannelStripped { channels, axis } => {
                    out[r + 3] = 3;
                    put16(&mut out, r + 44, *channels);
                    out[r + 46] = *axis;
                }
                SpecQuant::PerChannel { scales, zero_points, axis } => {
                    if zero_points.len() != scales.len() || scales.len() > u16::MAX as usize {
                        return Err(Error::BadTensor {
                            index: i as u32,
                            reason: "per-channel scales and zero points differ in count",
                        });
                    }
                    out[r + 3] = 2;
                    let (so, zo) = quant_offs[i];
                    put32(&mut out, r + 36, u32_of(so)?);
                    put32(&mut out, r + 40, u32_of(zo)?);
                    put16(&mut out, r + 44, scales.len() as u16);
                    out[r + 46] = *axis;
                    for (k, (s, z)) in scales.iter().zip(zero_points).enumerate() {
                        put32(&mut out, so + 4 * k, s.to_bits());
                        put32(&mut out, zo + 4 * k, *z as u32);
                    }
                }
            }
            put32(&mut out, r + 48, tensor_names[i].0);
            put32(&mut out, r + 52, tensor_names[i].1);
            if let SpecStorage::Const(bytes) = &t.storage {
                out[data_offs[i]..data_offs[i] + bytes.len()].copy_from_slice(bytes);
            }
        }
        for (i, op) in self.ops.iter().enumerate() {
            let r = ops_off + OP_RECORD_LEN * i;
            let (ins, outs, params) = op_lists[i];
            put16(&mut out, r, op.kind.code());
            let rows = u16::from(self.chunk_rows.get(i).copied().unwrap_or(0)) << OP_CHUNK_ROWS_SHIFT;
            put16(&mut out, r + 2, if op.in_place { OP_FLAG_IN_PLACE | rows } else { 0 });
            put32(&mut out, r + 4, u32_of(ins)?);
            put16(&mut out, r + 8, op.inputs.len() as u16);
            put16(&mut out, r + 10, op.outputs.len() as u16);
            put32(&mut out, r + 12, u32_of(outs)?);
            put32(&mut out, r + 16, u32_of(params)?);
            put32(&mut out, r + 20, (4 * op.params.len()) as u32);
            put32(&mut out, r + 24, if op.scratch_len > 0 { self.scratch_offsets[i] } else { 0 });
            put32(&mut out, r + 28, op.scratch_len);
            put32(&mut out, r + 32, op_names[i].0);
            put32(&mut out, r + 36, op_names[i].1);
            for (k, t) in op.inputs.iter().enumerate() {
                put32(&mut out, ins + 4 * k, t.unwrap_or(ABSENT));
            }
            for (k, t) in op.outputs.iter().enumerate() {
                put32(&mut out, outs + 4 * k, *t);
            }
            for (k, w) in op.params.iter().enumerate() {
                put32(&mut out, params + 4 * k, *w);
            }
        }
        put32(&mut out, io_off, self.inputs.len() as u32);
        put32(&mut out, io_off + 4, self.outputs.len() as u32);
        for (k, t) in self.inputs.iter().chain(&self.outputs).enumerate() {
            put32(&mut out, io_off + 8 + 4 * k, *t);
        }
        for (i, ((ko, kl), (vo, vl))) in meta_strs.iter().enumerate() {
            let r = meta_off + META_RECORD_LEN * i;
            put32(&mut out, r, *ko);
            put32(&mut out, r + 4, *kl);
            put32(&mut out, r + 8, *vo);
            put32(&mut out, r + 12, *vl);
        }
        out[strings_off..strings_off + strings.len()].copy_from_slice(&strings);
        let crc = file_crc(&out);
        put32(&mut out, hdr::CRC, crc);
        Ok(out)
    }
}

/// Bytes in a 16-byte aligned heap buffer, as `Model::parse` and kernels reading constants in
/// place need. Use it to hold a model read from a file or received from JavaScript.
#[derive(Clone)]
pub struct AlignedBytes {
    words: Vec<u128>,
    len: usize,
}

impl AlignedBytes {
    /// Copies `bytes` into an aligned buffer.
    pub fn new(bytes: &[u8]) -> Self {
        let mut words = vec![0u128; bytes.len().div_ceil(16)];
        let dst: &mut [u8] = bytemuck::cast_slice_mut(&mut words);
        dst[..bytes.len()].copy_from_slice(bytes);
        Self { words, len: bytes.len() }
    }
}

impl core::ops::Deref for AlignedBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        let all: &[u8] = bytemuck::cast_slice(&self.words);
        &all[..self.len]
    }
}

impl core::fmt::Debug for AlignedBytes {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "AlignedBytes({} bytes)", self.len)
    }
}

/// The bytes of `model` without what only host tools read: every tensor and op name (left
/// empty; host tools show `t12`, `op3`), every metadata entry, and the float scales and zero
/// points of tensors quantized per channel (weights and biases: the kernels read the
/// requantization multipliers and shifts, stored as constants, instead; the tensor keeps its
/// axis and channel count, [`Quant::PerChannelStripped`](super::Quant::PerChannelStripped)). The header's *stripped* flag
/// is set (format 1.1, `docs/FORMAT.md`). Tensors, ops, parameter blocks, constants (in the
/// same order), the arena plan and the rounding are kept, so the stripped model runs bit for
/// bit as the full one; the file is laid out again and its CRC recomputed. Stripping a stripped
/// model gives the same bytes.
///
/// ```
/// use microquant::model::{AlignedBytes, ElementType, Model, ModelBuilder, TensorSpec, strip};
/// # fn main() -> Result<(), microquant::Error> {
/// let mut b = ModelBuilder::new();
/// let x = b.add_tensor(TensorSpec::activation("a long layer name", ElementType::I8, &[1, 4]).per_tensor(0.5, -3));
/// b.set_io(&[x], &[x]);
/// b.set_arena_offsets(&[(x, 0)], 16);
/// b.add_meta("source", "model.tflite");
/// let full = b.finish()?;
/// let lean = AlignedBytes::new(&strip(&full)?);
/// let m = Model::parse(&lean)?;
/// // Smaller, flagged as stripped, without names or metadata.
/// assert_eq!((lean.len() < full.len(), m.is_stripped()), (true, true));
/// assert_eq!((m.tensor(0)?.name(), m.num_meta()), ("", 0));
/// # Ok(())
/// # }
/// ```
///
/// # Errors
/// Any error of [`Model::parse`](super::Model::parse) on `model` (it is validated first), and
/// [`Error::BadOp`] for a parameter block whose length is not a whole number of words.
pub fn strip(model: &[u8]) -> Result<Vec<u8>, Error> {
    use super::reader::{Model, Quant, Storage};
    let aligned = AlignedBytes::new(model);
    let m = Model::parse(&aligned)?;
    let mut b = ModelBuilder::new();
    b.set_single_rounding(m.single_rounding());
    b.flags |= FLAG_STRIPPED;
    let mut arena = Vec::new();
    for i in 0..m.num_tensors() as u32 {
        let t = m.tensor(i)?;
        let spec = match t.storage {
            Storage::Arena(off) => {
                arena.push((i, off));
                TensorSpec::activation("", t.dtype, t.dims())
            }
            Storage::Const(_) => {
                let bytes = t.const_bytes().ok_or(Error::BadTensor { index: i, reason: "outside the model" })?;
                TensorSpec::constant("", t.dtype, t.dims(), bytes.to_vec())
            }
        };
        let spec = match t.quant {
            Quant::None => spec,
            Quant::PerTensor { scale, zero_point } => spec.per_tensor(scale, zero_point),
            Quant::PerChannel { scales, axis, .. } => {
                TensorSpec { quant: SpecQuant::PerChannelStripped { channels: scales.len() as u16, axis }, ..spec }
            }
            Quant::PerChannelStripped { channels, axis } => {
                TensorSpec { quant: SpecQuant::PerChannelStripped { channels, axis }, ..spec }
            }
        };
        b.add_tensor(spec);
    }
    b.set_arena_offsets(&arena, m.arena_len() as u32);
    for i in 0..m.num_ops() as u32 {
        let op = m.op(i)?;
        let p = op.params();
        if p.len() % 4 != 0 {
            return Err(Error::BadOp { index: i, reason: "parameter block is not whole words" });
        }
        let inputs = (0..op.num_inputs())
            .map(|k| op.input(k).map(|t| (t != ABSENT).then_some(t)))
            .collect::<Result<Vec<_>, _>>()?;
        let outputs = (0..op.num_outputs()).map(|k| op.output(k)).collect::<Result<Vec<_>, _>>()?;
        let params = p.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect();
        let k = b.add_op(OpSpec {
            kind: op.kind,
            name: String::new(),
            inputs,
            outputs,
            params,
            in_place: op.in_place(),
            scratch_len: op.scratch_len,
        });
        b.set_scratch_offset(k, op.scratch_offset);
        if op.chunk_rows() > 0 {
            b.set_in_place_rows(k, op.chunk_rows(), op.scratch_len);
        }
    }
    let inputs = (0..m.num_inputs()).map(|k| m.input_index(k)).collect::<Result<Vec<_>, _>>()?;
    let outputs = (0..m.num_outputs()).map(|k| m.output_index(k)).collect::<Result<Vec<_>, _>>()?;
    b.set_io(&inputs, &outputs);
    b.finish()
}
