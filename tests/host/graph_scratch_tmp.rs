#[test]
fn show() {
    for f in ["kws_ref_model_int8", "kws_ref_model_float32", "ic_resnet8_int8", "ic_resnet8_float32", "vww_96_int8", "vww_96_float32", "ad01_int8", "ad01_float32"] {
        let b = std::fs::read(format!("{}/../models/mlperf-tiny/{f}.tflite", env!("CARGO_MANIFEST_DIR"))).unwrap();
        match microquant::tflite::import(&b) {
            Ok(g) => { if f.starts_with("kws") { println!("{g:#}"); } else { println!("{f}: {} nodes {} MACs", g.nodes.len(), g.total_macs()); } }
            Err(e) => println!("{f}: ERROR {e}"),
        }
    }
}
