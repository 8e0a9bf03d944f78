//! `microquant`: the command-line front end of the microquant toolkit.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use microquant::quant::{AffineQuant, QuantDType};

#[derive(Parser)]
#[command(name = "microquant", version, about = "int8 quantization for tiny devices")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
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

fn run(cli: Cli) -> Result<(), microquant::Error> {
    match cli.command {
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
        }
    }
    Ok(())
}
