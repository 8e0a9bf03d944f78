//! Where the CLI prints. Standard output goes through [`Stdout`], whose `write!`/`writeln!`
//! return a [`CliError`] instead of panicking as `println!` does: when the reader of a pipe
//! exits (`microquant inspect model.mq | head -1`), the next write fails with `BrokenPipe`, which
//! becomes [`CliError::ClosedPipe`] and ends the command quietly with status 0. Messages on
//! standard error ([`note!`](note)) ignore a closed stderr: there is nowhere left to say it.

use std::fmt;
use std::io::{self, Write as _};

use crate::CliError;

/// Standard output, locked for the whole command.
pub struct Stdout(io::StdoutLock<'static>);

impl Stdout {
    /// Locks standard output.
    pub fn lock() -> Self {
        Stdout(io::stdout().lock())
    }

    /// What `write!` and `writeln!` call: a closed pipe is `CliError::ClosedPipe`.
    pub fn write_fmt(&mut self, args: fmt::Arguments<'_>) -> Result<(), CliError> {
        self.0.write_fmt(args).map_err(CliError::stdout)
    }

    /// Flushes what is buffered (a last line without its newline).
    pub fn flush(&mut self) -> Result<(), CliError> {
        self.0.flush().map_err(CliError::stdout)
    }
}

/// Writes one line to standard error; a closed or failing stderr is ignored.
pub fn note_line(args: fmt::Arguments<'_>) {
    let _ = writeln!(io::stderr().lock(), "{args}");
}

/// `eprintln!` that never panics: [`note_line`] with `format!` arguments.
macro_rules! note {
    ($($arg:tt)*) => {
        $crate::output::note_line(format_args!($($arg)*))
    };
}
pub(crate) use note;
