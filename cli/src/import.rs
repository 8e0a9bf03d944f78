//! `microquant import`: a quantized TFLite model becomes a `.mq`.

use std::path::Path;

use microquant::compile::{CompileOptions, KernelFamily, compile};
use microquant::kernels::Rounding;

use crate::CliError;
use crate::output::Stdout;

pub fn run(
    input: &Path,
    output: &Path,
    rounding: Rounding,
    kernels: KernelFamily,
    out: &mut Stdout,
) -> Result<(), CliError> {
    let bytes = std::fs::read(input).map_err(|e| CliError::io(input, e))?;
    let graph = microquant::tflite::import(&bytes).map_err(|e| CliError::convert(input, e))?;
    let crc = microquant::model::crc32(&bytes);
    let name = input.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let options = CompileOptions {
        rounding,
        metadata: vec![
            ("producer".into(), format!("microquant-cli {}", env!("CARGO_PKG_VERSION"))),
            ("source_file".into(), name),
            ("source_crc32".into(), format!("{crc:08x}")),
        ],
        kernels,
    };
    let compiled = compile(&graph, &options).map_err(|e| CliError::convert(input, e))?;
    std::fs::write(output, &compiled.bytes).map_err(|e| CliError::io(output, e))?;
    writeln!(
        out,
        "{} -> {}: {} ops, {} bytes, arena {} bytes (TFLite Micro's greedy-by-size order: {} bytes), {} MACs",
        input.display(),
        output.display(),
        graph.nodes.len(),
        compiled.bytes.len(),
        compiled.arena_len,
        compiled.arena_len_greedy_by_size,
        graph.total_macs()
    )
}
