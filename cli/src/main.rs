//! `microquant`: the command-line front end of the microquant toolkit.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use microquant::quant::{QParams, QuantDType};

pub use error::CliError;
use output::{Stdout, note};

mod calib;
mod error;
mod import;
mod inspect;
mod npy;
mod output;
mod preprocess;
mod qemu;
mod quantize;
mod run;
mod strip;

#[derive(Parser)]
#[command(name = "microquant", version, about = "int8 quantization for tiny devices")]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Threads the converter's kernels may use (calibration, the report): 0 = every core. The
    /// results are the same bit for bit with any number.
    #[arg(long, global = true, default_value_t = 0, value_name = "N")]
    threads: usize,
}

#[derive(Subcommand)]
enum Command {
    /// Convert a quantized (int8 or 16x8) TFLite model into a .mq model.
    Import {
        /// The .tflite file.
        model: PathBuf,
        /// Where to write the .mq.
        #[arg(short, long)]
        output: PathBuf,
        /// Rounding: `double` (bit-exact with TFLite Micro, the default) or `single` (with the
        /// TFLite interpreter's reference kernels).
        #[arg(long, value_enum, default_value_t = RoundingArg::Double)]
        rounding: RoundingArg,
        /// The kernels the model will run on (the planner runs convolutions in place by chunks
        /// of rows only where that keeps their speed there): `arm-dsp` (Cortex-M4/M7/M33, and
        /// the others; the default) or `helium` (Cortex-M55/M85). The outputs are the same.
        #[arg(long, value_enum, default_value_t = KernelsArg::ArmDsp)]
        kernels: KernelsArg,
    },
    /// Quantize a float ONNX or TFLite model to int8 with calibration samples: a .mq model, a
    /// per-layer report, optionally a QDQ ONNX model.
    Quantize(Box<quantize::QuantizeArgs>),
    /// Run a .mq model over a batch of inputs (first axis = samples).
    Run {
        /// The .mq file.
        model: PathBuf,
        /// Input batch (.npy: int8 used as is; float32, or any other number type converted to float32, quantized with the model's input qparams).
        /// A model with several inputs takes one per input, as `--input NAME=FILE.npy`.
        #[arg(long, required = true, value_name = "[NAME=]FILE")]
        input: Vec<String>,
        /// Output batch (.npy); repeatable: one per output in the model's order, or
        /// `-o NAME=FILE.npy` (outputs not given are not written).
        #[arg(short, long, required = true, value_name = "[NAME=]FILE")]
        output: Vec<String>,
        /// Write float32 (dequantized) outputs instead of raw int8.
        #[arg(long)]
        dequantize: bool,
        /// Start each sample from the zero recurrent state. By default the samples of a model with
        /// an LSTM run in their order as one sequence, the state carried from one to the next (the
        /// consecutive chunks of a stream), as on the device.
        #[arg(long)]
        reset_state: bool,
        /// Where to run: the host, or an emulated Cortex-M board (QEMU).
        #[arg(long, value_enum, default_value_t = Target::Host)]
        target: Target,
    },
    /// Show a .mq model's ops, tensors, quantization, MACs, arena and flash.
    Inspect {
        /// The .mq file.
        model: PathBuf,
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
    },
    /// Write a .mq model without its tensor and op names and its metadata (host-only data), as
    /// the device loads it: same ops, weights and arena, same outputs bit for bit. `inspect` and
    /// `run` read stripped models too (names shown as t12, op3).
    Strip {
        /// The .mq file.
        model: PathBuf,
        /// Where to write the stripped .mq.
        #[arg(short, long)]
        output: PathBuf,
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

#[derive(Clone, Copy, clap::ValueEnum)]
enum RoundingArg {
    Double,
    Single,
}

/// The kernel family of `import --kernels`.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum KernelsArg {
    ArmDsp,
    Helium,
}

/// Where `run` executes the model.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Target {
    /// This machine.
    Host,
    /// QEMU microbit (Cortex-M0).
    QemuM0,
    /// QEMU mps2-an386 (Cortex-M4F).
    QemuM4,
    /// QEMU mps2-an500 (Cortex-M7).
    QemuM7,
    /// QEMU mps2-an505 (Cortex-M33).
    QemuM33,
    /// QEMU mps3-an547 (Cortex-M55).
    QemuM55,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    microquant::parallel::set_max_threads(cli.threads);
    let mut out = Stdout::lock();
    match run(cli, &mut out).and_then(|()| out.flush()) {
        // A closed standard output (`| head`) ends the command quietly.
        Ok(()) | Err(CliError::ClosedPipe) => ExitCode::SUCCESS,
        Err(e) => {
            note!("microquant: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli, out: &mut Stdout) -> Result<(), CliError> {
    match cli.command {
        Command::Inspect { model, json } => inspect::run(&model, json, out),
        Command::Strip { model, output } => strip::run(&model, &output, out),
        Command::Quantize(args) => quantize::run(&args, out),
        Command::Import { model, output, rounding, kernels } => {
            let r = match rounding {
                RoundingArg::Double => microquant::kernels::Rounding::Double,
                RoundingArg::Single => microquant::kernels::Rounding::Single,
            };
            let k = match kernels {
                KernelsArg::ArmDsp => microquant::compile::KernelFamily::ArmDsp,
                KernelsArg::Helium => microquant::compile::KernelFamily::Helium,
            };
            import::run(&model, &output, r, k, out)
        }
        Command::Run { model, input, output, dequantize, reset_state, target } => match target {
            Target::Host => run::run(&model, &input, &output, dequantize, reset_state, out),
            _ if reset_state => Err(CliError::Invalid(
                "--reset-state runs on the host only (the firmware image runs the samples as one sequence)".into(),
            )),
            _ => match (&input[..], &output[..]) {
                ([i], [o]) if !i.contains('=') && !o.contains('=') => {
                    qemu::run(&model, &PathBuf::from(i), &PathBuf::from(o), dequantize, target, out)
                }
                _ => Err(CliError::Invalid(
                    "a run on QEMU takes one input file and writes output 0 (one --input, one -o)".into(),
                )),
            },
        },
        Command::Qdq { scale, zero_point, values } => {
            let p = QParams::new(scale, zero_point, QuantDType::Int8)?;
            let mut q = vec![0i8; values.len()];
            p.quantize_i8(&values, &mut q)?;
            let mut dq = vec![0f32; values.len()];
            p.dequantize_i8(&q, &mut dq)?;
            writeln!(out, "scale {scale:?} zero_point {zero_point}")?;
            writeln!(out, "x  = {values:?}")?;
            writeln!(out, "q  = {q:?}")?;
            writeln!(out, "dq = {dq:?}")
        }
    }
}
