//! The interpreter: runs a `.mq` model in a caller-provided arena, without allocating.
//!
//! [`Interpreter::new`] validates everything once (the model's structure via
//! [`Model::parse`], then every op: kind, number and dtypes of inputs and outputs, shapes
//! against the op's parameters, parameter blocks, arena regions: each op's output and scratch
//! apart, and apart from every input it reads) and checks the arena is large enough.
//! [`Interpreter::invoke`] then runs the ops; nothing discoverable at load is left to fail there.
//!
//! An op runs in two steps: *prepare* (read its parameter words and tensor records, check them,
//! work out its kernel's parameters) and *run* (carve the arena, call the kernel). `invoke`
//! prepares each op again at every run, which needs no memory besides the arena: the device's
//! way. [`Interpreter::prepare_op`] keeps an op's prepared form for
//! [`Interpreter::invoke_prepared`], which only runs: for callers that have memory to spare and
//! run small models often (the npm package; on the digits CNN in wasm a run takes about a
//! quarter less time). Both call the same code, so their outputs are the same bits.

mod arena;
mod op_set;
mod ops;

pub use op_set::{AllOps, OpKinds, OpSet};
pub use ops::PreparedOp;

use core::marker::PhantomData;

use crate::Error;
use crate::kernels::Rounding;
use crate::model::{ElementType, Model, OpKind, Storage, TensorInfo};

/// Alignment the interpreter gives the arena's start (it skips up to 15 bytes of a
/// misaligned arena).
pub const ARENA_ALIGN: usize = 16;

/// Receives the start and end of every op during [`Interpreter::invoke_profiled`]; feed it
/// from a cycle counter on hardware, SysTick under QEMU `-icount`, or a clock on the host.
pub trait Profiler {
    /// Op `index` of kind `kind` is about to run.
    fn op_start(&mut self, index: u32, kind: OpKind);
    /// Op `index` has finished.
    fn op_end(&mut self, index: u32, kind: OpKind);
}

/// A profiler that does nothing.
impl Profiler for () {
    #[inline(always)]
    fn op_start(&mut self, _: u32, _: OpKind) {}
    #[inline(always)]
    fn op_end(&mut self, _: u32, _: OpKind) {}
}

/// Runs one model, with the kernels of the op kinds of `S` ([`OpSet`]; every kind by default).
pub struct Interpreter<'m, 'a, S: OpSet = AllOps> {
    model: Model<'m>,
    arena: &'a mut [u8],
    rounding: Rounding,
    op_set: PhantomData<S>,
}

impl<'m, 'a> Interpreter<'m, 'a> {
    /// Validates `model` and takes `arena` for its activations and scratch buffers; every op
    /// kind of this build may run ([`AllOps`]).
    ///
    /// # Errors
    /// Any model validation error ([`Model::parse`]), [`Error::BadOp`] / [`Error::UnsupportedOp`]
    /// for ops this build cannot run as stored, [`Error::ArenaOverlap`] for an op whose output
    /// or scratch shares arena bytes with an input it reads (or with each other), and
    /// [`Error::ArenaTooSmall`] (with the size needed) if `arena` is too small.
    pub fn new(model: &'m [u8], arena: &'a mut [u8]) -> Result<Self, Error> {
        Self::with_op_set(model, arena)
    }

    /// As [`new`](Self::new), but the ops' state (the LSTMs') is what `arena` holds: that an
    /// interpreter over the same model and arena left (the report's evaluator, fed in chunks,
    /// makes one interpreter per chunk and carries the state across them).
    #[cfg(feature = "alloc")]
    pub(crate) fn resume(model: &'m [u8], arena: &'a mut [u8]) -> Result<Self, Error> {
        Self::open(model, arena)
    }
}

impl<'m, 'a, S: OpSet> Interpreter<'m, 'a, S> {
    /// As [`Interpreter::new`], running only the op kinds of `S`: the kernels of the others are
    /// not linked into the program (see [`OpSet`]).
    ///
    /// # Errors
    /// Those of [`Interpreter::new`], and [`Error::OpNotInSet`] (the op and its kind) for a
    /// model with an op kind outside `S`.
    pub fn with_op_set(model: &'m [u8], arena: &'a mut [u8]) -> Result<Self, Error> {
        let mut it = Self::open(model, arena)?;
        it.reset_state()?;
        Ok(it)
    }

    /// Parses and validates `model` in `arena`, leaving the ops' state as `arena` holds it.
    fn open(model: &'m [u8], arena: &'a mut [u8]) -> Result<Self, Error> {
        let model = Model::parse(model)?;
        let it = Self::take_arena(model, arena)?;
        for i in 0..it.model.num_ops() as u32 {
            ops::validate::<S>(&it.model, i, it.rounding)?;
        }
        Ok(it)
    }

    /// As [`with_op_set`](Self::with_op_set) for a model the firmware's build validated
    /// completely (with [`Interpreter::new`], on the host, the same bytes), identified by their
    /// CRC ([`Model::parse_prevalidated`]): at boot it checks the header, the CRC of every byte
    /// against `validated_crc`, and the arena, and skips the per-tensor and per-op checks (an op
    /// outside `S`, which the build also rules out by writing `S` from the model, fails its run
    /// with [`Error::OpNotInSet`]). The firmware's application embeds its model this way
    /// (`firmware/build_model.rs`); a model loaded at run time (the firmware's runner) goes
    /// through [`Interpreter::new`].
    ///
    /// # Errors
    /// The errors of [`Model::parse_prevalidated`], and [`Error::ArenaTooSmall`].
    pub fn new_prevalidated(model: &'m [u8], arena: &'a mut [u8], validated_crc: u32) -> Result<Self, Error> {
        let model = Model::parse_prevalidated(model, validated_crc)?;
        let mut it = Self::take_arena(model, arena)?;
        it.reset_state()?;
        Ok(it)
    }

    /// The interpreter of `model` in `arena` (aligned, cut to the model's arena), unchecked ops.
    fn take_arena(model: Model<'m>, arena: &'a mut [u8]) -> Result<Self, Error> {
        let available = arena.len();
        let pad = arena.as_ptr().align_offset(ARENA_ALIGN);
        let needed = model.arena_len();
        let arena = match arena.get_mut(pad..).and_then(|a| a.get_mut(..needed)) {
            Some(a) => a,
            None => return Err(Error::ArenaTooSmall { needed: needed + pad, available }),
        };
        let rounding = if model.single_rounding() { Rounding::Single } else { Rounding::Double };
        Ok(Self { model, arena, rounding, op_set: PhantomData })
    }

    /// Sets the state that ops keep between invokes (the LSTMs' hidden and cell states) back to
    /// its start value, as [`new`](Self::new) leaves it: to begin a new sequence (a new
    /// utterance of streaming audio). Without it, each invoke continues from the state the last
    /// one left.
    pub fn reset_state(&mut self) -> Result<(), Error> {
        ops::reset_states::<S>(&self.model, self.arena, self.rounding)
    }

    /// The model being run.
    pub fn model(&self) -> &Model<'m> {
        &self.model
    }

    /// The rounding the model's requantizations use.
    pub fn rounding(&self) -> Rounding {
        self.rounding
    }

    /// Runs every op once.
    pub fn invoke(&mut self) -> Result<(), Error> {
        self.invoke_profiled(&mut ())
    }

    /// Runs every op once, telling `profiler` when each starts and ends.
    pub fn invoke_profiled<P: Profiler>(&mut self, profiler: &mut P) -> Result<(), Error> {
        for i in 0..self.model.num_ops() as u32 {
            let op = self.model.op(i)?;
            profiler.op_start(i, op.kind);
            ops::eval::<S>(&self.model, &op, self.arena, self.rounding)?;
            profiler.op_end(i, op.kind);
        }
        Ok(())
    }

    /// Op `index`, prepared for [`invoke_prepared`](Self::invoke_prepared): its parameter
    /// words, tensors and quantization read and checked once, where [`invoke`](Self::invoke)
    /// reads them again at every run. A plan (one `PreparedOp` per op, kept by the caller)
    /// costs memory (`size_of::<PreparedOp>()` bytes per op) and saves that work at every run:
    /// worth it for small models run often (the npm package runs every model this way); the
    /// device keeps the RAM and reads the records.
    ///
    /// # Errors
    /// [`Error::BadIndex`] for an index past the last op (the model's ops were validated when
    /// the interpreter was made, so no other error is expected).
    pub fn prepare_op(&self, index: usize) -> Result<PreparedOp<'m>, Error> {
        let i = u32::try_from(index).map_err(|_| Error::BadIndex { what: "op", index: u32::MAX })?;
        ops::prepare::<S>(&self.model, i, self.rounding)
    }

    /// Runs every op once from `plan`: one [`PreparedOp`] per op of this model, in order
    /// ([`prepare_op`](Self::prepare_op) of `0..num_ops()`). The outputs are those of
    /// [`invoke`](Self::invoke), bit for bit: both run the same kernels with the same parameters.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `plan` does not have one op per op of the model,
    /// [`Error::BadOp`] if an entry is not the op at its position or was prepared from another
    /// model's bytes.
    pub fn invoke_prepared(&mut self, plan: &[PreparedOp<'m>]) -> Result<(), Error> {
        self.invoke_prepared_profiled(plan, &mut ())
    }

    /// [`invoke_prepared`](Self::invoke_prepared), telling `profiler` when each op starts and
    /// ends.
    pub fn invoke_prepared_profiled<P: Profiler>(
        &mut self,
        plan: &[PreparedOp<'m>],
        profiler: &mut P,
    ) -> Result<(), Error> {
        if plan.len() != self.model.num_ops() {
            return Err(Error::InvalidArgument { reason: "a plan needs one prepared op per op of the model" });
        }
        for (i, op) in plan.iter().enumerate() {
            if op.index as usize != i {
                return Err(Error::BadOp { index: op.index, reason: "prepared op out of place in the plan" });
            }
            profiler.op_start(op.index, op.kind);
            ops::run_prepared::<S>(&self.model, op, self.arena, self.rounding)?;
            profiler.op_end(op.index, op.kind);
        }
        Ok(())
    }

    /// Runs op `index` alone (ops must run in order; use this to inspect every layer's output
    /// with [`tensor_bytes`](Self::tensor_bytes) right after its op).
    pub fn run_op(&mut self, index: usize) -> Result<(), Error> {
        let op = self.model.op(index as u32)?;
        ops::eval::<S>(&self.model, &op, self.arena, self.rounding)
    }

    /// The current bytes of any tensor: an activation's arena bytes (valid right after the op
    /// that writes it, until the planner reuses them) or a constant's data.
    pub fn tensor_bytes(&self, index: u32) -> Result<&[u8], Error> {
        let t = self.model.tensor(index)?;
        match t.storage {
            Storage::Arena(off) => self
                .arena
                .get(off as usize..off as usize + t.byte_len as usize)
                .ok_or(Error::BadTensor { index, reason: "outside the arena" }),
            Storage::Const(_) => t.const_bytes().ok_or(Error::BadTensor { index, reason: "outside the model" }),
        }
    }

    fn arena_tensor(&self, t: &TensorInfo<'m>) -> Result<(usize, usize), Error> {
        match t.storage {
            Storage::Arena(off) => Ok((off as usize, t.byte_len as usize)),
            Storage::Const(_) => Err(Error::BadTensor { index: t.index, reason: "model input/output is a constant" }),
        }
    }

    /// Model input `i`: its description (shape, dtype, quantization).
    pub fn input_info(&self, i: usize) -> Result<TensorInfo<'m>, Error> {
        self.model.tensor(self.model.input_index(i)?)
    }

    /// Model output `i`: its description (shape, dtype, quantization).
    pub fn output_info(&self, i: usize) -> Result<TensorInfo<'m>, Error> {
        self.model.tensor(self.model.output_index(i)?)
    }

    /// The bytes of model input `i`, to fill before [`invoke`](Self::invoke).
    pub fn input_bytes(&mut self, i: usize) -> Result<&mut [u8], Error> {
        let t = self.input_info(i)?;
        let (off, len) = self.arena_tensor(&t)?;
        self.arena.get_mut(off..off + len).ok_or(Error::BadTensor { index: t.index, reason: "outside the arena" })
    }

    /// The bytes of model output `i`, valid after [`invoke`](Self::invoke).
    pub fn output_bytes(&self, i: usize) -> Result<&[u8], Error> {
        let t = self.output_info(i)?;
        let (off, len) = self.arena_tensor(&t)?;
        self.arena.get(off..off + len).ok_or(Error::BadTensor { index: t.index, reason: "outside the arena" })
    }

    /// Model input `i` as int8 data (its dtype must be int8).
    pub fn input_i8(&mut self, i: usize) -> Result<&mut [i8], Error> {
        let t = self.input_info(i)?;
        if t.dtype != ElementType::I8 {
            return Err(Error::BadTensor { index: t.index, reason: "model input is not int8" });
        }
        bytemuck::try_cast_slice_mut(self.input_bytes(i)?)
            .map_err(|_| Error::BadTensor { index: t.index, reason: "model input is not int8" })
    }

    /// Model output `i` as int8 data (its dtype must be int8).
    pub fn output_i8(&self, i: usize) -> Result<&[i8], Error> {
        let t = self.output_info(i)?;
        if t.dtype != ElementType::I8 {
            return Err(Error::BadTensor { index: t.index, reason: "model output is not int8" });
        }
        bytemuck::try_cast_slice(self.output_bytes(i)?)
            .map_err(|_| Error::BadTensor { index: t.index, reason: "model output is not int8" })
    }
}
