//! Emits the Cortex-M ISA cfgs the kernels' fast paths are gated on.
//!
//! Stable rustc reports no Arm `target_feature` cfgs (`dsp`, `mve`) on thumb targets
//! (rust-lang/rust#125101), so they are derived here from the target triple and the rustflags
//! cargo passes (`CARGO_ENCODED_RUSTFLAGS`, which includes `[target.<triple>] rustflags` from
//! `.cargo/config.toml` and `CARGO_TARGET_<TRIPLE>_RUSTFLAGS`):
//!
//! | cfg | when |
//! |---|---|
//! | `mq_dsp` | `thumbv7em-*` (Cortex-M4/M7: the DSP extension is always there), or `thumbv8m.main-*` with `-C target-cpu=cortex-m33` / `cortex-m35p` / `cortex-m55` / `cortex-m85` or `-C target-feature=+dsp`; never when `-dsp` is asked for |
//! | `mq_mve` | `thumbv8m.main-*` with `target-cpu=cortex-m55` / `cortex-m85` or `+mve` (Helium; reserved: no kernel uses it yet) |
//!
//! wasm SIMD needs no cfg from here: `cfg(target_feature = "simd128")` works on stable.
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
    println!("cargo::rustc-check-cfg=cfg(mq_dsp)");
    println!("cargo::rustc-check-cfg=cfg(mq_mve)");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");

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
    if dsp {
        println!("cargo:rustc-cfg=mq_dsp");
    }
    if mve && dsp {
        println!("cargo:rustc-cfg=mq_mve");
    }
}
