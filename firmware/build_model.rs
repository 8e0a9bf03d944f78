//! Part of `build.rs`: the models the firmware embeds, converted at build time.
//!
//! * The application's model (`src/main.rs`): `MQ_MODEL` names a `.tflite` (converted here with
//!   the microquant compiler, TFLite Micro rounding) or a `.mq` (validated here). Default: the
//!   MLPerf Tiny KWS model, or the tiny test model on the micro:bit (16 KB RAM). Writes
//!   `$OUT_DIR/app_model.mq` and `app_model.rs` (its sizes as constants: the arena is sized
//!   exactly from the model's planned arena) and fails the build, with the numbers, when the
//!   model and the estimated code do not fit the board's flash or the arena its RAM.
//! * The on-target model tests (`tests/model_*.rs`): the four MLPerf Tiny int8 models and the tiny
//!   M0 model, each with TFLite Micro's outputs on its 20 seeded inputs
//!   (`tests/golden/models/`), as `model_tests.rs`; a model that does not fit the board is
//!   reported, not embedded.
//! * The runner (`src/bin/runner.rs`): the size of its model + arena buffer, from the board's RAM.
//!
//! Every embedded model is *stripped* (`microquant::model::strip`: no tensor or op names, no
//! metadata, no per-channel float scales: nothing the device reads), unless `MQ_KEEP_NAMES=1`.
//! The application's model is also *validated here*, completely (`Interpreter::new` on the
//! host: the model's structure and every op), and its CRC written as `APP_MODEL_CRC`: at boot
//! `Interpreter::new_prevalidated` checks the header and the CRC of every byte and skips the
//! per-tensor and per-op checks (`MQ_BOOT_VALIDATION=full` makes the application validate
//! everything at boot instead, as the runner does for the models it receives).
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::{env, fs};

use microquant::compile::{CompileOptions, KernelFamily, compile};
use microquant::interp::{ARENA_ALIGN, Interpreter};
use microquant::kernels::Rounding;
use microquant::model::{AlignedBytes, ElementType, Model, OpKind, Storage};
use microquant_tests::models::{MlperfTinyGolden, ModelGolden};

/// Flash the application's code and constants take besides the model. Measured on the KWS app
/// (release, opt-level 2): 178 KB on thumbv7em with the Arm DSP fast paths, 150 KB on thumbv6m
/// (the interpreter links every kernel it can dispatch to, int8 and 16x8); rounded up.
const APP_CODE_ESTIMATE: u64 = 188 * 1024;
/// The same with `opt-level = "s"` (118 KB on thumbv8m.main); rounded up.
const APP_CODE_ESTIMATE_SIZE_OPT: u64 = 128 * 1024;
/// RAM the application needs besides the arena: statics, defmt buffers and the stack (measured
/// peak stack: about 5 KB for KWS on the M4F, 4.6 KB for the tiny model on the M0).
const APP_RAM_RESERVE: u64 = 6 * 1024;
/// The same for a model test image (defmt-test; the golden outputs are counted separately).
/// Measured: 176 KB besides the model on thumbv8m.main at opt-level 2.
const TEST_CODE_ESTIMATE: u64 = 184 * 1024;
const TEST_RAM_RESERVE: u64 = 6 * 1024;
/// With `opt-level = "s"`: 117 KB measured; rounded up.
const TEST_CODE_ESTIMATE_SIZE_OPT: u64 = 128 * 1024;
/// RAM the runner keeps outside its model + arena buffer (statics, stack): 1/4 of RAM, at least
/// 6 KB (the interpreter's peak stack on the M0 is about 4.5 KB) and at most 64 KB.
const RUNNER_RAM_RESERVE_MIN: u64 = 6 * 1024;
const RUNNER_RAM_RESERVE_MAX: u64 = 64 * 1024;

/// Whether this build optimizes for size (cargo tells build scripts the profile's `opt-level`).
fn size_optimized() -> bool {
    matches!(env::var("OPT_LEVEL").as_deref(), Ok("s") | Ok("z"))
}

/// The application's code estimate for this build.
fn app_code_estimate() -> u64 {
    if size_optimized() { APP_CODE_ESTIMATE_SIZE_OPT } else { APP_CODE_ESTIMATE }
}

/// A model test image's code estimate for this build.
fn test_code_estimate() -> u64 {
    if size_optimized() { TEST_CODE_ESTIMATE_SIZE_OPT } else { TEST_CODE_ESTIMATE }
}

/// A board's memory as its `memory.x` declares it.
#[derive(Clone, Copy, Debug)]
pub struct Memory {
    pub flash: u64,
    pub ram: u64,
}

/// Reads `FLASH` and `RAM` lengths (`4M`, `512K`, `0x4000`, `16384`) from a memory.x. When the
/// memory.x moves the code with `_stext = ADDRESS;` (the mps3-an547 boots from ITCM but keeps its
/// code and model in SRAM), the usable flash is what lies between `_stext` and the end of FLASH.
pub fn memory_of(memory_x: &Path) -> Memory {
    let text = fs::read_to_string(memory_x).expect("read memory.x");
    let number = |v: &str, what: &str| -> u64 {
        let v: String =
            v.trim_start_matches([' ', '=']).trim().chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
        let (num, mul) = match v.chars().last() {
            Some('K' | 'k') => (&v[..v.len() - 1], 1024),
            Some('M' | 'm') => (&v[..v.len() - 1], 1024 * 1024),
            _ => (&v[..], 1),
        };
        let n = match num.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16),
            None => num.parse(),
        };
        n.unwrap_or_else(|_| panic!("{}: cannot read {what} {v:?}", memory_x.display())) * mul
    };
    let region = |name: &str| -> (u64, u64) {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(name) && l.contains("LENGTH"))
            .unwrap_or_else(|| panic!("{}: no {name} region", memory_x.display()));
        let field = |key: &str| {
            let v = line.split(key).nth(1).unwrap_or_else(|| panic!("{}: {name} has no {key}", memory_x.display()));
            number(v, &format!("{name} {key}"))
        };
        (field("ORIGIN"), field("LENGTH"))
    };
    let (flash_origin, flash_len) = region("FLASH");
    let stext = text.lines().find_map(|l| l.trim_start().strip_prefix("_stext")).map(|v| number(v, "_stext"));
    let flash = match stext {
        Some(start) if start >= flash_origin && start < flash_origin + flash_len => flash_origin + flash_len - start,
        Some(start) => panic!("{}: _stext {start:#x} is outside FLASH", memory_x.display()),
        None => flash_len,
    };
    Memory { flash, ram: region("RAM").1 }
}

/// A converted (or loaded) model and what the firmware needs to know about it.
struct Built {
    bytes: Vec<u8>,
    arena: usize,
    ops: usize,
    input_len: usize,
    output_len: usize,
    /// (scale, zero point) of the output, to print scores.
    output_q: (f32, i32),
    /// The op kinds the model uses, once each, in the order met: the application's `OpSet`.
    kinds: Vec<OpKind>,
    /// Whether an activation is int16 (16x8 ops): the op set then has the 16x8 kernels too.
    int16: bool,
    /// Whether weights are int4 (W4A8 ops): the op set then has the int4-weight kernels too.
    int4: bool,
    /// The file's CRC-32 (its header's), once the whole model is validated.
    crc: u32,
}

/// `MQ_KEEP_NAMES=1`: embed models with their names and metadata (for debugging: bigger images).
fn keep_names() -> bool {
    matches!(env::var("MQ_KEEP_NAMES").as_deref(), Ok("1") | Ok("true") | Ok("yes"))
}

fn describe(bytes: Vec<u8>, what: &str) -> Built {
    let bytes = if keep_names() {
        bytes
    } else {
        microquant::model::strip(&bytes).unwrap_or_else(|e| panic!("{what}: not a valid .mq model: {e}"))
    };
    let aligned = AlignedBytes::new(&bytes);
    let m = Model::parse(&aligned).unwrap_or_else(|e| panic!("{what}: not a valid .mq model: {e}"));
    // The whole validation the device would do at load (every op), here at build time.
    let mut arena = vec![0u8; m.arena_len() + ARENA_ALIGN];
    if let Err(e) = Interpreter::new(&aligned, &mut arena) {
        panic!("{what}: the interpreter refuses the model: {e}");
    }
    let t_in = m.tensor(m.input_index(0).expect("input")).expect("input tensor");
    let t_out = m.tensor(m.output_index(0).expect("output")).expect("output tensor");
    if t_in.dtype != ElementType::I8 || t_out.dtype != ElementType::I8 {
        panic!("{what}: the firmware runs models with an int8 input and output");
    }
    let output_q = t_out.per_tensor().unwrap_or((1.0, 0));
    let mut kinds = Vec::new();
    for i in 0..m.num_ops() as u32 {
        let k = m.op(i).unwrap_or_else(|e| panic!("{what}: op {i}: {e}")).kind;
        if !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    let int16 = (0..m.num_tensors() as u32)
        .map(|i| m.tensor(i).unwrap_or_else(|e| panic!("{what}: tensor {i}: {e}")))
        .any(|t| t.dtype == ElementType::I16 && matches!(t.storage, Storage::Arena(_)));
    let int4 = (0..m.num_tensors() as u32)
        .map(|i| m.tensor(i).unwrap_or_else(|e| panic!("{what}: tensor {i}: {e}")))
        .any(|t| t.dtype == ElementType::I4);
    let crc = m.crc();
    Built {
        arena: m.arena_len(),
        ops: m.num_ops(),
        input_len: t_in.len(),
        output_len: t_out.len(),
        output_q,
        kinds,
        int16,
        int4,
        crc,
        bytes,
    }
}

/// The kernels this image runs (core's `build.rs` picks them from the same target and flags):
/// Helium on `thumbv8m.main` with `target-cpu=cortex-m55`/`cortex-m85` or `+mve`, else the
/// Arm DSP cost model (the planner's default). The planner chunks convolutions only where that
/// keeps these kernels' speed.
fn kernel_family() -> KernelFamily {
    println!("cargo:rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    let target = env::var("TARGET").unwrap_or_default();
    let encoded = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let flags: Vec<&str> = encoded.split('\x1f').filter(|f| !f.is_empty()).collect();
    // The value of each `-C key=value` (`-C` and the value apart or joined).
    let values = |key: &str| -> Vec<String> {
        let mut out = Vec::new();
        let mut it = flags.iter().copied();
        while let Some(f) = it.next() {
            let opt = if f == "-C" || f == "--codegen" { it.next() } else { f.strip_prefix("-C") };
            if let Some(v) = opt.and_then(|o| o.strip_prefix(key)).and_then(|o| o.strip_prefix('=')) {
                out.push(v.to_string());
            }
        }
        out
    };
    let cpu = values("target-cpu").last().cloned().unwrap_or_default();
    let mut mve = matches!(cpu.as_str(), "cortex-m55" | "cortex-m85");
    for f in
        values("target-feature").iter().flat_map(|l| l.split(',').map(str::trim).map(String::from).collect::<Vec<_>>())
    {
        match f.as_str() {
            "+mve" => mve = true,
            "-mve" => mve = false,
            _ => {}
        }
    }
    if target.starts_with("thumbv8m.main") && mve { KernelFamily::Helium } else { KernelFamily::ArmDsp }
}

fn convert(tflite: &Path) -> Built {
    let data = fs::read(tflite).unwrap_or_else(|e| panic!("MQ_MODEL: cannot read {}: {e}", tflite.display()));
    let graph =
        microquant::tflite::import(&data).unwrap_or_else(|e| panic!("{}: import failed: {e}", tflite.display()));
    let options = CompileOptions { rounding: Rounding::Double, kernels: kernel_family(), ..Default::default() };
    let c = compile(&graph, &options).unwrap_or_else(|e| panic!("{}: conversion failed: {e}", tflite.display()));
    describe(c.bytes, &tflite.display().to_string())
}

fn load(path: &Path) -> Built {
    if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("mq")) {
        let bytes = fs::read(path).unwrap_or_else(|e| panic!("MQ_MODEL: cannot read {}: {e}", path.display()));
        describe(bytes, &path.display().to_string())
    } else {
        convert(path)
    }
}

/// All goldens: the four MLPerf Tiny models and the tiny M0 model, with their `.tflite` paths.
fn goldens(repo: &Path) -> Vec<(ModelGolden, PathBuf)> {
    let mut v: Vec<(ModelGolden, PathBuf)> = microquant_tests::models::mlperf_tiny()
        .models
        .into_iter()
        .map(|m| {
            let p = m.path();
            (m, p)
        })
        .collect();
    let tiny_json = repo.join("tests/golden/models/tiny_m0.json");
    let tiny: MlperfTinyGolden =
        serde_json::from_str(&fs::read_to_string(&tiny_json).expect("read tiny_m0.json")).expect("parse tiny_m0.json");
    for m in tiny.models {
        let p = repo.join("tests/golden/models").join(&m.file);
        v.push((m, p));
    }
    v
}

fn crc32(b: &[u8]) -> u32 {
    microquant_tests::models::crc32_bytes(b)
}

/// `b"\x.."` literal of bytes.
fn byte_str(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 4 + 3);
    s.push_str("b\"");
    for x in b {
        write!(s, "\\x{x:02x}").unwrap();
    }
    s.push('"');
    s
}

/// TFLite Micro's outputs of every sample, back to back, as bytes.
fn expected_tflm(m: &ModelGolden) -> Vec<u8> {
    m.samples.iter().flat_map(|s| s.expected_tflm.i8()).map(|v| v as u8).collect()
}

fn kib(n: u64) -> String {
    format!("{n} B ({:.1} KiB)", n as f64 / 1024.0)
}

/// Writes `app_model.mq`, `app_model.rs`, `test_<name>.mq`, `model_tests.rs` and `runner.rs`
/// into `out`.
pub fn write(board: &str, memory_x: &Path, out: &Path) {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let repo = manifest.parent().unwrap().to_path_buf();
    let mem = memory_of(memory_x);
    let goldens = goldens(&repo);
    println!("cargo:rerun-if-env-changed=MQ_MODEL");
    println!("cargo:rerun-if-env-changed=MQ_ALL_OPS");
    println!("cargo:rerun-if-env-changed=MQ_KEEP_NAMES");
    println!("cargo:rerun-if-env-changed=MQ_BOOT_VALIDATION");
    println!("cargo:rerun-if-changed=build_model.rs");
    println!("cargo:rerun-if-changed=../tests/golden/models");
    for (_, p) in &goldens {
        println!("cargo:rerun-if-changed={}", p.display());
    }

    // The application's model.
    let default = if mem.ram < 64 * 1024 {
        "tests/golden/models/tiny_m0_int8.tflite"
    } else {
        "models/mlperf-tiny/kws_ref_model_int8.tflite"
    };
    // `shown`: the model's path as the user gave it (or the default's, from the repository), for
    // messages; never the absolute path of this machine.
    let (path, from_env, shown) = match env::var("MQ_MODEL") {
        Ok(given) if !given.is_empty() => {
            let p = PathBuf::from(&given);
            let p = if p.is_absolute() { p } else { manifest.join(p) };
            (p.canonicalize().unwrap_or(p), true, given)
        }
        _ => (repo.canonicalize().unwrap_or(repo.clone()).join(default), false, default.to_string()),
    };
    println!("cargo:rerun-if-changed={}", path.display());
    let app = load(&path);
    let flash_needed = app.bytes.len() as u64 + app_code_estimate();
    let ram_needed = app.arena as u64 + APP_RAM_RESERVE;
    if flash_needed > mem.flash || ram_needed > mem.ram {
        // A clear message and no backtrace: this is the user's model not fitting, not a bug.
        eprintln!(
            "\n\nmicroquant-firmware: the model {} does not fit {board}{}:\n  flash: model {} + code (estimate) {} = {} needed, board has {}\n  RAM:   arena {} + stack and statics (reserve) {} = {} needed, board has {}\n\n",
            shown,
            if from_env { " (MQ_MODEL)" } else { "" },
            kib(app.bytes.len() as u64),
            kib(app_code_estimate()),
            kib(flash_needed),
            kib(mem.flash),
            kib(app.arena as u64),
            kib(APP_RAM_RESERVE),
            kib(ram_needed),
            kib(mem.ram),
        );
        println!("cargo:warning=the model {shown} does not fit {board}: see the error below");
        std::process::exit(1);
    }
    fs::write(out.join("app_model.mq"), &app.bytes).unwrap();
    let file_crc = fs::read(&path).map(|b| crc32(&b)).unwrap_or(0);
    let golden = goldens
        .iter()
        .find(|(m, _)| m.file_crc32 == file_crc && m.output.shape.iter().product::<usize>() == app.output_len);
    let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("model").to_string();
    let mut s = String::from("// Generated by build.rs (build_model.rs): the application's model.\n");
    writeln!(s, "/// Where the model came from (`MQ_MODEL`, or the board's default).").unwrap();
    writeln!(s, "pub const APP_MODEL_SOURCE: &str = {:?};", path.display().to_string()).unwrap();
    writeln!(s, "/// The model's file name without extension.").unwrap();
    writeln!(s, "pub const APP_MODEL_NAME: &str = {name:?};").unwrap();
    writeln!(s, "/// The `.mq` bytes, in flash, 16-byte aligned.").unwrap();
    writeln!(s, "pub static APP_MODEL: &[u8] = crate::include_model!(concat!(env!(\"OUT_DIR\"), \"/app_model.mq\"));")
        .unwrap();
    writeln!(
        s,
        "/// The model's CRC-32: the bytes `build.rs` validated completely (for `Interpreter::new_prevalidated`)."
    )
    .unwrap();
    writeln!(s, "pub const APP_MODEL_CRC: u32 = {:#010x};", app.crc).unwrap();
    writeln!(s, "/// True when the embedded model is stripped (no names or metadata; `MQ_KEEP_NAMES=1` keeps them).")
        .unwrap();
    writeln!(s, "pub const APP_MODEL_STRIPPED: bool = {};", !keep_names()).unwrap();
    let full_at_boot = match env::var("MQ_BOOT_VALIDATION").as_deref() {
        Ok("full") => true,
        Ok("") | Ok("crc") | Err(_) => false,
        Ok(other) => panic!("MQ_BOOT_VALIDATION={other}: expected `crc` (the default) or `full`"),
    };
    writeln!(
        s,
        "/// True when the application validates the whole model at boot (`MQ_BOOT_VALIDATION=full`); else the header and CRC only (validated at build time)."
    )
    .unwrap();
    writeln!(s, "pub const APP_BOOT_FULL_VALIDATION: bool = {full_at_boot};").unwrap();
    writeln!(s, "/// Length of the `.mq` model (flash).").unwrap();
    writeln!(s, "pub const APP_MODEL_LEN: usize = {};", app.bytes.len()).unwrap();
    writeln!(s, "/// The arena the model's plan needs, exactly.").unwrap();
    writeln!(s, "pub const APP_ARENA_LEN: usize = {};", app.arena).unwrap();
    writeln!(s, "const _: () = assert!(crate::models::arena_len(include_bytes!(concat!(env!(\"OUT_DIR\"), \"/app_model.mq\"))) == APP_ARENA_LEN);").unwrap();
    writeln!(s, "/// Number of ops.").unwrap();
    writeln!(s, "pub const APP_NUM_OPS: usize = {};", app.ops).unwrap();
    writeln!(
        s,
        "/// The op kinds the model uses: the interpreter links these kernels only (`MQ_ALL_OPS=1` at build time: all)."
    )
    .unwrap();
    writeln!(s, "pub struct AppOps;").unwrap();
    let all_ops = env::var("MQ_ALL_OPS").is_ok_and(|v| v == "1");
    let kinds = app.kinds.iter().map(|k| format!("microquant::model::OpKind::{k:?}")).collect::<Vec<_>>().join(", ");
    writeln!(
        s,
        "impl microquant::interp::OpSet for AppOps {{ const KINDS: microquant::interp::OpKinds = {}; }}",
        if all_ops {
            "microquant::interp::OpKinds::ALL".to_string()
        } else {
            format!(
                "microquant::interp::OpKinds::of(&[{kinds}]){}{}",
                if app.int16 { ".with_int16()" } else { "" },
                if app.int4 { ".with_int4()" } else { "" }
            )
        }
    )
    .unwrap();
    writeln!(s, "/// The op kinds' names, as the build embedded them (for the log).").unwrap();
    writeln!(
        s,
        "pub const APP_OP_NAMES: &str = {:?};",
        if all_ops {
            "all".to_string()
        } else {
            let names = app.kinds.iter().map(|k| k.name()).collect::<Vec<_>>().join(" ");
            let types = match (app.int16, app.int4) {
                (false, false) => "int8 only",
                (true, false) => "int8 and 16x8",
                (false, true) => "int8, int4 weights",
                (true, true) => "int8, 16x8 and int4 weights",
            };
            format!("{names}; {types}")
        }
    )
    .unwrap();
    writeln!(s, "/// int8 values in the model's input (one window of sensor samples).").unwrap();
    writeln!(s, "pub const APP_INPUT_LEN: usize = {};", app.input_len).unwrap();
    writeln!(s, "/// int8 values in the model's output (class scores).").unwrap();
    writeln!(s, "pub const APP_OUTPUT_LEN: usize = {};", app.output_len).unwrap();
    writeln!(s, "/// Output quantization (scale, zero point), to print scores.").unwrap();
    writeln!(
        s,
        "pub const APP_OUTPUT_QUANT: (f32, i32) = (f32::from_bits({:#010x}), {});",
        app.output_q.0.to_bits(),
        app.output_q.1
    )
    .unwrap();
    writeln!(
        s,
        "/// TFLite Micro's outputs when the model is one of the golden models (inputs regenerated from seeds)."
    )
    .unwrap();
    match golden {
        Some((m, _)) => writeln!(
            s,
            "pub const APP_GOLDEN: Option<crate::models::Golden> = Some(crate::models::Golden {{ name: {:?}, seed_base: {}, samples: {}, expected: {} }});",
            m.name,
            m.index * 1000,
            m.samples.len(),
            byte_str(&expected_tflm(m))
        )
        .unwrap(),
        None => writeln!(s, "pub const APP_GOLDEN: Option<crate::models::Golden> = None;").unwrap(),
    }
    fs::write(out.join("app_model.rs"), s).unwrap();

    // The model tests.
    let mut s = String::from(
        "// Generated by build.rs (build_model.rs): models and TFLite Micro outputs for tests/model_*.rs.\n",
    );
    for (m, p) in &goldens {
        let b = convert(p);
        let upper = m.name.to_uppercase();
        let expected = expected_tflm(m);
        let flash_needed = (b.bytes.len() + expected.len()) as u64 + test_code_estimate();
        let ram_needed = b.arena as u64 + TEST_RAM_RESERVE;
        let fits = flash_needed <= mem.flash && ram_needed <= mem.ram;
        writeln!(s, "/// `{}` ({} samples), or why it does not run on this board.", m.file, m.samples.len()).unwrap();
        if fits {
            fs::write(out.join(format!("test_{}.mq", m.name)), &b.bytes).unwrap();
            writeln!(
                s,
                "pub static {upper}: Result<crate::models::TestModel, &str> = Ok(crate::models::TestModel {{ golden: crate::models::Golden {{ name: {:?}, seed_base: {}, samples: {}, expected: {} }}, bytes: crate::include_model!(concat!(env!(\"OUT_DIR\"), \"/test_{}.mq\")), input_len: {}, output_len: {} }});",
                m.name,
                m.index * 1000,
                m.samples.len(),
                byte_str(&expected),
                m.name,
                b.input_len,
                b.output_len
            )
            .unwrap();
        } else {
            let why = format!(
                "{} needs {} of flash (model {} + outputs {} + code ~{}) and {} of RAM (arena {} + ~{}); {board} has {} flash, {} RAM",
                m.name,
                kib(flash_needed),
                kib(b.bytes.len() as u64),
                kib(expected.len() as u64),
                kib(test_code_estimate()),
                kib(ram_needed),
                kib(b.arena as u64),
                kib(TEST_RAM_RESERVE),
                kib(mem.flash),
                kib(mem.ram)
            );
            writeln!(s, "pub static {upper}: Result<crate::models::TestModel, &str> = Err({why:?});").unwrap();
        }
        writeln!(s, "/// Arena of `{}` (0 when it does not run on this board).", m.name).unwrap();
        writeln!(s, "pub const {upper}_ARENA_LEN: usize = {};", if fits { b.arena } else { 0 }).unwrap();
    }
    fs::write(out.join("model_tests.rs"), s).unwrap();

    // The runner's buffer: RAM minus a reserve for the stack and statics.
    let reserve = (mem.ram / 4).clamp(RUNNER_RAM_RESERVE_MIN, RUNNER_RAM_RESERVE_MAX);
    let pool = (mem.ram - reserve) & !15;
    let s = format!(
        "// Generated by build.rs (build_model.rs).\n/// Bytes of the runner's buffer for the model and its arena on this board ({board}: {} of RAM minus {} for stack and statics).\npub const RUNNER_POOL_LEN: usize = {pool};\n",
        mem.ram, reserve
    );
    fs::write(out.join("runner.rs"), s).unwrap();
}
