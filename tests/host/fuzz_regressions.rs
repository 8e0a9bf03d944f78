//! Every input a fuzz target (`fuzz/`, `scripts/fuzz.sh`) found crashing, hanging or exhausting
//! memory, replayed through the same code: each must now get a typed error, never a panic or
//! an absurd allocation. Inputs are in `tests/golden/fuzz/<target>/`, as libFuzzer wrote them
//! (with the target's control byte first where the target has one, see `fuzz/src/lib.rs`).

use microquant::Error;
use microquant::interp::Interpreter;
use microquant::model::AlignedBytes;

// The fuzz targets' own code (fuzz/src/lib.rs), compiled here from its source file.
#[path = "../../fuzz/src/lib.rs"]
#[allow(dead_code)]
mod targets;

fn dir(target: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/fuzz").join(target)
}

fn inputs(target: &str) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir(target))
        .map(|rd| {
            rd.flatten()
                .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn input(target: &str, name: &str) -> Vec<u8> {
    std::fs::read(dir(target).join(name)).unwrap()
}

/// Core's `.npy` reader's error for the `npy_read` finding `name` (the CLI's and the npm
/// package's reader), and how long it took.
fn npy_finding_errors(name: &str) -> (String, std::time::Duration) {
    let data = input("npy_read", name);
    let t = std::time::Instant::now();
    let e = targets::core_npy_error(&data).expect("core's reader refuses it").to_string();
    let elapsed = t.elapsed();
    (e, elapsed)
}

/// What `Interpreter::new` says about an `mq_load` input (control byte applied).
fn mq_load_error(data: &[u8]) -> Error {
    let mut b = data[1..].to_vec();
    if data[0] & 1 == 1 {
        targets::reseal_mq(&mut b);
    }
    let a = AlignedBytes::new(&b);
    let mut arena = vec![0u128; targets::MQ_ARENA_BYTES / 16];
    match Interpreter::new(&a, bytemuck::cast_slice_mut(&mut arena)) {
        Ok(_) => panic!("accepted"),
        Err(e) => e,
    }
}

#[test]
fn every_mq_load_finding_replays_without_panic() {
    let all = inputs("mq_load");
    assert!(!all.is_empty());
    let mut arena = vec![0u128; targets::MQ_ARENA_BYTES / 16];
    for (_, data) in &all {
        targets::mq_load(data, &mut arena);
        targets::wasm_load(data);
    }
}

#[test]
fn add_whose_shifted_inputs_overflow_is_refused_at_load() {
    // A hostile ADD: offsets and shifts for which `(offset + x) << left_shift` overflows i32 (it
    // tripped the fixed-point overflow assertion in the kernel at invoke).
    let e = mq_load_error(&input("mq_load", "add_shift_overflow"));
    // Its input rescaling has a positive shift (TFLite's ADD multipliers are below one).
    assert_eq!(e, Error::BadOp { index: 7, reason: "a requantization shift or multiplier is out of range" });
}

#[test]
fn every_npy_finding_replays_without_panic() {
    let all = inputs("npy_read");
    assert!(!all.is_empty());
    for (_, data) in &all {
        targets::npy_read(data);
    }
}

#[test]
fn constant_folding_refuses_a_huge_constant_before_allocating() {
    // A mutated torch export whose `ConstantOfShape` asked for 30.7 M i64 values (245 MB), which
    // the folds after it copied until the process held 2 GiB. Constants are now capped at 2^24
    // elements, checked before anything is allocated.
    let data = input("onnx_import", "constant_of_shape_2gib");
    let e = microquant::onnx::import(&data).expect_err("refused").to_string();
    assert!(e.contains("a constant of shape [30670852] is too large to fold"), "{e}");
    assert!(e.contains("ConstantOfShape"), "{e}");
}

#[test]
fn npy_header_length_past_the_end_is_refused_before_allocating() {
    // A version 3 file declaring a ~4 GiB header: the CLI's reader then (npyz) allocated it
    // before reading.
    let (e, _) = npy_finding_errors("header_len_4gib");
    assert!(e.contains("past the end of the file"), "{e}");
}

#[test]
fn npy_shape_whose_element_count_overflows_is_refused() {
    // shape (7444444444444444444, 2, 6, 6): the CLI's reader then (npyz) multiplied the extents
    // without a check (a panic with overflow checks, a wrapped count without).
    let (e, _) = npy_finding_errors("shape_product_overflow");
    assert_eq!(e, "shape [7444444444444444444, 2, 6, 6] is too large");
}

#[test]
fn npy_header_with_deeply_nested_brackets_is_refused_quickly() {
    // `{{{{...` in the header: the CLI's reader then (npyz) backtracked exponentially (a 13 s
    // hang for 40 levels); core's reader looks its keys up without backtracking.
    let (e, elapsed) = npy_finding_errors("nested_header_hang");
    assert!(elapsed < std::time::Duration::from_secs(1), "{elapsed:?}");
    assert!(e.starts_with("the header at byte 10 has no '"), "{e}");
}

#[test]
fn every_onnx_import_finding_replays_without_panic() {
    let all = inputs("onnx_import");
    assert!(!all.is_empty());
    for (_, data) in &all {
        targets::onnx_import(data);
        let mut w = vec![1u8];
        w.extend_from_slice(data);
        targets::wasm_load(&w);
    }
}

#[test]
fn qdq_fake_quantized_weight_with_a_huge_quotient_does_not_overflow() {
    // A QAT model (torch_qat_cnn.onnx, mutated): folding a fake-quantized weight, `round(x /
    // scale)` saturated at i64::MAX and adding the zero point overflowed. The sum now saturates
    // (and clamps to the type), so the import goes on to the model's real problem: a scale it
    // computes at run time.
    let e = microquant::onnx::import(&input("onnx_import", "qdq_zero_point_overflow")).expect_err("refused");
    assert_eq!(
        e.to_string(),
        "unsupported model feature: the scale \"conv2.weight_fake_logitsscale\" is computed at run time; only \
         constant scales are supported (operator 11 DequantizeLinear \"/conv2/weight_fake_quant/DequantizeLinear\")"
    );
}
