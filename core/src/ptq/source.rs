//! Calibration samples as a stream ([`SampleSource`]): chunks of a few samples at a time, so
//! that the memory calibration and evaluation take does not grow with the number of samples.
//! [`SliceSource`] streams samples already in memory; the CLI streams `.npy` files and image
//! directories through the same trait.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::marker::PhantomData;

use crate::graph::ConvertError;

/// One calibration sample: one `Vec<f32>` per graph input, in the graph's layout.
pub type Sample = Vec<Vec<f32>>;

/// Samples per chunk that [`Calibrator::calibrate_source`](super::Calibrator::calibrate_source)
/// and [`convert_source`](super::convert_source) ask a source for: a few samples in memory at a
/// time (16 samples of 224×224×3 float32: 9.6 MB).
pub const CHUNK_SAMPLES: usize = 16;

/// A stream of calibration samples that can be replayed from its start: calibration may take
/// two passes (histogram observers: ranges, then histograms) and the report runs the samples
/// once more.
///
/// ```
/// use microquant::ptq::{SampleSource, SliceSource};
///
/// let samples = vec![vec![vec![1.0f32, 2.0]], vec![vec![3.0, 4.0]], vec![vec![5.0, 6.0]]];
/// let mut source = SliceSource::new(&samples);
/// assert_eq!(source.sample_count(), 3);
/// assert_eq!(source.next_chunk(2)?.len(), 2);
/// assert_eq!(source.next_chunk(2)?, &[vec![vec![5.0, 6.0]]][..]);
/// assert!(source.next_chunk(2)?.is_empty()); // the end
/// source.rewind()?;
/// assert_eq!(source.next_chunk(16)?.len(), 3);
/// # Ok::<(), microquant::ptq::SourceError>(())
/// ```
pub trait SampleSource {
    /// How many samples one pass gives.
    fn sample_count(&self) -> usize;

    /// Goes back to the first sample.
    ///
    /// # Errors
    /// The source's own (a file that cannot be reopened).
    fn rewind(&mut self) -> Result<(), SourceError>;

    /// The next samples, at most `max` (at least one while any is left; empty at the end of
    /// the pass). The slice is valid until the next call.
    ///
    /// # Errors
    /// The source's own: a file that cannot be read, is truncated or does not fit.
    fn next_chunk(&mut self, max: usize) -> Result<&[Sample], SourceError>;
}

/// What kind of problem a [`SourceError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SourceErrorKind {
    /// Reading failed (the operating system's error is in the message).
    Io,
    /// The data ends before the samples its header announces.
    Truncated,
    /// Not a file of the expected format, or a type the samples cannot have (int8 `.npy`).
    Format,
    /// A sample shape that does not fit the model input, or differs from the other files'.
    Shape,
    /// An image that does not decode.
    Decode,
    /// Inputs (or passes) with different numbers of samples.
    Count,
}

impl SourceErrorKind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Io => "read error",
            Self::Truncated => "truncated",
            Self::Format => "format",
            Self::Shape => "shape",
            Self::Decode => "decode error",
            Self::Count => "sample count",
        }
    }
}

/// An error of a [`SampleSource`]: its kind, a message and where (file, sample, byte offset).
///
/// ```
/// use microquant::ptq::{SourceError, SourceErrorKind};
///
/// let e = SourceError::new(SourceErrorKind::Truncated, "the file ends inside the sample")
///     .in_file("calib/b.npy")
///     .at_sample(41)
///     .at_offset(24_707_200);
/// assert_eq!(e.to_string(), "calib/b.npy: sample 41 (byte 24707200): truncated: the file ends inside the sample");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceError {
    kind: SourceErrorKind,
    message: String,
    file: Option<String>,
    sample: Option<usize>,
    offset: Option<u64>,
}

impl SourceError {
    /// An error of `kind` with no location (add it with the builder methods).
    pub fn new(kind: SourceErrorKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into(), file: None, sample: None, offset: None }
    }

    /// Names the file.
    #[must_use]
    pub fn in_file(mut self, file: impl Into<String>) -> Self {
        self.file = Some(file.into());
        self
    }

    /// The sample's index (within its file when a file is named).
    #[must_use]
    pub fn at_sample(mut self, index: usize) -> Self {
        self.sample = Some(index);
        self
    }

    /// The byte offset in the file.
    #[must_use]
    pub fn at_offset(mut self, offset: u64) -> Self {
        self.offset = Some(offset);
        self
    }

    /// What kind of problem this is.
    pub fn kind(&self) -> SourceErrorKind {
        self.kind
    }

    /// The file, if named.
    pub fn file(&self) -> Option<&str> {
        self.file.as_deref()
    }

    /// The sample index, if known.
    pub fn sample(&self) -> Option<usize> {
        self.sample
    }

    /// The byte offset, if known.
    pub fn offset(&self) -> Option<u64> {
        self.offset
    }

    /// The message, without the location.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{file}: ")?;
        }
        match (self.sample, self.offset) {
            (Some(s), Some(o)) => write!(f, "sample {s} (byte {o}): ")?,
            (Some(s), None) => write!(f, "sample {s}: ")?,
            (None, Some(o)) => write!(f, "byte {o}: ")?,
            (None, None) => {}
        }
        write!(f, "{}: {}", self.kind.as_str(), self.message)
    }
}

impl core::error::Error for SourceError {}

/// An error of a streamed calibration or conversion: the source's, or the conversion's.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamError {
    /// The samples could not be read.
    Source(SourceError),
    /// Calibration, quantization, compilation or evaluation failed.
    Convert(ConvertError),
}

impl From<SourceError> for StreamError {
    fn from(e: SourceError) -> Self {
        Self::Source(e)
    }
}

impl From<ConvertError> for StreamError {
    fn from(e: ConvertError) -> Self {
        Self::Convert(e)
    }
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Source(e) => write!(f, "{e}"),
            Self::Convert(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for StreamError {}

impl StreamError {
    /// For the slice APIs, whose [`SliceSource`] never fails: the conversion error (a source
    /// error, which cannot happen there, becomes an `InvalidGraph` one with its message).
    pub(crate) fn into_convert(self) -> ConvertError {
        match self {
            Self::Convert(e) => e,
            Self::Source(e) => {
                ConvertError::new(crate::graph::ConvertErrorKind::InvalidGraph, alloc::format!("samples: {e}"))
            }
        }
    }
}

/// A [`SampleSource`] over samples in memory (each `S` a list of input slices, as the slice
/// APIs take them); chunks are copied into a buffer of at most `max` samples.
#[derive(Debug)]
pub struct SliceSource<'a, S, V> {
    samples: &'a [S],
    at: usize,
    buf: Vec<Sample>,
    _inputs: PhantomData<fn() -> V>,
}

impl<'a, S, V> SliceSource<'a, S, V>
where
    S: AsRef<[V]>,
    V: AsRef<[f32]>,
{
    /// A source giving `samples` in order.
    pub fn new(samples: &'a [S]) -> Self {
        Self { samples, at: 0, buf: Vec::new(), _inputs: PhantomData }
    }
}

impl<S, V> SampleSource for SliceSource<'_, S, V>
where
    S: AsRef<[V]>,
    V: AsRef<[f32]>,
{
    fn sample_count(&self) -> usize {
        self.samples.len()
    }

    fn rewind(&mut self) -> Result<(), SourceError> {
        self.at = 0;
        Ok(())
    }

    fn next_chunk(&mut self, max: usize) -> Result<&[Sample], SourceError> {
        let end = self.at.saturating_add(max.max(1)).min(self.samples.len());
        let chunk = self.samples.get(self.at..end).unwrap_or(&[]);
        self.buf.truncate(chunk.len());
        for (i, s) in chunk.iter().enumerate() {
            if i == self.buf.len() {
                self.buf.push(Vec::new());
            }
            let inputs = s.as_ref();
            let dst = &mut self.buf[i];
            dst.resize_with(inputs.len(), Vec::new);
            for (d, x) in dst.iter_mut().zip(inputs) {
                d.clear();
                d.extend_from_slice(x.as_ref());
            }
        }
        self.at = end;
        Ok(&self.buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec;

    #[test]
    fn slice_source_chunks_and_rewinds() {
        let samples: Vec<Vec<Vec<f32>>> = (0..5).map(|i| vec![vec![i as f32], vec![-(i as f32), 0.5]]).collect();
        let mut s = SliceSource::new(&samples);
        let mut seen = Vec::new();
        for _ in 0..2 {
            s.rewind().unwrap();
            seen.clear();
            loop {
                let c = s.next_chunk(2).unwrap();
                if c.is_empty() {
                    break;
                }
                assert!(c.len() <= 2);
                seen.extend_from_slice(c);
            }
            assert_eq!(seen, samples);
        }
        // max 0 still makes progress.
        s.rewind().unwrap();
        assert_eq!(s.next_chunk(0).unwrap().len(), 1);
    }

    #[test]
    fn error_display_names_the_place() {
        let e = SourceError::new(SourceErrorKind::Shape, "[2, 3] does not fit").in_file("a.npy");
        assert_eq!(e.to_string(), "a.npy: shape: [2, 3] does not fit");
        assert_eq!(SourceError::new(SourceErrorKind::Io, "gone").at_offset(7).to_string(), "byte 7: read error: gone");
        assert_eq!(StreamError::from(e.clone()).to_string(), e.to_string());
    }
}
