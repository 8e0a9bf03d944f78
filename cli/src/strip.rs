//! `microquant strip`: a `.mq` without names and metadata, for the device.

use std::path::Path;

use microquant::model::{AlignedBytes, Model};

use crate::CliError;
use crate::output::Stdout;

pub fn run(input: &Path, output: &Path, out: &mut Stdout) -> Result<(), CliError> {
    let raw = std::fs::read(input).map_err(|e| CliError::io(input, e))?;
    let lean = microquant::model::strip(&raw).map_err(|e| CliError::model(input, e))?;
    // The written bytes are checked as a device would load them (parse and every op check).
    let aligned = AlignedBytes::new(&lean);
    let m = Model::parse(&aligned).map_err(|e| CliError::model(output, e))?;
    let mut arena = vec![0u8; m.arena_len() + microquant::interp::ARENA_ALIGN];
    microquant::interp::Interpreter::new(&aligned, &mut arena).map_err(|e| CliError::model(output, e))?;
    std::fs::write(output, &lean).map_err(|e| CliError::io(output, e))?;
    writeln!(
        out,
        "{} -> {}: {} -> {} bytes ({} bytes of weights and tables; names and metadata removed), CRC-32 {:08x}",
        input.display(),
        output.display(),
        raw.len(),
        lean.len(),
        m.const_bytes(),
        m.crc()
    )
}
