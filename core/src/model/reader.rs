//! Zero-copy reading and validation of `.mq` bytes.

use super::bytes::{pod_slice, slice, u8_at, u16_at, u32_at};
use super::format::*;
use crate::Error;

/// Index value meaning "no tensor" (an absent optional input).
pub const ABSENT: u32 = u32::MAX;

/// A validated `.mq` model, borrowed from its bytes (for example `&'static` in flash).
///
/// ```
/// # #[cfg(feature = "alloc")] {
/// use microquant::model::{AlignedBytes, ElementType, Model, ModelBuilder, TensorSpec};
/// let mut b = ModelBuilder::new();
/// let x = b.add_tensor(TensorSpec::activation("x", ElementType::I8, &[1, 4]).per_tensor(0.5, -3));
/// b.set_io(&[x], &[x]);
/// b.set_arena_offsets(&[(x, 0)], 16);
/// let bytes = AlignedBytes::new(&b.finish().unwrap());
/// let model = Model::parse(&bytes).unwrap();
/// assert_eq!(model.arena_len(), 16);
/// assert_eq!(model.tensor(0).unwrap().name(), "x");
/// # }
/// ```
#[derive(Clone, Copy)]
pub struct Model<'a> {
    buf: &'a [u8],
    flags: u32,
    arena_len: u32,
    tensors_off: usize,
    n_tensors: u32,
    ops_off: usize,
    n_ops: u32,
    io_off: usize,
    n_inputs: u32,
    n_outputs: u32,
    strings_off: usize,
    strings_len: usize,
    meta_off: usize,
    n_meta: u32,
}

/// Where a tensor's bytes live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Storage {
    /// In the arena, at this byte offset (an activation).
    Arena(u32),
    /// In the model file, at this byte offset (a constant).
    Const(u32),
}

/// Quantization parameters of a tensor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Quant<'a> {
    /// Not quantized (float or plain integer data).
    None,
    /// One scale and zero point.
    PerTensor {
        /// Scale.
        scale: f32,
        /// Zero point.
        zero_point: i32,
    },
    /// A scale and zero point per slice along `axis`.
    PerChannel {
        /// Scales.
        scales: &'a [f32],
        /// Zero points.
        zero_points: &'a [i32],
        /// The quantized axis.
        axis: u8,
    },
    /// Quantized per channel along `axis`, the scales and zero points stripped
    /// ([`strip`](super::strip)): the kernels read the requantization multipliers and shifts
    /// instead, never these (host tools show the tensor as per-channel without values).
    PerChannelStripped {
        /// Number of channels (the size of `axis`).
        channels: u16,
        /// The quantized axis.
        axis: u8,
    },
}

/// One tensor of a model.
#[derive(Debug, Clone, Copy)]
pub struct TensorInfo<'a> {
    model: &'a [u8],
    /// Index in the tensor table.
    pub index: u32,
    /// Element type.
    pub dtype: ElementType,
    rank: u8,
    dims: [u32; MAX_RANK],
    /// Where the bytes are.
    pub storage: Storage,
    /// Length in bytes.
    pub byte_len: u32,
    /// Quantization parameters.
    pub quant: Quant<'a>,
    name: Name<'a>,
}

/// A name's bytes, checked to be UTF-8 when the model was parsed (so later lookups skip it).
#[derive(Clone, Copy)]
struct Name<'a>(&'a [u8]);

impl<'a> Name<'a> {
    fn as_str(self) -> &'a str {
        core::str::from_utf8(self.0).unwrap_or("")
    }
}

impl core::fmt::Debug for Name<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl<'a> TensorInfo<'a> {
    /// The dimensions.
    pub fn dims(&self) -> &[u32] {
        self.dims.get(..self.rank as usize).unwrap_or(&[])
    }
    /// The tensor's name (for diagnostics).
    pub fn name(&self) -> &'a str {
        self.name.as_str()
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self.dtype {
            // Packed: the dimensions' product (`Model::parse` checked it against the bytes).
            ElementType::I4 => self.dims().iter().fold(1usize, |a, &d| a.saturating_mul(d as usize)),
            _ => self.byte_len as usize / self.dtype.size(),
        }
    }
    /// True if the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.byte_len == 0
    }
    /// The constant bytes, if this is a constant.
    pub fn const_bytes(&self) -> Option<&'a [u8]> {
        match self.storage {
            Storage::Const(off) => slice(self.model, off as usize, self.byte_len as usize, "tensor data").ok(),
            Storage::Arena(_) => None,
        }
    }
    /// The constant data as `T` elements, in place (`T` must match the dtype's size).
    pub fn const_data<T: bytemuck::Pod>(&self) -> Result<&'a [T], Error> {
        match self.storage {
            Storage::Const(off) => {
                if core::mem::size_of::<T>() != self.dtype.size() || self.dtype == ElementType::I4 {
                    return Err(Error::BadTensor {
                        index: self.index,
                        reason: "element size does not match the dtype",
                    });
                }
                pod_slice(self.model, off as usize, self.len(), "tensor data")
            }
            Storage::Arena(_) => Err(Error::BadTensor { index: self.index, reason: "not a constant" }),
        }
    }
    /// Per-tensor scale and zero point, if the tensor is quantized per tensor.
    pub fn per_tensor(&self) -> Option<(f32, i32)> {
        match self.quant {
            Quant::PerTensor { scale, zero_point } => Some((scale, zero_point)),
            _ => None,
        }
    }
}

/// One op of a model.
#[derive(Debug, Clone, Copy)]
pub struct OpInfo<'a> {
    model: &'a [u8],
    /// Index in the op table.
    pub index: u32,
    /// The op kind.
    pub kind: OpKind,
    /// Flags (bit 0: in place).
    pub flags: u16,
    inputs_off: usize,
    n_inputs: u16,
    outputs_off: usize,
    n_outputs: u16,
    params: &'a [u8],
    /// Arena offset of the op's scratch buffer.
    pub scratch_offset: u32,
    /// Scratch length in bytes (0 = none).
    pub scratch_len: u32,
    name: Name<'a>,
}

impl<'a> OpInfo<'a> {
    /// Number of inputs (including absent optional ones).
    pub fn num_inputs(&self) -> usize {
        self.n_inputs as usize
    }
    /// Number of outputs.
    pub fn num_outputs(&self) -> usize {
        self.n_outputs as usize
    }
    /// Tensor index of input `i` ([`ABSENT`] for an absent optional input).
    pub fn input(&self, i: usize) -> Result<u32, Error> {
        if i >= self.n_inputs as usize {
            return Err(Error::BadOp { index: self.index, reason: "input index out of range" });
        }
        u32_at(self.model, self.inputs_off + 4 * i, "op inputs")
    }
    /// Tensor index of output `i`.
    pub fn output(&self, i: usize) -> Result<u32, Error> {
        if i >= self.n_outputs as usize {
            return Err(Error::BadOp { index: self.index, reason: "output index out of range" });
        }
        u32_at(self.model, self.outputs_off + 4 * i, "op outputs")
    }
    /// The op's parameter block.
    pub fn params(&self) -> &'a [u8] {
        self.params
    }
    /// True if the op writes its output over its first input.
    pub fn in_place(&self) -> bool {
        self.flags & OP_FLAG_IN_PLACE != 0
    }
    /// Output rows per chunk of a convolution that runs in place by chunks (0: not by chunks).
    pub fn chunk_rows(&self) -> u8 {
        if self.in_place() { (self.flags >> OP_CHUNK_ROWS_SHIFT) as u8 } else { 0 }
    }
    /// The op's name (for diagnostics).
    pub fn name(&self) -> &'a str {
        self.name.as_str()
    }
}

/// One metadata key/value pair.
#[derive(Debug, Clone, Copy)]
pub struct MetaEntry<'a> {
    /// Key, e.g. `producer`.
    pub key: &'a str,
    /// Value.
    pub value: &'a str,
}

impl core::fmt::Debug for Model<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Model")
            .field("bytes", &self.buf.len())
            .field("tensors", &self.n_tensors)
            .field("ops", &self.n_ops)
            .field("arena_len", &self.arena_len)
            .finish()
    }
}

/// The fixed-size record at `off` (tensor or op table entry): bounds-checked once, so its fields
/// are read at constant offsets without a check each ([`Model::parse`] has checked the tables fit
/// in the file, so this does not fail on a parsed model).
#[inline]
fn record<'a, const N: usize>(buf: &'a [u8], off: usize, what: &'static str) -> Result<&'a [u8; N], Error> {
    slice(buf, off, N, what)?.try_into().map_err(|_| Error::OutOfBounds { what, offset: off as u64, len: N as u64 })
}

/// Field readers for [`record`]s: the offsets are constants inside the record (0 if not, which
/// the record layouts rule out).
#[inline(always)]
fn rec_u16<const N: usize>(rec: &[u8; N], o: usize) -> u16 {
    match rec.get(o..o + 2) {
        Some(&[a, b]) => u16::from_le_bytes([a, b]),
        _ => 0,
    }
}

#[inline(always)]
fn rec_u32<const N: usize>(rec: &[u8; N], o: usize) -> u32 {
    match rec.get(o..o + 4) {
        Some(&[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]),
        _ => 0,
    }
}

fn aligned16(off: usize) -> bool {
    off % ALIGN == 0
}

impl<'a> Model<'a> {
    /// Validates `buf` as a `.mq` model (see `docs/FORMAT.md`, "Validation on load").
    ///
    /// # Errors
    /// A typed error for each kind of damage: [`Error::Truncated`], [`Error::BadMagic`],
    /// [`Error::UnsupportedVersion`], [`Error::CrcMismatch`], [`Error::Misaligned`],
    /// [`Error::OutOfBounds`], [`Error::BadTensor`], [`Error::BadOp`], [`Error::UnsupportedOp`].
    pub fn parse(buf: &'a [u8]) -> Result<Self, Error> {
        Self::header(buf)?.validate()
    }

    /// Checks the header (length, magic, major version, file length, CRC, alignment) and reads
    /// its fields: what [`parse`](Self::parse) checks first and
    /// [`parse_prevalidated`](Self::parse_prevalidated) checks at all.
    fn header(buf: &'a [u8]) -> Result<Self, Error> {
        if buf.len() < HEADER_LEN {
            return Err(Error::Truncated { needed: HEADER_LEN as u64, actual: buf.len() as u64 });
        }
        if slice(buf, hdr::MAGIC, 4, "magic")? != MAGIC {
            return Err(Error::BadMagic);
        }
        let major = u16_at(buf, hdr::MAJOR, "header")?;
        if major != FORMAT_MAJOR {
            return Err(Error::UnsupportedVersion { found: major, supported: FORMAT_MAJOR });
        }
        let header_len = u32_at(buf, hdr::HEADER_LEN, "header")? as usize;
        if header_len != HEADER_LEN {
            return Err(Error::BadHeader { reason: "header length is not 64" });
        }
        let file_len = u32_at(buf, hdr::FILE_LEN, "header")? as u64;
        if file_len != buf.len() as u64 {
            return Err(Error::Truncated { needed: file_len, actual: buf.len() as u64 });
        }
        let stored = u32_at(buf, hdr::CRC, "header")?;
        let computed = file_crc(buf);
        if stored != computed {
            return Err(Error::CrcMismatch { stored, computed });
        }
        if buf.as_ptr().align_offset(4) != 0 {
            return Err(Error::Misaligned { what: "model buffer (needs 4-byte alignment)", offset: 0 });
        }
        let rd = |off| u32_at(buf, off, "header");
        let m = Model {
            buf,
            flags: rd(hdr::FLAGS)?,
            arena_len: rd(hdr::ARENA_LEN)?,
            tensors_off: rd(hdr::TENSORS_OFF)? as usize,
            n_tensors: rd(hdr::N_TENSORS)?,
            ops_off: rd(hdr::OPS_OFF)? as usize,
            n_ops: rd(hdr::N_OPS)?,
            io_off: rd(hdr::IO_OFF)? as usize,
            n_inputs: 0,
            n_outputs: 0,
            strings_off: rd(hdr::STRINGS_OFF)? as usize,
            strings_len: rd(hdr::STRINGS_LEN)? as usize,
            meta_off: rd(hdr::META_OFF)? as usize,
            n_meta: rd(hdr::N_META)?,
        };
        Ok(m)
    }

    /// A model whose bytes were validated completely before, when the firmware was built (by
    /// [`parse`](Self::parse) and every op check of
    /// [`Interpreter::new`](crate::interp::Interpreter::new)), identified by their CRC:
    /// checks the header as [`parse`](Self::parse) does, the CRC of every byte included, and
    /// that the CRC is `validated_crc` (the one of the bytes validated), then skips the
    /// per-tensor, per-op and per-name checks, which would find the same as at build time. The
    /// boot path of an embedded model (`firmware/build_model.rs`); a model received at run time
    /// goes through [`parse`](Self::parse).
    ///
    /// Should other bytes come with a CRC equal to `validated_crc` (a collision, or a caller
    /// passing the CRC of other bytes), nothing becomes unsafe: the interpreter's run-time
    /// reads are bounds-checked and return an error instead of panicking; only the promise that
    /// `invoke` cannot fail is lost.
    ///
    /// # Errors
    /// [`Error::CrcMismatch`] when the bytes' CRC is not `validated_crc` (then `stored` is
    /// `validated_crc`), and the header errors of [`parse`](Self::parse).
    pub fn parse_prevalidated(buf: &'a [u8], validated_crc: u32) -> Result<Self, Error> {
        let mut m = Self::header(buf)?;
        let stored = u32_at(buf, hdr::CRC, "header")?;
        if stored != validated_crc {
            return Err(Error::CrcMismatch { stored: validated_crc, computed: stored });
        }
        m.n_inputs = u32_at(buf, m.io_off, "io table")?;
        m.n_outputs = u32_at(buf, m.io_off + 4, "io table")?;
        Ok(m)
    }

    fn validate(mut self) -> Result<Self, Error> {
        let buf = self.buf;
        for (off, what) in [
            (self.tensors_off, "tensor table"),
            (self.ops_off, "op table"),
            (self.io_off, "io table"),
            (self.meta_off, "metadata table"),
        ] {
            if !aligned16(off) {
                return Err(Error::Misaligned { what, offset: off as u64 });
            }
        }
        let table = |off: usize, n: u32, rec: usize, what| -> Result<(), Error> {
            let len =
                (n as usize).checked_mul(rec).ok_or(Error::OutOfBounds { what, offset: off as u64, len: u64::MAX })?;
            slice(buf, off, len, what).map(|_| ())
        };
        table(self.tensors_off, self.n_tensors, TENSOR_RECORD_LEN, "tensor table")?;
        table(self.ops_off, self.n_ops, OP_RECORD_LEN, "op table")?;
        table(self.meta_off, self.n_meta, META_RECORD_LEN, "metadata table")?;
        slice(buf, self.strings_off, self.strings_len, "string table")?;
        self.n_inputs = u32_at(buf, self.io_off, "io table")?;
        self.n_outputs = u32_at(buf, self.io_off + 4, "io table")?;
        let n_io = (self.n_inputs as u64) + (self.n_outputs as u64);
        slice(buf, self.io_off + 8, (n_io * 4).min(usize::MAX as u64) as usize, "io table")?;
        // The furthest arena byte any tensor or scratch buffer reaches: the planner's arena ends
        // there (rounded up to 16), so a larger declared arena is refused below, before a
        // caller allocates it.
        let mut reach = 0u64;
        for i in 0..self.n_tensors {
            let t = self.tensor_at(i, true)?;
            if let Storage::Arena(off) = t.storage {
                let end = off as u64 + t.byte_len as u64;
                reach = reach.max(end);
                if end > self.arena_len as u64 {
                    return Err(Error::BadTensor { index: i, reason: "arena bytes outside the planned arena" });
                }
                if off as usize % t.dtype.size() != 0 {
                    return Err(Error::BadTensor { index: i, reason: "arena offset not aligned to the element size" });
                }
            }
        }
        for i in 0..self.n_ops {
            let op = self.op_at(i, true)?;
            for k in 0..op.num_inputs() {
                let t = op.input(k)?;
                if t != ABSENT && t >= self.n_tensors {
                    return Err(Error::BadOp { index: i, reason: "input tensor index out of range" });
                }
            }
            for k in 0..op.num_outputs() {
                if op.output(k)? >= self.n_tensors {
                    return Err(Error::BadOp { index: i, reason: "output tensor index out of range" });
                }
            }
            if op.scratch_len > 0 && op.scratch_offset as u64 + op.scratch_len as u64 > self.arena_len as u64 {
                return Err(Error::BadOp { index: i, reason: "scratch buffer outside the planned arena" });
            }
            if op.scratch_len > 0 {
                reach = reach.max(op.scratch_offset as u64 + op.scratch_len as u64);
            }
        }
        if self.arena_len as u64 > reach.next_multiple_of(16) {
            return Err(Error::BadHeader {
                reason: "the planned arena is larger than its tensors and scratch buffers reach",
            });
        }
        for k in 0..(self.n_inputs + self.n_outputs) {
            let t = u32_at(buf, self.io_off + 8 + 4 * k as usize, "io table")?;
            if t >= self.n_tensors {
                return Err(Error::BadHeader { reason: "model input/output tensor index out of range" });
            }
        }
        for i in 0..self.n_meta {
            self.meta(i)?;
        }
        Ok(self)
    }

    fn string(&self, off: u32, len: u32, what: &'static str) -> Result<&'a str, Error> {
        let b = self.string_bytes(off, len, what)?;
        core::str::from_utf8(b).map_err(|_| Error::BadHeader { reason: "a name is not UTF-8" })
    }

    /// A name's bytes, bounds-checked; `check` also checks they are UTF-8 (done for every name
    /// when the model is parsed, so later lookups skip it).
    fn name(&self, off: u32, len: u32, what: &'static str, check: bool) -> Result<Name<'a>, Error> {
        if check {
            self.string(off, len, what).map(|s| Name(s.as_bytes()))
        } else {
            self.string_bytes(off, len, what).map(Name)
        }
    }

    fn string_bytes(&self, off: u32, len: u32, what: &'static str) -> Result<&'a [u8], Error> {
        let end = off as u64 + len as u64;
        if end > self.strings_len as u64 {
            return Err(Error::OutOfBounds { what, offset: off as u64, len: len as u64 });
        }
        slice(self.buf, self.strings_off + off as usize, len as usize, what)
    }

    /// The format version of the file, `(major, minor)`.
    pub fn format_version(&self) -> (u16, u16) {
        (FORMAT_MAJOR, u16_at(self.buf, hdr::MINOR, "header").unwrap_or(0))
    }
    /// The raw bytes of the model.
    pub fn bytes(&self) -> &'a [u8] {
        self.buf
    }
    /// Arena bytes the model needs (activations and scratch), with a 16-byte aligned arena.
    pub fn arena_len(&self) -> usize {
        self.arena_len as usize
    }
    /// True if the model's names and metadata were stripped ([`strip`](super::strip)): its
    /// names are empty and it has no metadata.
    pub fn is_stripped(&self) -> bool {
        self.flags & FLAG_STRIPPED != 0
    }
    /// The file's CRC-32 (as stored in its header; [`parse`](Self::parse) checked it).
    pub fn crc(&self) -> u32 {
        u32_at(self.buf, hdr::CRC, "header").unwrap_or(0)
    }
    /// True if the model was converted for TFLite-interpreter (single) rounding.
    pub fn single_rounding(&self) -> bool {
        self.flags & FLAG_SINGLE_ROUNDING != 0
    }
    /// Number of tensors.
    pub fn num_tensors(&self) -> usize {
        self.n_tensors as usize
    }
    /// Number of ops.
    pub fn num_ops(&self) -> usize {
        self.n_ops as usize
    }
    /// Number of model inputs.
    pub fn num_inputs(&self) -> usize {
        self.n_inputs as usize
    }
    /// Number of model outputs.
    pub fn num_outputs(&self) -> usize {
        self.n_outputs as usize
    }
    /// Number of metadata entries.
    pub fn num_meta(&self) -> usize {
        self.n_meta as usize
    }

    /// Tensor index of model input `i`.
    pub fn input_index(&self, i: usize) -> Result<u32, Error> {
        if i >= self.n_inputs as usize {
            return Err(Error::BadIndex { what: "model input", index: i as u32 });
        }
        u32_at(self.buf, self.io_off + 8 + 4 * i, "io table")
    }
    /// Tensor index of model output `i`.
    pub fn output_index(&self, i: usize) -> Result<u32, Error> {
        if i >= self.n_outputs as usize {
            return Err(Error::BadIndex { what: "model output", index: i as u32 });
        }
        u32_at(self.buf, self.io_off + 8 + 4 * (self.n_inputs as usize + i), "io table")
    }

    /// Tensor `i`.
    pub fn tensor(&self, i: u32) -> Result<TensorInfo<'a>, Error> {
        self.tensor_at(i, false)
    }

    /// Tensor `i`; `full` also runs the checks [`Model::parse`] made once for every tensor
    /// (names are UTF-8, per-channel scales finite and positive), which later lookups of the
    /// same immutable bytes skip.
    fn tensor_at(&self, i: u32, full: bool) -> Result<TensorInfo<'a>, Error> {
        if i >= self.n_tensors {
            return Err(Error::BadIndex { what: "tensor", index: i });
        }
        let buf = self.buf;
        let r = self.tensors_off + TENSOR_RECORD_LEN * i as usize;
        let what = "tensor record";
        let rec: &[u8; TENSOR_RECORD_LEN] = record(buf, r, what)?;
        let dtype = ElementType::from_code(u8_at(rec, 0, what)?)
            .ok_or(Error::BadTensor { index: i, reason: "unknown dtype" })?;
        let rank = u8_at(rec, 1, what)?;
        if rank as usize > MAX_RANK {
            return Err(Error::BadTensor { index: i, reason: "rank above 6" });
        }
        let mut dims = [0u32; MAX_RANK];
        let mut count: u64 = 1;
        for (k, d) in dims.iter_mut().enumerate().take(rank as usize) {
            *d = rec_u32(rec, 4 + 4 * k);
            count =
                count.checked_mul(*d as u64).ok_or(Error::BadTensor { index: i, reason: "element count overflows" })?;
        }
        let data_off = rec_u32(rec, 28);
        let byte_len = rec_u32(rec, 32);
        let expected = dtype.byte_len(count).ok_or(Error::BadTensor { index: i, reason: "byte length overflows" })?;
        if expected != byte_len as u64 {
            return Err(Error::BadTensor { index: i, reason: "byte length does not match the shape" });
        }
        let storage = match u8_at(rec, 2, what)? {
            0 => Storage::Arena(data_off),
            1 => {
                let s = slice(buf, data_off as usize, byte_len as usize, "tensor data")?;
                if (s.as_ptr() as usize) % dtype.size().max(1) != 0 {
                    return Err(Error::Misaligned { what: "constant tensor data", offset: data_off as u64 });
                }
                Storage::Const(data_off)
            }
            _ => return Err(Error::BadTensor { index: i, reason: "unknown storage kind" }),
        };
        let qa = rec_u32(rec, 36);
        let qb = rec_u32(rec, 40);
        let qcount = rec_u16(rec, 44);
        let axis = u8_at(rec, 46, what)?;
        let quant = match u8_at(rec, 3, what)? {
            0 => Quant::None,
            1 => {
                let scale = f32::from_bits(qa);
                if !(scale.is_finite() && scale > 0.0) {
                    return Err(Error::BadTensor { index: i, reason: "scale is not finite and positive" });
                }
                Quant::PerTensor { scale, zero_point: qb as i32 }
            }
            2 => {
                if axis >= rank || dims.get(axis as usize).copied() != Some(qcount as u32) {
                    return Err(Error::BadTensor {
                        index: i,
                        reason: "per-channel count does not match the quantized axis",
                    });
                }
                let scales: &[f32] = pod_slice(buf, qa as usize, qcount as usize, "per-channel scales")?;
                let zero_points: &[i32] = pod_slice(buf, qb as usize, qcount as usize, "per-channel zero points")?;
                if full && scales.iter().any(|s| !(s.is_finite() && *s > 0.0)) {
                    return Err(Error::BadTensor {
                        index: i,
                        reason: "a per-channel scale is not finite and positive",
                    });
                }
                Quant::PerChannel { scales, zero_points, axis }
            }
            3 => {
                if axis >= rank || dims.get(axis as usize).copied() != Some(qcount as u32) {
                    return Err(Error::BadTensor {
                        index: i,
                        reason: "per-channel count does not match the quantized axis",
                    });
                }
                Quant::PerChannelStripped { channels: qcount, axis }
            }
            _ => return Err(Error::BadTensor { index: i, reason: "unknown quantization kind" }),
        };
        let name = self.name(rec_u32(rec, 48), rec_u32(rec, 52), "tensor name", full)?;
        Ok(TensorInfo { model: buf, index: i, dtype, rank, dims, storage, byte_len, quant, name })
    }

    /// Op `i`.
    pub fn op(&self, i: u32) -> Result<OpInfo<'a>, Error> {
        self.op_at(i, false)
    }

    /// Op `i`; `full` also checks its name is UTF-8 (as [`Model::parse`] did for every op).
    fn op_at(&self, i: u32, full: bool) -> Result<OpInfo<'a>, Error> {
        if i >= self.n_ops {
            return Err(Error::BadIndex { what: "op", index: i });
        }
        let buf = self.buf;
        let r = self.ops_off + OP_RECORD_LEN * i as usize;
        let rec: &[u8; OP_RECORD_LEN] = record(buf, r, "op record")?;
        let code = rec_u16(rec, 0);
        let kind = OpKind::from_code(code).ok_or(Error::UnsupportedOp { index: i, code })?;
        let flags = rec_u16(rec, 2);
        let inputs_off = rec_u32(rec, 4) as usize;
        let n_inputs = rec_u16(rec, 8);
        let n_outputs = rec_u16(rec, 10);
        let outputs_off = rec_u32(rec, 12) as usize;
        slice(buf, inputs_off, 4 * n_inputs as usize, "op inputs")?;
        slice(buf, outputs_off, 4 * n_outputs as usize, "op outputs")?;
        let params_off = rec_u32(rec, 16) as usize;
        let params_len = rec_u32(rec, 20) as usize;
        let params = slice(buf, params_off, params_len, "op parameters")?;
        if params_off % 4 != 0 {
            return Err(Error::Misaligned { what: "op parameters", offset: params_off as u64 });
        }
        let scratch_offset = rec_u32(rec, 24);
        let scratch_len = rec_u32(rec, 28);
        let name = self.name(rec_u32(rec, 32), rec_u32(rec, 36), "op name", full)?;
        Ok(OpInfo {
            model: buf,
            index: i,
            kind,
            flags,
            inputs_off,
            n_inputs,
            outputs_off,
            n_outputs,
            params,
            scratch_offset,
            scratch_len,
            name,
        })
    }

    /// Metadata entry `i`.
    pub fn meta(&self, i: u32) -> Result<MetaEntry<'a>, Error> {
        if i >= self.n_meta {
            return Err(Error::BadIndex { what: "metadata entry", index: i });
        }
        let r = self.meta_off + META_RECORD_LEN * i as usize;
        let rd = |k: usize| u32_at(self.buf, r + 4 * k, "metadata record");
        Ok(MetaEntry {
            key: self.string(rd(0)?, rd(1)?, "metadata key")?,
            value: self.string(rd(2)?, rd(3)?, "metadata value")?,
        })
    }

    /// Multiply-accumulates of op `i` (conv, depthwise and fully connected; 0 for other ops).
    pub fn op_macs(&self, i: u32) -> Result<u64, Error> {
        let op = self.op(i)?;
        let prod = |d: &[u32]| d.iter().fold(1u64, |a, &x| a.saturating_mul(x as u64));
        let out = self.tensor(op.output(0)?)?;
        let out_len = out.len() as u64;
        let w = |k| -> Result<TensorInfo<'a>, Error> { self.tensor(op.input(k)?) };
        Ok(match op.kind {
            // filter [out_c, kh, kw, in_c]: each output element reads kh·kw·in_c weights.
            OpKind::Conv2d => out_len.saturating_mul(prod(w(1)?.dims().get(1..).unwrap_or(&[]))),
            // filter [1, kh, kw, c·m]: kh·kw weights per output element.
            OpKind::DepthwiseConv2d => out_len.saturating_mul(prod(w(1)?.dims().get(1..3).unwrap_or(&[]))),
            // weights [out, in].
            OpKind::FullyConnected => out_len.saturating_mul(w(1)?.dims().last().copied().unwrap_or(0) as u64),
            _ => 0,
        })
    }

    /// Bytes of constant data (weights, biases, multipliers, tables) in the file.
    pub fn const_bytes(&self) -> usize {
        (0..self.n_tensors)
            .filter_map(|i| self.tensor(i).ok())
            .filter(|t| matches!(t.storage, Storage::Const(_)))
            .map(|t| t.byte_len as usize)
            .sum()
    }

    /// The value of metadata `key`, if present.
    pub fn meta_value(&self, key: &str) -> Option<&'a str> {
        (0..self.n_meta).filter_map(|i| self.meta(i).ok()).find(|e| e.key == key).map(|e| e.value)
    }
}
