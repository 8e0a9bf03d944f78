//! The CLI's errors. Each is one line for the user (`microquant: error: ...`, exit status 1),
//! except `ClosedPipe`: standard output closed by its reader (`| head`), which ends the command
//! quietly with status 0.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use microquant::graph::ConvertError;

/// An error for the user: one line on stderr, non-zero exit (`ClosedPipe`: none, exit 0).
#[derive(Debug)]
pub enum CliError {
    /// Reading or writing a file failed.
    Io { path: PathBuf, source: io::Error },
    /// A `.mq` model that cannot be read or run.
    Model { path: PathBuf, source: microquant::Error },
    /// Importing, preparing, quantizing or compiling the model at `path` failed.
    Convert { path: PathBuf, source: ConvertError },
    /// Writing an ONNX model failed (`what`: "QDQ export", "ONNX export").
    Export { what: &'static str, source: ConvertError },
    /// A data file (`.npy` samples or labels) that does not fit: its path and why.
    Data { path: PathBuf, reason: String },
    /// Calibration samples that cannot be read (the message names the file, and the sample and
    /// byte offset where they apply).
    Source(microquant::ptq::SourceError),
    /// A value the core library refuses (quantization parameters, a model's tables).
    Core(microquant::Error),
    /// The model at `path` needs an arena of `bytes` that cannot be allocated.
    Arena { path: PathBuf, bytes: usize },
    /// What was asked does not fit the model or the other flags.
    Invalid(String),
    /// Running on an emulated board: the firmware runner, QEMU or defmt-print failed.
    Qemu(String),
    /// The progress bar's template (a constant) is invalid.
    ProgressBar(indicatif::style::TemplateError),
    /// Standard output failed, other than by being closed.
    Stdout(io::Error),
    /// Standard output was closed by its reader: stop quietly, exit status 0.
    ClosedPipe,
}

impl CliError {
    /// Reading or writing `path` failed.
    pub fn io(path: &Path, source: io::Error) -> Self {
        CliError::Io { path: path.to_path_buf(), source }
    }

    /// The `.mq` at `path` cannot be read or run.
    pub fn model(path: &Path, source: microquant::Error) -> Self {
        CliError::Model { path: path.to_path_buf(), source }
    }

    /// Converting the model at `path` failed.
    pub fn convert(path: &Path, source: ConvertError) -> Self {
        CliError::Convert { path: path.to_path_buf(), source }
    }

    /// The data file at `path` does not fit.
    pub fn data(path: &Path, reason: impl Into<String>) -> Self {
        CliError::Data { path: path.to_path_buf(), reason: reason.into() }
    }

    /// Writing to standard output failed: `ClosedPipe` if its reader has gone.
    pub fn stdout(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::BrokenPipe { CliError::ClosedPipe } else { CliError::Stdout(e) }
    }
}

impl From<microquant::Error> for CliError {
    fn from(e: microquant::Error) -> Self {
        CliError::Core(e)
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            CliError::Model { path, source } => write!(f, "{}: {source}", path.display()),
            CliError::Convert { path, source } => write!(f, "{}: {source}", path.display()),
            CliError::Export { what, source } => write!(f, "{what}: {source}"),
            CliError::Data { path, reason } => write!(f, "{}: {reason}", path.display()),
            CliError::Source(e) => write!(f, "{e}"),
            CliError::Core(e) => write!(f, "{e}"),
            CliError::Arena { path, bytes } => {
                write!(f, "{}: the model needs an arena of {bytes} bytes, which cannot be allocated", path.display())
            }
            CliError::Invalid(m) | CliError::Qemu(m) => f.write_str(m),
            CliError::ProgressBar(e) => write!(f, "progress bar: {e}"),
            CliError::Stdout(e) => write!(f, "standard output: {e}"),
            CliError::ClosedPipe => f.write_str("standard output closed"),
        }
    }
}

impl std::error::Error for CliError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CliError::Io { source, .. } | CliError::Stdout(source) => Some(source),
            _ => None,
        }
    }
}
