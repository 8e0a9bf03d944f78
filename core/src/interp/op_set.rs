//! Op sets: which op kinds an interpreter runs and links (see [`OpSet`]).

use crate::model::OpKind;

/// A set of op kinds (by their stored codes, all below 127), and whether ops may compute with
/// int16 activations (16x8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpKinds(u128);

/// The bit of the int16 flag (no op kind has this code).
const INT16_BIT: u128 = 1 << 127;
/// The bit of the int4-weights flag (no op kind has this code).
const INT4_BIT: u128 = 1 << 126;

impl OpKinds {
    /// Every kind, int8 and 16x8.
    pub const ALL: Self = Self(u128::MAX);
    /// Every kind, without the int4-weight variants ([`with_int4`](Self::with_int4)).
    pub const ALL_INT8_WEIGHTS: Self = Self(!INT4_BIT);
    /// No kind.
    pub const NONE: Self = Self(0);

    /// The set of `kinds`.
    pub const fn of(kinds: &[OpKind]) -> Self {
        let mut s = Self::NONE;
        let mut i = 0;
        while i < kinds.len() {
            s = s.with(kinds[i]);
            i += 1;
        }
        s
    }

    /// This set and `kind`.
    pub const fn with(self, kind: OpKind) -> Self {
        Self(self.0 | Self::bit(kind))
    }

    /// Whether `kind` is in the set.
    pub const fn contains(self, kind: OpKind) -> bool {
        self.0 & Self::bit(kind) != 0
    }

    /// This set, with the 16x8 variants of its kinds (int16 activations): without it, only
    /// their int8 kernels are linked, and a model with an int16 activation is refused at load
    /// ([`Error::Int16NotInSet`](crate::Error::Int16NotInSet)).
    pub const fn with_int16(self) -> Self {
        Self(self.0 | INT16_BIT)
    }

    /// Whether the 16x8 variants are in the set.
    pub const fn int16(self) -> bool {
        self.0 & INT16_BIT != 0
    }

    /// This set, with the int4-weight variants of its conv, depthwise and fully connected
    /// kinds: without it their int4 kernels are not linked, and a model with int4 weights is
    /// refused at load ([`Error::Int4NotInSet`](crate::Error::Int4NotInSet)).
    pub const fn with_int4(self) -> Self {
        Self(self.0 | INT4_BIT)
    }

    /// Whether the int4-weight variants are in the set.
    pub const fn int4(self) -> bool {
        self.0 & INT4_BIT != 0
    }

    const fn bit(kind: OpKind) -> u128 {
        let code = kind.code();
        if code < 126 { 1 << code } else { 0 }
    }
}

/// Which op kinds an interpreter runs: the device's way to link only the kernels its model
/// needs (as TFLite Micro's `MicroMutableOpResolver` registers only the ops named).
///
/// An [`Interpreter`](super::Interpreter) is generic over an `OpSet`: a type whose
/// [`KINDS`](OpSet::KINDS) constant lists the op kinds it may run. The interpreter's dispatch
/// tests that constant for every kernel family, so a family outside the set is dead code that the
/// linker drops, with its kernels; and [`Interpreter::with_op_set`](super::Interpreter::with_op_set)
/// refuses a model with an op outside the set ([`Error::OpNotInSet`](crate::Error::OpNotInSet),
/// naming the op and its kind). [`AllOps`] (what [`Interpreter::new`](super::Interpreter::new)
/// uses) runs everything this build knows.
///
/// ```
/// use microquant::interp::{Interpreter, OpKinds, OpSet};
/// use microquant::model::OpKind;
///
/// /// The ops of a keyword-spotting CNN.
/// struct KwsOps;
/// impl OpSet for KwsOps {
///     const KINDS: OpKinds = OpKinds::of(&[
///         OpKind::Conv2d,
///         OpKind::DepthwiseConv2d,
///         OpKind::AvgPool2d,
///         OpKind::Reshape,
///         OpKind::FullyConnected,
///         OpKind::Softmax,
///     ]);
/// }
/// # fn run(model: &[u8], arena: &mut [u8]) -> Result<(), microquant::Error> {
/// let mut it = Interpreter::<KwsOps>::with_op_set(model, arena)?;
/// it.invoke()?;
/// # Ok(()) }
/// ```
///
/// A set without [`OpKinds::with_int16`] links only the int8 kernels of its kinds (their 16x8
/// variants, for int16 activations, are left out as well). The firmware's build script writes
/// this type from the model it embeds (`firmware/build_model.rs`).
pub trait OpSet {
    /// The kinds. A constant, so that the dispatch's tests of it fold away at compile time.
    const KINDS: OpKinds;
}

/// Every op kind of this build: what [`Interpreter::new`](super::Interpreter::new) runs.
#[derive(Debug, Clone, Copy)]
pub struct AllOps;

impl OpSet for AllOps {
    const KINDS: OpKinds = OpKinds::ALL;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_hold_what_they_are_given() {
        let s = OpKinds::of(&[OpKind::Conv2d, OpKind::Softmax]);
        assert!(s.contains(OpKind::Conv2d) && s.contains(OpKind::Softmax));
        assert!(!s.contains(OpKind::Lstm) && !s.contains(OpKind::DepthwiseConv2d));
        assert!(s.with(OpKind::Lstm).contains(OpKind::Lstm));
        assert!(OpKinds::ALL.int4() && !OpKinds::ALL_INT8_WEIGHTS.int4());
        assert!(OpKinds::ALL_INT8_WEIGHTS.contains(OpKind::Conv2d) && OpKinds::ALL_INT8_WEIGHTS.contains(OpKind::Lstm));
        assert!(OpKinds::ALL.contains(OpKind::BatchMatMul) && !OpKinds::NONE.contains(OpKind::Add));
        assert!(OpKinds::ALL.int16() && !s.int16() && s.with_int16().int16());
        assert!(s.with_int16().contains(OpKind::Conv2d) && !s.with_int16().contains(OpKind::Lstm));
    }
}
