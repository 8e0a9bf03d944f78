//! Constants of format version 1 (`docs/FORMAT.md`).

/// The first four bytes of every `.mq` file.
pub const MAGIC: [u8; 4] = *b"MQNT";
/// Format major version this crate reads and writes. Bump on any change a reader of the previous
/// version would misread (header fields, record sizes or meanings, parameter blocks).
pub const FORMAT_MAJOR: u16 = 1;
/// Format minor version (additions a version-1 reader can ignore). 1.1 adds the header's
/// *stripped* flag; a file without it is written as 1.0.
pub const FORMAT_MINOR: u16 = 1;

pub(crate) const HEADER_LEN: usize = 64;
pub(crate) const TENSOR_RECORD_LEN: usize = 56;
pub(crate) const OP_RECORD_LEN: usize = 40;
pub(crate) const META_RECORD_LEN: usize = 16;
pub(crate) const MAX_RANK: usize = 6;
/// Alignment of tables and constant data in the file, and of tensors in the arena.
pub(crate) const ALIGN: usize = 16;

pub(crate) mod hdr {
    pub const MAGIC: usize = 0;
    pub const MAJOR: usize = 4;
    pub const MINOR: usize = 6;
    pub const HEADER_LEN: usize = 8;
    pub const FILE_LEN: usize = 12;
    pub const CRC: usize = 16;
    pub const FLAGS: usize = 20;
    pub const ARENA_LEN: usize = 24;
    pub const TENSORS_OFF: usize = 28;
    pub const N_TENSORS: usize = 32;
    pub const OPS_OFF: usize = 36;
    pub const N_OPS: usize = 40;
    pub const IO_OFF: usize = 44;
    pub const STRINGS_OFF: usize = 48;
    pub const STRINGS_LEN: usize = 52;
    pub const META_OFF: usize = 56;
    pub const N_META: usize = 60;
}

/// Header flag: the model was converted for TFLite-interpreter (single) rounding.
pub(crate) const FLAG_SINGLE_ROUNDING: u32 = 1;
/// Header flag (format 1.1): names and metadata were stripped ([`super::strip`]).
pub(crate) const FLAG_STRIPPED: u32 = 2;
/// Op flag: the op writes its output over its first input.
pub(crate) const OP_FLAG_IN_PLACE: u16 = 1;
/// Op flags, bits 8..16: output rows per chunk of a convolution that runs in place by chunks
/// (`crate::kernels::row_chunks`); 0 for every other op.
pub(crate) const OP_CHUNK_ROWS_SHIFT: u16 = 8;

/// The file's CRC: CRC-32 of all its bytes with the CRC field itself read as zeros, so every
/// other byte (the version fields included) is covered.
pub(crate) fn file_crc(buf: &[u8]) -> u32 {
    let mut d = super::crc::Crc32::new();
    d.update(buf.get(..hdr::CRC).unwrap_or(buf));
    d.update(&[0u8; 4]);
    d.update(buf.get(hdr::CRC + 4..).unwrap_or(&[]));
    d.finish()
}

/// Element type of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ElementType {
    /// Signed 8-bit integer.
    I8,
    /// Unsigned 8-bit integer.
    U8,
    /// Signed 16-bit integer.
    I16,
    /// Signed 32-bit integer.
    I32,
    /// 32-bit float.
    F32,
    /// Signed 64-bit integer.
    I64,
    /// Signed 4-bit integer (int4 weights), packed two per byte
    /// ([`crate::kernels::int4`]: TFLite's layout).
    I4,
}

impl ElementType {
    /// Size of one element in bytes; for [`ElementType::I4`], 1 (the unit its data is read
    /// in): its tensors take [`ElementType::byte_len`] bytes.
    pub const fn size(self) -> usize {
        match self {
            ElementType::I8 | ElementType::U8 | ElementType::I4 => 1,
            ElementType::I16 => 2,
            ElementType::I32 | ElementType::F32 => 4,
            ElementType::I64 => 8,
        }
    }
    /// The code stored in the file.
    pub const fn code(self) -> u8 {
        match self {
            ElementType::I8 => 1,
            ElementType::U8 => 2,
            ElementType::I16 => 3,
            ElementType::I32 => 4,
            ElementType::F32 => 5,
            ElementType::I64 => 6,
            ElementType::I4 => 7,
        }
    }
    /// Bytes `count` elements take: `count * size`, or `ceil(count / 2)` for the packed
    /// [`ElementType::I4`]; `None` on overflow.
    pub const fn byte_len(self, count: u64) -> Option<u64> {
        match self {
            ElementType::I4 => Some(count / 2 + count % 2),
            _ => count.checked_mul(self.size() as u64),
        }
    }
    /// The dtype of a stored code.
    pub const fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            1 => ElementType::I8,
            2 => ElementType::U8,
            3 => ElementType::I16,
            4 => ElementType::I32,
            5 => ElementType::F32,
            6 => ElementType::I64,
            7 => ElementType::I4,
            _ => return None,
        })
    }
}

macro_rules! op_kinds {
    ($($(#[$doc:meta])* $name:ident = $code:expr, $str:expr;)*) => {
        /// The kind of an op in a `.mq` model. Codes are stable: new kinds get new codes.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[cfg_attr(feature = "defmt", derive(defmt::Format))]
        #[non_exhaustive]
        pub enum OpKind { $($(#[$doc])* $name,)* }

        impl OpKind {
            /// The code stored in the file.
            pub const fn code(self) -> u16 { match self { $(OpKind::$name => $code,)* } }
            /// The kind of a stored code, `None` if this reader does not know it.
            pub const fn from_code(code: u16) -> Option<Self> {
                match code { $($code => Some(OpKind::$name),)* _ => None }
            }
            /// The op's name, as TFLite spells it.
            pub const fn name(self) -> &'static str { match self { $(OpKind::$name => $str,)* } }
        }
    };
}

op_kinds! {
    /// 2-D convolution.
    Conv2d = 1, "CONV_2D";
    /// Depthwise 2-D convolution.
    DepthwiseConv2d = 2, "DEPTHWISE_CONV_2D";
    /// Fully connected (dense) layer.
    FullyConnected = 3, "FULLY_CONNECTED";
    /// 2-D max pooling.
    MaxPool2d = 4, "MAX_POOL_2D";
    /// 2-D average pooling.
    AvgPool2d = 5, "AVERAGE_POOL_2D";
    /// Elementwise addition.
    Add = 6, "ADD";
    /// Elementwise multiplication.
    Mul = 7, "MUL";
    /// Softmax.
    Softmax = 8, "SOFTMAX";
    /// Logistic (sigmoid).
    Logistic = 9, "LOGISTIC";
    /// Hyperbolic tangent.
    Tanh = 10, "TANH";
    /// Hard swish.
    HardSwish = 11, "HARD_SWISH";
    /// Concatenation.
    Concatenation = 12, "CONCATENATION";
    /// Padding.
    Pad = 13, "PAD";
    /// Mean over axes.
    Mean = 14, "MEAN";
    /// Reshape (aliases its input).
    Reshape = 15, "RESHAPE";
    /// Transpose.
    Transpose = 16, "TRANSPOSE";
    /// Float to integer quantization.
    Quantize = 17, "QUANTIZE";
    /// Integer to float dequantization.
    Dequantize = 18, "DEQUANTIZE";
    /// Elementwise subtraction.
    Sub = 19, "SUB";
    /// ReLU family as a clamp (RELU, RELU6, RELU_N1_TO_1, any clamp `[lo, hi]`) with
    /// requantization (`kernels::relu`).
    Relu = 20, "RELU";
    /// Leaky ReLU.
    LeakyRelu = 21, "LEAKY_RELU";
    /// Nearest-neighbour resize (NHWC).
    ResizeNearestNeighbor = 50, "RESIZE_NEAREST_NEIGHBOR";
    /// Bilinear resize (NHWC).
    ResizeBilinear = 51, "RESIZE_BILINEAR";
    /// Strided slice (TFLite SLICE, STRIDED_SLICE; ONNX Slice, Split).
    StridedSlice = 40, "STRIDED_SLICE";
    /// Depth to space (NHWC; TFLite DEPTH_TO_SPACE, ONNX DepthToSpace DCR and CRD).
    DepthToSpace = 41, "DEPTH_TO_SPACE";
    /// Space to depth (NHWC).
    SpaceToDepth = 42, "SPACE_TO_DEPTH";
    /// Elementwise minimum (inputs and output share one quantization).
    Minimum = 30, "MINIMUM";
    /// Elementwise maximum (inputs and output share one quantization).
    Maximum = 31, "MAXIMUM";
    /// Parametric ReLU (slope tensor, broadcasting).
    Prelu = 32, "PRELU";
    /// An elementwise function as a 256-entry int8 table (`kernels::unary_lut`): exp, sqrt,
    /// erf, GELU, SiLU, ... (the functions TFLite Micro has no int8 kernel for).
    Lut = 22, "LUT";
    /// Elementwise division (int8).
    Div = 33, "DIV";
    /// Elementwise squared difference `(a − b)²` (int8).
    SquaredDifference = 34, "SQUARED_DIFFERENCE";
    /// Mirror padding (TFLite MIRROR_PAD reflect and symmetric; ONNX Pad reflect and edge).
    MirrorPad = 43, "MIRROR_PAD";
    /// Gather along one axis by constant indices (TFLite GATHER, ONNX Gather).
    Gather = 44, "GATHER";
    /// Tiling and broadcasting (TFLite TILE, BROADCAST_TO; ONNX Tile, Expand).
    Tile = 45, "TILE";
    /// Sum over axes.
    Sum = 52, "SUM";
    /// Max over axes.
    ReduceMax = 53, "REDUCE_MAX";
    /// Unidirectional sequence LSTM (TFLite Micro's integer cell), its state carried between
    /// invokes in its scratch region.
    Lstm = 60, "UNIDIRECTIONAL_SEQUENCE_LSTM";
    /// Transposed 2-D convolution (TFLite TRANSPOSE_CONV, ONNX ConvTranspose, MediaPipe's
    /// Convolution2DTransposeBias), its int32 (int64) accumulators in its scratch region.
    TransposeConv = 61, "TRANSPOSE_CONV";
    /// Batched matrix multiplication of two activations (TFLite BATCH_MATMUL, ONNX MatMul of two
    /// non-constant operands), batch dimensions broadcast.
    BatchMatMul = 62, "BATCH_MATMUL";
    /// Absolute value with requantization (TFLite ABS).
    Abs = 63, "ABS";
    /// Reciprocal square root (TFLite RSQRT's integer arithmetic).
    Rsqrt = 64, "RSQRT";
    /// ELU as TFLite's 256-entry int8 table.
    Elu = 65, "ELU";
    /// Negation with requantization (TFLite NEG).
    Neg = 66, "NEG";
}
