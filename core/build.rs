//! Emits the cfgs that choose the kernels' fast path, one per path, so the sources test one short
//! name instead of repeating target conditions:
//!
//! | cfg | path | when |
//! |---|---|---|
//! | `mq_dsp` | `kernels::arch::arm_dsp` | `thumbv7em-*` (Cortex-M4/M7: the DSP extension is always there), or `thumbv8m.main-*` with `-C target-cpu=cortex-m33` / `cortex-m35p` / `cortex-m55` / `cortex-m85` or `-C target-feature=+dsp`; never when `-dsp` is asked for |
//! | `mq_mve` | `kernels::arch::arm_mve` (tried before `arm_dsp`) | with `mq_dsp`: `thumbv8m.main-*` with `target-cpu=cortex-m55` / `cortex-m85` or `+mve` (Helium) |
//! | `mq_wasm_simd` | `kernels::arch::wasm_simd` | `wasm32` with the `simd128` target feature |
//! | `mq_relaxed_simd` | `wasm_simd`'s relaxed-SIMD conv | with `mq_wasm_simd`: the `relaxed-simd` cargo feature and the `relaxed-simd` target feature |
//! | `mq_portable` | `kernels::arch::portable` | every other target (x86-64, AArch64, Cortex-M0/M0+/M3, wasm32 without SIMD) |
//!
//! With the `force-reference` feature none of them is emitted: the fast paths are compiled out
//! and every kernel runs its reference.
//!
//! Stable rustc reports no Arm `target_feature` cfgs (`dsp`, `mve`) on thumb targets
//! (rust-lang/rust#125101), so they are derived here from the target triple and the rustflags
//! cargo passes (`CARGO_ENCODED_RUSTFLAGS`, which includes `[target.<triple>] rustflags` from
//! `.cargo/config.toml` and `CARGO_TARGET_<TRIPLE>_RUSTFLAGS`). wasm's `simd128` and
//! `relaxed-simd` are in `CARGO_CFG_TARGET_FEATURE`, which cargo sets from the same flags.
use std::env;

/// The value of every `-C <key>=<value>` (or `-C<key>=<value>`, `--codegen <key>=<value>`) flag.
fn codegen_values<'a>(flags: &'a [&'a str], key: &str) -> Vec<&'a str> {
    let mut values = Vec::new();
    let mut i = 0;
    while i < flags.len() {
        let f = flags[i];
        let opt = if f == "-C" || f == "--codegen" {
            i += 1;
            flags.get(i).copied()
        } else {
            f.strip_prefix("-C").or_else(|| f.strip_prefix("--codegen="))
        };
        if let Some(v) = opt.and_then(|o| o.strip_prefix(key)).and_then(|o| o.strip_prefix('=')) {
            values.push(v);
        }
        i += 1;
    }
    values
}

/// Whether the target features named in the flags enable (`Some(true)`) or disable
/// (`Some(false)`) `feature`; the last mention wins, as in rustc.
fn feature_switch(features: &[&str], feature: &str) -> Option<bool> {
    let mut state = None;
    for list in features {
        for f in list.split(',') {
            match f.trim() {
                x if x.strip_prefix('+') == Some(feature) => state = Some(true),
                x if x.strip_prefix('-') == Some(feature) => state = Some(false),
                _ => {}
            }
        }
    }
    state
}

fn main() {
    for cfg in ["mq_dsp", "mq_mve", "mq_wasm_simd", "mq_relaxed_simd", "mq_portable"] {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");

    if env::var_os("CARGO_FEATURE_FORCE_REFERENCE").is_some() {
        return;
    }
    let target = env::var("TARGET").unwrap_or_default();
    let encoded = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let flags: Vec<&str> = encoded.split('\x1f').filter(|f| !f.is_empty()).collect();
    let cpu = codegen_values(&flags, "target-cpu").last().copied().unwrap_or("");
    let features = codegen_values(&flags, "target-feature");

    let v7em = target.starts_with("thumbv7em");
    let v8main = target.starts_with("thumbv8m.main");
    let cpu_dsp = matches!(cpu, "cortex-m33" | "cortex-m35p" | "cortex-m55" | "cortex-m85");
    let cpu_mve = matches!(cpu, "cortex-m55" | "cortex-m85");

    let dsp = match feature_switch(&features, "dsp") {
        Some(on) => (v7em || v8main) && on,
        None => v7em || (v8main && cpu_dsp),
    };
    let mve = match feature_switch(&features, "mve") {
        Some(on) => v8main && on,
        None => v8main && cpu_mve,
    };
    let wasm = env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|a| a == "wasm32");
    let target_features = env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    let has = |f: &str| target_features.split(',').any(|x| x == f);
    let wasm_simd = wasm && has("simd128");
    let relaxed = wasm_simd && has("relaxed-simd") && env::var_os("CARGO_FEATURE_RELAXED_SIMD").is_some();

    let path = if dsp {
        "mq_dsp"
    } else if wasm_simd {
        "mq_wasm_simd"
    } else {
        "mq_portable"
    };
    println!("cargo:rustc-cfg={path}");
    if mve && dsp {
        println!("cargo:rustc-cfg=mq_mve");
    }
    if relaxed {
        println!("cargo:rustc-cfg=mq_relaxed_simd");
    }
}
