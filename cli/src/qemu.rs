//! `microquant run --target qemu-*`: a `.mq` model over a batch of inputs on an emulated
//! Cortex-M board.
//!
//! The firmware's runner image (`firmware/src/bin/runner.rs`) is built for the board with cargo
//! in the firmware folder (`$MQ_FIRMWARE_DIR`, else the source tree this CLI was built from), so
//! no rebuild is needed per model: the runner reads `model.mq` and `input.bin` through
//! semihosting file I/O from a temporary folder that QEMU runs in, and writes `output.bin`. Its
//! defmt log is decoded with `defmt-print` for the instruction counts (QEMU runs with
//! `-icount shift=0`, so SysTick counts instructions) and for its error line. The `.npy` written
//! is the same as the host path's.
//!
//! Environment: `MQ_FIRMWARE_DIR`, `MQ_QEMU_TIMEOUT` (seconds, default 600), `MQ_KEEP_TMP=1`
//! (keep the temporary folder and print its path), `CARGO` (the cargo to build with).

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use microquant::model::{AlignedBytes, Model};

use crate::npy;
use crate::output::{Stdout, note};
use crate::run::input_rows;
use crate::{CliError, Target};

/// A QEMU board the runner is built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Board {
    /// QEMU `-machine` (also the firmware's `MQ_BOARD`).
    pub machine: &'static str,
    /// QEMU `-cpu`.
    pub cpu: &'static str,
    /// Rust target triple.
    pub triple: &'static str,
    /// What to call it in messages.
    pub label: &'static str,
}

/// The board of a `qemu-*` target (`None` for the host).
pub fn board(target: Target) -> Option<Board> {
    let b = |machine, cpu, triple, label| Some(Board { machine, cpu, triple, label });
    match target {
        Target::Host => None,
        Target::QemuM0 => b("microbit", "cortex-m0", "thumbv6m-none-eabi", "Cortex-M0"),
        Target::QemuM4 => b("mps2-an386", "cortex-m4", "thumbv7em-none-eabihf", "Cortex-M4F"),
        Target::QemuM7 => b("mps2-an500", "cortex-m7", "thumbv7em-none-eabihf", "Cortex-M7"),
        Target::QemuM33 => b("mps2-an505", "cortex-m33", "thumbv8m.main-none-eabihf", "Cortex-M33"),
        Target::QemuM55 => b("mps3-an547", "cortex-m55", "thumbv8m.main-none-eabihf", "Cortex-M55"),
    }
}

/// The firmware source folder.
fn firmware_dir() -> Result<PathBuf, CliError> {
    let dir = match std::env::var_os("MQ_FIRMWARE_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("firmware"),
    };
    if !dir.join("Cargo.toml").is_file() || !dir.join("src/bin/runner.rs").is_file() {
        return Err(CliError::Qemu(format!(
            "the firmware sources are not at {} (set MQ_FIRMWARE_DIR to microquant's firmware/ folder)",
            dir.display()
        )));
    }
    Ok(dir)
}

/// The tool must be on PATH.
fn need(tool: &str) -> Result<(), CliError> {
    let found =
        std::env::var_os("PATH").map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file())).unwrap_or(false);
    if found { Ok(()) } else { Err(CliError::Qemu(format!("{tool} not found on PATH (run scripts/setup.sh)"))) }
}

/// A lock between `microquant` processes building the runner: boards that share a Rust target
/// (mps2-an386 and -an500, mps2-an505 and mps3-an547) share the ELF's path, so building and
/// copying it must not interleave. A directory created atomically; a lock older than 15 minutes
/// is taken as left behind by a killed process.
struct BuildLock(PathBuf);

impl BuildLock {
    fn take(fw: &Path) -> Result<Self, CliError> {
        let dir = fw.join("target");
        std::fs::create_dir_all(&dir).map_err(|e| CliError::io(&dir, e))?;
        let lock = dir.join("microquant-runner.lock");
        let deadline = Instant::now() + Duration::from_secs(1800);
        loop {
            match std::fs::create_dir(&lock) {
                Ok(()) => return Ok(Self(lock)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let stale = std::fs::metadata(&lock)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.elapsed().ok())
                        .is_some_and(|age| age > Duration::from_secs(900));
                    if stale {
                        let _ = std::fs::remove_dir(&lock);
                    } else if Instant::now() > deadline {
                        return Err(CliError::Qemu(format!(
                            "{} is held by another build (remove it if none runs)",
                            lock.display()
                        )));
                    } else {
                        std::thread::sleep(Duration::from_millis(200));
                    }
                }
                Err(e) => return Err(CliError::io(&lock, e)),
            }
        }
    }
}

impl Drop for BuildLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// Builds the runner for `board` and copies its ELF to `dest`.
fn build_runner(fw: &Path, board: &Board, dest: &Path) -> Result<(), CliError> {
    let _lock = BuildLock::take(fw)?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    note!("building the firmware runner for {} ({})...", board.machine, board.triple);
    let mut cmd = Command::new(&cargo);
    cmd.current_dir(fw)
        .args(["build", "--release", "--bin", "runner", "--target", board.triple])
        .env("MQ_BOARD", board.machine)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // The firmware is its own workspace with its own target folder and rustflags (linker
    // scripts): nothing from an outer cargo may leak in.
    for v in [
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "MQ_MODEL",
    ] {
        cmd.env_remove(v);
    }
    // The Cortex-M55 image as `cargo run-an547` builds it: `-C target-cpu=cortex-m55` after the
    // config's `cortex-m33` (core's Helium path).
    if board.cpu == "cortex-m55" {
        cmd.args(["--config", "target.thumbv8m.main-none-eabihf.rustflags=['-C','target-cpu=cortex-m55']"]);
    }
    let out =
        cmd.output().map_err(|e| CliError::Qemu(format!("cannot run cargo ({}): {e}", Path::new(&cargo).display())))?;
    if !out.status.success() {
        let log = String::from_utf8_lossy(&out.stderr);
        let first =
            log.lines().find(|l| l.starts_with("error")).unwrap_or("see `cargo build --bin runner` in firmware/");
        return Err(CliError::Qemu(format!("building the firmware runner for {} failed: {first}", board.machine)));
    }
    let elf = fw.join("target").join(board.triple).join("release").join("runner");
    if !elf.is_file() {
        return Err(CliError::Qemu(format!("the runner was built but {} is missing", elf.display())));
    }
    std::fs::copy(&elf, dest).map_err(|e| CliError::io(&elf, e))?;
    Ok(())
}

/// A temporary folder, removed on drop unless `MQ_KEEP_TMP` is set.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<Self, CliError> {
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        let p = std::env::temp_dir().join(format!("microquant-qemu-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&p).map_err(|e| CliError::io(&p, e))?;
        Ok(Self(p))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::env::var_os("MQ_KEEP_TMP").is_some() {
            note!("kept {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// What the runner reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunnerResult {
    /// Samples run.
    pub samples: usize,
    /// Instructions of all inferences.
    pub total: u64,
    /// Fewest instructions of one inference.
    pub min: u64,
    /// Most instructions of one inference.
    pub max: u64,
}

/// Finds the runner's `result:` line in its decoded log.
pub fn parse_result(log: &str) -> Option<RunnerResult> {
    let line = log.lines().find_map(|l| l.split_once("result: samples=").map(|(_, r)| r))?;
    let mut it = line.split_whitespace();
    let samples = it.next()?.parse().ok()?;
    let mut field = |k: &str| it.next()?.strip_prefix(k)?.parse::<u64>().ok();
    Some(RunnerResult {
        samples,
        total: field("instructions_total=")?,
        min: field("instructions_min=")?,
        max: field("instructions_max=")?,
    })
}

/// Runs QEMU with the runner in `dir`; returns the decoded log.
fn run_qemu(board: &Board, elf: &Path, dir: &Path) -> Result<String, CliError> {
    let timeout = std::env::var("MQ_QEMU_TIMEOUT").ok().and_then(|t| t.parse().ok()).unwrap_or(600u64);
    let mut qemu = Command::new("qemu-system-arm")
        .current_dir(dir)
        .args(["-machine", board.machine, "-cpu", board.cpu, "-nographic", "-monitor", "none", "-serial", "none"])
        .args(["-semihosting-config", "enable=on,target=native", "-icount", "shift=0", "-kernel"])
        .arg(elf)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| CliError::Qemu(format!("cannot start qemu-system-arm: {e}")))?;
    let frames = qemu.stdout.take().ok_or_else(|| CliError::Qemu("no QEMU output".into()))?;
    let mut decoder = Command::new("defmt-print")
        .arg("-e")
        .arg(elf)
        .stdin(frames)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| CliError::Qemu(format!("cannot start defmt-print: {e}")))?;
    let mut out = decoder.stdout.take().ok_or_else(|| CliError::Qemu("no defmt-print output".into()))?;
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(timeout);
    let status = loop {
        match qemu.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if Instant::now() >= deadline => {
                let _ = qemu.kill();
                let _ = qemu.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(CliError::Qemu(format!("waiting for QEMU: {e}"))),
        }
    };
    let _ = decoder.wait();
    let log = reader.join().unwrap_or_default();
    let mut qemu_err = String::new();
    if let Some(mut e) = qemu.stderr.take() {
        let _ = e.read_to_string(&mut qemu_err);
    }
    match status {
        None => Err(CliError::Qemu(format!("QEMU {} timed out after {timeout} s (MQ_QEMU_TIMEOUT)", board.machine))),
        Some(st) if st.success() => Ok(log),
        Some(st) => {
            let line = log
                .lines()
                .find(|l| l.trim_start().starts_with("ERROR"))
                .map(|l| l.trim_start().trim_start_matches("ERROR").trim().to_string())
                .or_else(|| qemu_err.lines().find(|l| !l.trim().is_empty()).map(str::to_string))
                .unwrap_or_else(|| format!("the runner exited with status {}", st.code().unwrap_or(-1)));
            Err(CliError::Qemu(line))
        }
    }
}

/// `microquant run MODEL --input X --output Y --target qemu-*`.
pub fn run(
    model_path: &Path,
    input: &Path,
    output: &Path,
    dequantize: bool,
    target: Target,
    out: &mut Stdout,
) -> Result<(), CliError> {
    let board = board(target).ok_or_else(|| CliError::Invalid("not a QEMU target".into()))?;
    let raw = std::fs::read(model_path).map_err(|e| CliError::io(model_path, e))?;
    let bytes = AlignedBytes::new(&raw);
    let model = Model::parse(&bytes).map_err(|e| CliError::model(model_path, e))?;
    if model.num_inputs() != 1 {
        return Err(CliError::Invalid(format!(
            "the QEMU runner feeds one input; this model has {} (run it on the host)",
            model.num_inputs()
        )));
    }
    let x = npy::read(input)?;
    let (n, rows) = input_rows(&model, 0, &x)?;
    let out_t = model.tensor(model.output_index(0)?)?;
    if out_t.dtype != microquant::model::ElementType::I8 {
        return Err(CliError::Invalid("the model's output is not int8".into()));
    }
    let per_out = out_t.len();
    need("qemu-system-arm")?;
    need("defmt-print")?;
    let fw = firmware_dir()?;
    let tmp = TempDir::new()?;
    let elf_copy = tmp.0.join("runner.elf");
    build_runner(&fw, &board, &elf_copy)?;
    // The device gets the model stripped (no names, metadata or per-channel scales: less of the
    // runner's RAM); it validates it completely, as any model it receives.
    let lean = microquant::model::strip(&raw).map_err(|e| CliError::model(model_path, e))?;
    std::fs::write(tmp.0.join("model.mq"), &lean).map_err(|e| CliError::io(&tmp.0, e))?;
    let input_bytes: Vec<u8> = rows.iter().map(|&v| v as u8).collect();
    std::fs::write(tmp.0.join("input.bin"), &input_bytes).map_err(|e| CliError::io(&tmp.0, e))?;
    let log = run_qemu(&board, &elf_copy, &tmp.0)?;
    let res = parse_result(&log)
        .ok_or_else(|| CliError::Qemu(format!("the runner on {} printed no result line", board.machine)))?;
    let out_path = tmp.0.join("output.bin");
    let ys: Vec<i8> =
        std::fs::read(&out_path).map_err(|e| CliError::io(&out_path, e))?.into_iter().map(|b| b as i8).collect();
    if res.samples != n || ys.len() != n * per_out {
        return Err(CliError::Qemu(format!(
            "the runner returned {} values for {} samples, expected {} for {n}",
            ys.len(),
            res.samples,
            n * per_out
        )));
    }
    crate::run::write_outputs(&out_t, n, &ys, output, dequantize, crate::run::output_layout(&model, 0).as_ref(), out)?;
    let mean = if n > 0 { res.total / n as u64 } else { 0 };
    note!(
        "ran {n} samples on QEMU {} ({}): {mean} instructions per inference (min {}, max {}; -icount shift=0) -> {}",
        board.machine,
        board.label,
        res.min,
        res.max,
        output.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_result_line() {
        let log = "INFO  sample 0: 10 instructions\nINFO  result: samples=2 instructions_total=30 instructions_min=10 instructions_max=20\n";
        assert_eq!(parse_result(log), Some(RunnerResult { samples: 2, total: 30, min: 10, max: 20 }));
        assert_eq!(parse_result("INFO  nothing"), None);
    }

    #[test]
    fn every_qemu_target_has_a_board() {
        for t in [Target::QemuM0, Target::QemuM4, Target::QemuM7, Target::QemuM33, Target::QemuM55] {
            assert!(board(t).is_some());
        }
        assert_eq!(board(Target::Host), None);
    }
}
