//! `microquant`: the command-line front end of the microquant toolkit.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use microquant::quant::{AffineQuant, QuantDType};

mod inspect;

#[derive(Parser)]
#[command(name = "microquant", version, about = "int8 quantization for tiny devices")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show a .mq model's ops, tensors, quantization, MACs, arena and flash.
    Inspect {
        /// The .mq file.
        model: PathBuf,
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
    },
    /// Quantize float values to int8 (ONNX QuantizeLinear) and dequantize them back.
    Qdq {
        /// Quantization scale (> 0).
        #[arg(long)]
        scale: f32,
        /// Zero point, in [-128, 127].
        #[arg(long, allow_hyphen_values = true)]
        zero_point: i32,
        /// The float values.
        #[arg(required = true, allow_hyphen_values = true)]
        values: Vec<f32>,
    },
}

/// An error for the user: one line on stderr, non-zero exit.
#[derive(Debug)]
pub struct CliError(String);

impl CliError {
    pub fn io(path: &Path, e: std::io::Error) -> Self {
        CliError(format!("{}: {e}", path.display()))
    }
    pub fn model(path: &Path, e: microquant::Error) -> Self {
        CliError(format!("{}: {e}", path.display()))
    }
}

impl From<microquant::Error> for CliError {
    fn from(e: microquant::Error) -> Self {
        CliError(e.to_string())
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("microquant: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Inspect { model, json } => inspect::run(&model, json),
        Command::Qdq { scale, zero_point, values } => {
            let p = AffineQuant::new(scale, zero_point, QuantDType::Int8)?;
            let mut q = vec![0i8; values.len()];
            p.quantize_i8(&values, &mut q)?;
            let mut dq = vec![0f32; values.len()];
            p.dequantize_i8(&q, &mut dq)?;
            println!("scale {scale:?} zero_point {zero_point}");
            println!("x  = {values:?}");
            println!("q  = {q:?}");
            println!("dq = {dq:?}");
            Ok(())
        }
    }
}
