//! The `.mq` model format (see `docs/FORMAT.md`): a zero-copy reader for the device and, with
//! `alloc`, a writer and the arena planner used at conversion time.

mod bytes;
mod crc;
mod format;
mod reader;
pub mod words;

#[cfg(feature = "alloc")]
pub mod planner;
#[cfg(feature = "alloc")]
mod writer;

pub use crc::{Crc32, crc32};
pub use format::{ElementType, FORMAT_MAJOR, FORMAT_MINOR, MAGIC, OpKind};
pub use reader::{ABSENT, MetaEntry, Model, OpInfo, Quant, Storage, TensorInfo};
#[cfg(feature = "alloc")]
pub use writer::{AlignedBytes, ModelBuilder, OpSpec, TensorSpec, strip};
