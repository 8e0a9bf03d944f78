//! The kernel golden tests, written once (`no_std`): golden case → kernel parameters (TFLite's
//! Prepare, done by microquant) → every kernel path → bit-exact compare with both oracles.
//!
//! Each op family has a file with its case view (borrowed slices, the same type on every
//! target), a `check` function that runs one case through every path in both rounding modes, and
//! a macro that emits the family's tests for one target, as tract's reference-oracle test macros:
//!
//! | family | view | macro |
//! |---|---|---|
//! | conv (int8, 16x8) | [`conv::ConvCase`] | [`conv_golden_tests!`](crate::conv_golden_tests) |
//! | depthwise conv | [`depthwise::DepthwiseConvCase`] | [`depthwise_golden_tests!`](crate::depthwise_golden_tests) |
//! | fully connected | [`fully_connected::FullyConnectedCase`] | [`fully_connected_golden_tests!`](crate::fully_connected_golden_tests) |
//! | max / average pool | [`pooling::PoolCase`] | [`pool_golden_tests!`](crate::pool_golden_tests) |
//! | add, mul | [`binary::BinaryCase`] | [`binary_golden_tests!`](crate::binary_golden_tests) |
//! | softmax | [`softmax::SoftmaxCase`] | [`softmax_golden_tests!`](crate::softmax_golden_tests) |
//! | logistic, tanh, hard-swish | [`activation::UnaryCase`] | [`activation_golden_tests!`](crate::activation_golden_tests) |
//! | batch matmul (int8, 16x16) | [`batch_matmul::BatchMatMulCase`] | [`batch_matmul_golden_tests!`](crate::batch_matmul_golden_tests) |
//! | leaky relu (int8, 16x8) | [`leaky_relu::LeakyReluCase`] | [`leaky_relu_golden_tests!`](crate::leaky_relu_golden_tests) |
//! | relu / relu6 / relu_n1_to_1 / clamp, abs, neg, rsqrt, elu | [`elementwise_unary::ElementwiseUnaryCase`] | [`elementwise_unary_golden_tests!`](crate::elementwise_unary_golden_tests) |
//! | concat, pad, mean, reshape, transpose | [`shape`] | [`shape_golden_tests!`](crate::shape_golden_tests) |
//! | resize (nearest, bilinear) | [`spatial::ResizeCase`] | [`spatial_golden_tests!`](crate::spatial_golden_tests) |
//! | transpose conv (int8, 16x8) | [`transpose_conv::TransposeConvCase`] | [`transpose_conv_golden_tests!`](crate::transpose_conv_golden_tests) |
//! | slice, strided slice, depth to space, space to depth, mirror pad, gather, broadcast to | [`movement::MovementCase`] | [`movement_golden_tests!`](crate::movement_golden_tests) |
//!
//! A target instantiates a macro with its test attribute, the module that holds the golden files
//! (`golden` on the host and in wasm: the JSON files decoded once; on the device the constants
//! `build.rs` generates, with the same function names) and a [`Workspace`] (the output, scratch
//! and multiplier buffers; [`HeapWorkspace`] with `std`, static arrays on the device):
//!
//! ```ignore
//! microquant_tests::conv_golden_tests!(#[test], microquant_tests::oracle::golden, HeapWorkspace::default());
//! ```
//!
//! A check returns a [`Tally`] or a [`Failure`] (what differs, where, in which mode and path);
//! the macros report it with the target's `panic!` (`defmt::panic!` on the device).

use core::fmt;

use microquant::kernels::Rounding;
use microquant::kernels::common::FusedActivation;
use microquant::kernels::fully_connected::ExactMultiplier;

pub mod activation;
pub mod batch_matmul;
pub mod binary;
pub mod conv;
pub mod depthwise;
pub mod elementwise_unary;
pub mod fully_connected;
#[cfg(feature = "std")]
pub mod golden;
pub mod leaky_relu;
pub mod movement;
pub mod pooling;
pub mod recurrent;
pub mod shape;
pub mod softmax;
pub mod spatial;
pub mod transpose_conv;

/// Which oracle's output to compare against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Oracle {
    /// TFLite Micro's kernels: the reference for the default (double) rounding.
    Tflm,
    /// The TFLite interpreter's reference kernels (`BUILTIN_REF`): the reference for the
    /// single-rounding mode.
    TfliteRef,
}

/// Both rounding modes, each with the oracle it reproduces where the two differ.
pub const MODES: [(Rounding, Oracle); 2] = [(Rounding::Double, Oracle::Tflm), (Rounding::Single, Oracle::TfliteRef)];

/// Both oracles.
pub const ORACLES: [Oracle; 2] = [Oracle::Tflm, Oracle::TfliteRef];

/// A fused activation function, applied as a clamp of the quantized output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "std", derive(serde::Deserialize))]
pub enum Activation {
    /// No activation (clamp to the output type's range only).
    #[cfg_attr(feature = "std", serde(rename = "NONE"))]
    None,
    /// max(x, 0).
    #[cfg_attr(feature = "std", serde(rename = "RELU"))]
    Relu,
    /// min(max(x, 0), 6).
    #[cfg_attr(feature = "std", serde(rename = "RELU6"))]
    Relu6,
    /// min(max(x, -1), 1).
    #[cfg_attr(feature = "std", serde(rename = "RELU_N1_TO_1"))]
    ReluN1To1,
}

impl Activation {
    /// The kernels' form.
    pub fn fused(self) -> FusedActivation {
        match self {
            Activation::None => FusedActivation::None,
            Activation::Relu => FusedActivation::Relu,
            Activation::Relu6 => FusedActivation::Relu6,
            Activation::ReluN1To1 => FusedActivation::ReluN1To1,
        }
    }
}

/// TFLite padding mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "std", derive(serde::Deserialize))]
pub enum Padding {
    /// Output size `ceil(in / stride)`, zero-point padding split as TFLite does (extra on the
    /// bottom/right).
    #[cfg_attr(feature = "std", serde(rename = "SAME"))]
    Same,
    /// No padding: output size `ceil((in - dilated_kernel + 1) / stride)`.
    #[cfg_attr(feature = "std", serde(rename = "VALID"))]
    Valid,
}

impl Padding {
    /// The kernels' form.
    pub fn kernel(self) -> microquant::kernels::common::Padding {
        match self {
            Padding::Same => microquant::kernels::common::Padding::Same,
            Padding::Valid => microquant::kernels::common::Padding::Valid,
        }
    }
}

/// The values of a golden tensor.
#[derive(Debug, Clone, Copy)]
pub enum Values<'a> {
    /// int8.
    I8(&'a [i8]),
    /// int16 (16x8 activations).
    I16(&'a [i16]),
}

impl<'a> Values<'a> {
    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            Values::I8(v) => v.len(),
            Values::I16(v) => v.len(),
        }
    }
    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The int8 values (none if these are int16).
    pub fn i8(&self) -> Option<&'a [i8]> {
        if let Values::I8(v) = self { Some(v) } else { None }
    }
    /// The int16 values (none if these are int8).
    pub fn i16(&self) -> Option<&'a [i16]> {
        if let Values::I16(v) = self { Some(v) } else { None }
    }
}

/// A bias tensor: int32, or int64 (16x8 accumulators), or none.
#[derive(Debug, Clone, Copy)]
pub enum Bias<'a> {
    /// No bias.
    None,
    /// int32.
    I32(&'a [i32]),
    /// int64.
    I64(&'a [i64]),
}

/// The two oracles' outputs of a case: TFLite Micro's, and the TFLite interpreter's reference
/// kernels' when they differ from it.
#[derive(Debug, Clone, Copy)]
pub struct Expected<'a> {
    /// TFLite Micro's output.
    pub tflm: Values<'a>,
    /// The interpreter's output, `None` where it equals TFLite Micro's.
    pub tflite_ref: Option<Values<'a>>,
    /// The output shape.
    pub shape: &'a [usize],
}

impl<'a> Expected<'a> {
    /// The output of `oracle`.
    pub fn get(&self, oracle: Oracle) -> Values<'a> {
        match oracle {
            Oracle::Tflm => self.tflm,
            Oracle::TfliteRef => self.tflite_ref.unwrap_or(self.tflm),
        }
    }
    /// Number of output values.
    pub fn len(&self) -> usize {
        self.tflm.len()
    }
    /// True when the output is empty.
    pub fn is_empty(&self) -> bool {
        self.tflm.is_empty()
    }
    /// True when the oracles disagree somewhere.
    pub fn oracles_differ(&self) -> bool {
        self.tflite_ref.is_some()
    }
}

/// Views bytes as int8 values (for constants generated as byte strings).
pub const fn as_i8(b: &[u8]) -> &[i8] {
    // SAFETY: i8 and u8 have the same size and alignment, and every bit pattern is valid for both.
    unsafe { core::slice::from_raw_parts(b.as_ptr().cast::<i8>(), b.len()) }
}

/// What a case checked: output values compared, in every path, mode and oracle.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Cases run.
    pub cases: usize,
    /// Values compared, per mode (`[Double, Single]`, each against its oracle or both).
    pub elements: [usize; 2],
}

impl Tally {
    /// Adds another tally.
    pub fn add(&mut self, other: Tally) {
        self.cases += other.cases;
        self.elements[0] += other.elements[0];
        self.elements[1] += other.elements[1];
    }
    /// Values compared in both modes.
    pub fn total(&self) -> usize {
        self.elements[0] + self.elements[1]
    }
}

/// Where a check ran: case, mode, oracle and kernel path.
#[derive(Debug, Clone, Copy)]
pub struct At<'a> {
    /// Case name.
    pub case: &'a str,
    /// Rounding mode.
    pub rounding: Rounding,
    /// Oracle compared against.
    pub oracle: Oracle,
    /// Kernel path (`dispatched`, `reference`, `no scratch`, `per-tensor reference`, ...).
    pub path: &'static str,
}

/// Why a case failed.
#[derive(Debug, Clone, Copy)]
pub enum Failure<'a> {
    /// An output differs from the oracle's.
    Mismatch {
        /// Where.
        at: At<'a>,
        /// First differing position.
        position: usize,
        /// The oracle's value there.
        expected: i32,
        /// Ours.
        actual: i32,
        /// Positions that differ.
        differing: usize,
        /// Output length.
        len: usize,
    },
    /// The output length differs from the oracle's.
    Length {
        /// Where.
        at: At<'a>,
        /// The oracle's.
        expected: usize,
        /// Ours.
        actual: usize,
    },
    /// Prepare or a kernel returned an error.
    Kernel {
        /// Case name.
        case: &'a str,
        /// The step (`window`, `multipliers`, `prepare`, a kernel path).
        step: &'static str,
        /// The error.
        error: microquant::Error,
    },
    /// Prepare's output shape is not the oracle's.
    Shape {
        /// Case name.
        case: &'a str,
    },
    /// The case is not what the family expects (e.g. a filter that is not 4-D).
    BadCase {
        /// Case name.
        case: &'a str,
        /// What is wrong.
        reason: &'static str,
    },
    /// A [`Workspace`] buffer is too small for the case.
    Workspace {
        /// Case name.
        case: &'a str,
        /// Which buffer.
        buffer: &'static str,
        /// Length needed.
        needed: usize,
        /// Length available.
        available: usize,
    },
}

impl fmt::Display for Failure<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Mismatch { at, position, expected, actual, differing, len } => write!(
                f,
                "{} {:?} vs {:?} ({}): {differing} of {len} elements differ, first at {position}: expected {expected}, actual {actual}",
                at.case, at.rounding, at.oracle, at.path
            ),
            Failure::Length { at, expected, actual } => write!(
                f,
                "{} {:?} vs {:?} ({}): length: expected {expected}, actual {actual}",
                at.case, at.rounding, at.oracle, at.path
            ),
            Failure::Kernel { case, step, error } => write!(f, "{case}: {step}: {error}"),
            Failure::Shape { case } => write!(f, "{case}: output shape differs from the oracle's"),
            Failure::BadCase { case, reason } => write!(f, "{case}: {reason}"),
            Failure::Workspace { case, buffer, needed, available } => {
                write!(f, "{case}: workspace {buffer}: {needed} needed, {available} available")
            }
        }
    }
}

/// Compares `actual` with `expected` element by element; returns the number compared or the
/// first difference with the count of differing positions.
pub fn compare<'a, T: Copy + PartialEq + Into<i32>>(
    at: At<'a>,
    expected: &[T],
    actual: &[T],
) -> Result<usize, Failure<'a>> {
    if expected.len() != actual.len() {
        return Err(Failure::Length { at, expected: expected.len(), actual: actual.len() });
    }
    let differing = expected.iter().zip(actual).filter(|(e, a)| e != a).count();
    match expected.iter().zip(actual).position(|(e, a)| e != a) {
        None => Ok(expected.len()),
        Some(position) => Err(Failure::Mismatch {
            at,
            position,
            expected: expected[position].into(),
            actual: actual[position].into(),
            differing,
            len: expected.len(),
        }),
    }
}

/// Compares an output with an oracle's values of the same type.
fn compare_values<'a>(at: At<'a>, expected: Values<'_>, actual: Values<'_>) -> Result<usize, Failure<'a>> {
    match (expected, actual) {
        (Values::I8(e), Values::I8(a)) => compare(at, e, a),
        (Values::I16(e), Values::I16(a)) => compare(at, e, a),
        _ => Err(Failure::BadCase { case: at.case, reason: "output type differs from the oracle's" }),
    }
}

/// Maps a kernel error to a [`Failure`].
fn kernel<'a, T>(case: &'a str, step: &'static str, r: Result<T, microquant::Error>) -> Result<T, Failure<'a>> {
    r.map_err(|error| Failure::Kernel { case, step, error })
}

/// The buffers a check writes: outputs, scratch, per-channel multipliers. The device gives
/// static arrays, the host [`HeapWorkspace`]; a case that needs more fails with
/// [`Failure::Workspace`].
pub struct Workspace<'w> {
    /// int8 output.
    pub out_i8: &'w mut [i8],
    /// int16 output.
    pub out_i16: &'w mut [i16],
    /// Kernel scratch (bytes).
    pub scratch: &'w mut [u8],
    /// Accumulators (MEAN).
    pub acc: &'w mut [i32],
    /// Per-channel multipliers.
    pub multiplier: &'w mut [i32],
    /// Per-channel shifts.
    pub shift: &'w mut [i32],
    /// Per-channel exact multipliers (fully connected, single rounding).
    pub exact: &'w mut [ExactMultiplier],
}

/// Takes the first `n` elements of a workspace buffer, or fails naming it.
fn take<'s, 'a, T>(case: &'a str, buffer: &'static str, b: &'s mut [T], n: usize) -> Result<&'s mut [T], Failure<'a>> {
    let available = b.len();
    b.get_mut(..n).ok_or(Failure::Workspace { case, buffer, needed: n, available })
}

/// A [`Workspace`] on the heap, large enough for every golden file.
#[cfg(feature = "std")]
pub struct HeapWorkspace {
    out_i8: Vec<i8>,
    out_i16: Vec<i16>,
    scratch: Vec<u8>,
    acc: Vec<i32>,
    multiplier: Vec<i32>,
    shift: Vec<i32>,
    exact: Vec<ExactMultiplier>,
}

#[cfg(feature = "std")]
impl Default for HeapWorkspace {
    fn default() -> Self {
        const OUT: usize = 1 << 16;
        const CHANNELS: usize = 1024;
        HeapWorkspace {
            out_i8: vec![0; OUT],
            out_i16: vec![0; OUT],
            scratch: vec![0; 1 << 18],
            acc: vec![0; OUT],
            multiplier: vec![0; CHANNELS],
            shift: vec![0; CHANNELS],
            exact: vec![ExactMultiplier::default(); CHANNELS],
        }
    }
}

#[cfg(feature = "std")]
impl HeapWorkspace {
    /// The buffers as a [`Workspace`].
    pub fn get(&mut self) -> Workspace<'_> {
        Workspace {
            out_i8: &mut self.out_i8,
            out_i16: &mut self.out_i16,
            scratch: &mut self.scratch,
            acc: &mut self.acc,
            multiplier: &mut self.multiplier,
            shift: &mut self.shift,
            exact: &mut self.exact,
        }
    }
}

/// A golden file as the tests see it: its name and its cases (all of them, or on a small board
/// the subset `build.rs` embeds).
#[derive(Debug, Clone, Copy)]
pub struct File<C: 'static> {
    /// File name under `tests/golden/kernels/`.
    pub name: &'static str,
    /// The cases.
    pub cases: &'static [C],
    /// The output values of all cases (the file's `stats.elements` when complete).
    pub elements: usize,
    /// Cases where the two oracles disagree somewhere.
    pub cases_differing: usize,
}

/// Runs `check` on every case of `file`, in order; the summed tally, or the first failure.
pub fn run_file<C>(
    file: &File<C>,
    ws: &mut Workspace<'_>,
    check: impl Fn(&'static C, &mut Workspace<'_>) -> Result<Tally, Failure<'static>>,
) -> Result<Tally, Failure<'static>> {
    let mut tally = Tally::default();
    for c in file.cases {
        tally.add(check(c, ws)?);
    }
    Ok(tally)
}

/// A 4-D shape as [`Dims4`](microquant::kernels::Dims4), or a [`Failure::BadCase`].
fn dims4<'a>(case: &'a str, shape: &[usize]) -> Result<microquant::kernels::Dims4, Failure<'a>> {
    match *shape {
        [n, h, w, c] => Ok(microquant::kernels::Dims4::new(n, h, w, c)),
        _ => Err(Failure::BadCase { case, reason: "4-D tensor expected" }),
    }
}

/// What a target supplies to the golden test macros: its buffers and how it reports.
pub trait Target {
    /// Runs `f` with a workspace large enough for the target's golden cases.
    fn with_workspace<R>(f: impl FnOnce(&mut Workspace<'_>) -> R) -> R;
    /// Stops the test with the failure.
    fn fail(failure: Failure<'_>) -> !;
    /// Reports a passed test: `test` checked every case of `file` with `tally`.
    fn report(test: &str, file: &str, tally: Tally);
}

/// The host and wasm target: [`HeapWorkspace`], `panic!` and `println!`.
#[cfg(feature = "std")]
pub struct Std;

#[cfg(feature = "std")]
impl Target for Std {
    fn with_workspace<R>(f: impl FnOnce(&mut Workspace<'_>) -> R) -> R {
        f(&mut HeapWorkspace::default().get())
    }
    fn fail(failure: Failure<'_>) -> ! {
        panic!("{failure}")
    }
    fn report(test: &str, file: &str, tally: Tally) {
        println!(
            "{test}: {file}: {} cases, {} elements bit-exact in Rounding::Double, {} in Rounding::Single",
            tally.cases, tally.elements[0], tally.elements[1]
        );
    }
}

/// Runs one golden file through `check` on target `T`: every case, then the report; stops at
/// the first failure. The body of every test the macros emit.
pub fn run<T: Target, C>(
    test: &str,
    file: File<C>,
    check: impl Fn(&'static C, &mut Workspace<'_>) -> Result<Tally, Failure<'static>>,
) -> Tally {
    if file.cases.is_empty() {
        T::fail(Failure::BadCase { case: file.name, reason: "no cases in this golden file" });
    }
    let tally = T::with_workspace(|ws| run_file(&file, ws, check)).unwrap_or_else(|f| T::fail(f));
    T::report(test, file.name, tally);
    tally
}

/// Emits one golden test per `name => (file function, check function)`, in a module with the
/// list `TESTS` of them (for harnesses that take a list, such as the firmware's).
#[doc(hidden)]
#[macro_export]
macro_rules! __golden_tests {
    (mod $m:ident; $(#[$attr:meta])* target $t:ty; files $files:path;
     $($name:ident => ($file:ident, $check:path)),* $(,)?) => {
        /// Golden tests instantiated from `microquant_tests::oracle`.
        #[allow(unused_imports)]
        pub mod $m {
            use super::*;
            $crate::__golden_tests!(@each [$(#[$attr])*] $t; $files; $($name, $file, $check;)*);
            /// The tests of this module, by name.
            #[allow(dead_code)]
            pub const TESTS: &[(&str, fn())] = &[$((stringify!($name), $name)),*];
        }
    };
    (@each $attrs:tt $t:ty; $files:path; $($name:ident, $file:ident, $check:path;)*) => {
        $($crate::__golden_tests!(@one $attrs $t; $files; $name, $file, $check);)*
    };
    (@one [$($attrs:tt)*] $t:ty; $files:path; $name:ident, $file:ident, $check:path) => {
        $($attrs)*
        pub fn $name() {
            use $files as files;
            $crate::oracle::run::<$t, _>(stringify!($name), files::$file(), $check);
        }
    };
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::conv::{self, ConvCase};
    use super::{Expected, Failure, HeapWorkspace, Values, golden};

    /// The oracle itself fails where it should: one changed output value is reported with its
    /// position, the count and the first path that produced the right one.
    #[test]
    fn a_changed_golden_value_is_reported() {
        let c = *golden::conv_2d().cases.iter().find(|c| c.expected.len() > 3).expect("a case with 4 outputs");
        let mut bad = c.expected.tflm.i8().expect("int8 output").to_vec();
        bad[3] = bad[3].wrapping_add(1);
        let c = ConvCase { expected: Expected { tflm: Values::I8(&bad), tflite_ref: None, ..c.expected }, ..c };
        match conv::check(&c, &mut HeapWorkspace::default().get()) {
            Err(Failure::Mismatch { at, position: 3, differing: 1, .. }) => assert_eq!(at.path, "dispatched"),
            other => panic!("{other:?}"),
        }
    }

    /// A workspace too small for a case is a named failure, not a panic.
    #[test]
    fn a_small_workspace_is_reported() {
        let c = golden::conv_2d().cases[0];
        let mut ws = HeapWorkspace::default();
        let mut w = ws.get();
        w.out_i8 = &mut [];
        assert!(matches!(conv::check(&c, &mut w), Err(Failure::Workspace { buffer: "int8 output", .. })));
    }
}
