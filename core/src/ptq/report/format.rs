//! The report as JSON ([`Report::to_json`]) and as text (its `Display`).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write as _;

use super::{IoQuant, Report};

pub(crate) fn json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn json_f64(out: &mut String, v: Option<f64>) {
    match v {
        Some(v) if v.is_finite() => {
            let _ = write!(out, "{v}");
        }
        _ => out.push_str("null"),
    }
}

pub(crate) fn json_f32(out: &mut String, v: f32) {
    // f32 Display is the shortest string that reads back to the same f32.
    if v.is_finite() {
        let _ = write!(out, "{v}");
    } else {
        out.push_str("null");
    }
}

fn json_io(out: &mut String, io: &[IoQuant]) {
    out.push('[');
    for (i, t) in io.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"name\":");
        json_str(out, &t.name);
        let _ = write!(out, ",\"shape\":{:?},\"dtype\":\"{}\",\"scale\":", t.shape, t.dtype);
        json_f32(out, t.scale);
        let _ = write!(out, ",\"zero_point\":{}", t.zero_point);
        if let Some(c) = &t.auto {
            out.push_str(",\"choice\":");
            json_str(out, c.name());
            out.push_str(",\"why\":");
            json_str(out, &c.why());
        }
        out.push('}');
    }
    out.push(']');
}

impl Report {
    /// The report as compact JSON: `{"model": {...}, "inputs": [...], "outputs": [...],
    /// "layers": [...]}` with the fields of [`ModelReport`](super::ModelReport), [`IoQuant`] and [`LayerReport`](super::LayerReport)
    /// (snake_case; ranges as `[lo, hi]`; weight scales as `{"min", "max", "count"}` or null;
    /// infinite or undefined numbers as null).
    pub fn to_json(&self) -> String {
        let mut o = String::new();
        let m = &self.model;
        o.push_str("{\"model\":{\"mode\":");
        json_str(&mut o, m.mode);
        let _ = write!(o, ",\"samples\":{},\"top1_agreement\":", m.samples);
        json_f64(&mut o, m.top1_agreement);
        o.push_str(",\"float_accuracy\":");
        json_f64(&mut o, m.float_accuracy);
        o.push_str(",\"int8_accuracy\":");
        json_f64(&mut o, m.int8_accuracy);
        o.push_str(",\"output_sqnr_db\":");
        json_f64(&mut o, m.output_sqnr_db);
        let _ = write!(
            o,
            ",\"float_weight_bytes\":{},\"int8_weight_bytes\":{},\"model_bytes\":{},\"arena_bytes\":{},\"macs\":{}",
            m.float_weight_bytes, m.int8_weight_bytes, m.model_bytes, m.arena_bytes, m.macs
        );
        if let Some(c) = &m.range_choice {
            o.push_str(",\"range_choice\":{\"chosen\":");
            json_str(&mut o, c.chosen.name());
            o.push_str(",\"why\":");
            json_str(&mut o, &c.why());
            let _ = write!(o, ",\"samples\":{},\"scores\":[", c.samples);
            for (i, x) in c.scores.iter().enumerate() {
                if i > 0 {
                    o.push(',');
                }
                o.push_str("{\"policy\":");
                json_str(&mut o, x.policy.name());
                o.push_str(",\"sqnr_db\":");
                json_f64(&mut o, x.sqnr_db);
                let _ = write!(o, ",\"samples\":{}}}", x.samples);
            }
            o.push_str("]}");
        }
        o.push('}');
        o.push_str(",\"inputs\":");
        json_io(&mut o, &self.inputs);
        o.push_str(",\"outputs\":");
        json_io(&mut o, &self.outputs);
        o.push_str(",\"layers\":[");
        for (i, l) in self.layers.iter().enumerate() {
            if i > 0 {
                o.push(',');
            }
            let _ = write!(o, "{{\"index\":{},\"name\":", l.index);
            json_str(&mut o, &l.name);
            o.push_str(",\"op\":");
            json_str(&mut o, &l.op);
            o.push_str(",\"output\":");
            json_str(&mut o, &l.output);
            let _ = write!(o, ",\"dtype\":\"{}\",\"scale\":", l.dtype);
            json_f32(&mut o, l.scale);
            let _ = write!(
                o,
                ",\"zero_point\":{},\"qparams\":\"{}\",\"observer\":\"{}\"",
                l.zero_point, l.qparams, l.observer
            );
            if let Some(c) = &l.auto {
                o.push_str(",\"choice\":");
                json_str(&mut o, c.name());
                o.push_str(",\"why\":");
                json_str(&mut o, &c.why());
            }
            o.push_str(",\"range\":[");
            json_f32(&mut o, l.range.0);
            o.push(',');
            json_f32(&mut o, l.range.1);
            o.push_str("],\"weight_scales\":");
            match l.weight_scales {
                Some((lo, hi, n)) => {
                    o.push_str("{\"min\":");
                    json_f32(&mut o, lo);
                    o.push_str(",\"max\":");
                    json_f32(&mut o, hi);
                    let _ = write!(o, ",\"count\":{n}}}");
                }
                None => o.push_str("null"),
            }
            o.push_str(",\"weight_source\":");
            match l.weight_source {
                Some(w) => json_str(&mut o, w),
                None => o.push_str("null"),
            }
            o.push_str(",\"weight_bits\":");
            match l.weight_bits {
                Some(b) => {
                    let _ = write!(o, "{b}");
                }
                None => o.push_str("null"),
            }
            o.push_str(",\"sqnr_db\":");
            json_f64(&mut o, l.sqnr_db);
            o.push_str(",\"max_abs_error\":");
            json_f32(&mut o, l.max_abs_error);
            let _ = write!(o, ",\"elements\":{}}}", l.elements);
        }
        o.push_str("]}");
        o
    }
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| String::from("-"), |v| format!("{:.2}%", v * 100.0))
}

fn db(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v:.1}"),
        Some(_) => String::from("-inf"),
        None => String::from("inf"),
    }
}

/// A readable table: the model figures, then one line per layer (index, name, op, type (`i8/w4`
/// for a layer with 4-bit weights), SQNR,
/// largest error, scale, zero point, how the parameters were chosen, calibrated range), the
/// layers with the lowest SQNR marked `<`.
impl core::fmt::Display for Report {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let m = &self.model;
        writeln!(
            f,
            "mode {} | {} samples | output SQNR {} dB | top-1 agreement {}",
            m.mode,
            m.samples,
            db(m.output_sqnr_db),
            pct(m.top1_agreement)
        )?;
        if m.float_accuracy.is_some() {
            writeln!(f, "accuracy: float {} | int8 {}", pct(m.float_accuracy), pct(m.int8_accuracy))?;
        }
        writeln!(
            f,
            "weights {} B -> {} B | .mq {} B | arena {} B | {} MACs",
            m.float_weight_bytes, m.int8_weight_bytes, m.model_bytes, m.arena_bytes, m.macs
        )?;
        if let Some(c) = &m.range_choice {
            writeln!(f, "ranges: {}", c.why())?;
        }
        let name_w = self.layers.iter().map(|l| l.name.chars().count()).max().unwrap_or(5).clamp(5, 32);
        let op_w = self.layers.iter().map(|l| l.op.len()).max().unwrap_or(2).max(2);
        // The three worst layers (by SQNR) get a marker.
        let mut order: Vec<(usize, f64)> =
            self.layers.iter().enumerate().filter_map(|(i, l)| l.sqnr_db.map(|s| (i, s))).collect();
        order.sort_by(|a, b| a.1.partial_cmp(&b.1).unwrap_or(core::cmp::Ordering::Equal));
        let worst: Vec<usize> = order.iter().take(3).map(|&(i, _)| i).collect();
        writeln!(
            f,
            "{:>3}  {:name_w$}  {:op_w$}  {:5} {:>8} {:>10} {:>11} {:>6}  {:14} range",
            "#", "layer", "op", "type", "SQNR dB", "max|err|", "scale", "zp", "qparams"
        )?;
        for (k, l) in self.layers.iter().enumerate() {
            let mut name: String = l.name.chars().take(name_w).collect();
            if l.name.chars().count() > name_w {
                name.pop();
                name.push('~');
            }
            writeln!(
                f,
                "{:>3}  {:name_w$}  {:op_w$}  {:5} {:>8} {:>10.3e} {:>11} {:>6}  {:14} [{:.4}, {:.4}]{}",
                l.index,
                name,
                l.op,
                if l.weight_bits == Some(4) { format!("{}/w4", l.dtype) } else { String::from(l.dtype) },
                db(l.sqnr_db),
                l.max_abs_error,
                if l.scale.is_nan() { String::from("-") } else { format!("{:.4e}", l.scale) },
                l.zero_point,
                l.qparams,
                l.range.0,
                l.range.1,
                if worst.contains(&k) { " <" } else { "" }
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptq::report::measure::Acc;

    #[test]
    fn sqnr_and_json_escapes() {
        let mut a = Acc::default();
        a.add(&[1.0, -1.0], &[1.1, -0.9]);
        // 10 log10(2 / 0.02) = 20 dB.
        assert!((a.sqnr().unwrap() - 20.0).abs() < 1e-4);
        assert_eq!(Acc::default().sqnr(), None);
        let mut s = String::new();
        json_str(&mut s, "a\"b\\c\n\u{1}");
        assert_eq!(s, "\"a\\\"b\\\\c\\n\\u0001\"");
        let mut s = String::new();
        json_f64(&mut s, Some(f64::INFINITY));
        json_f32(&mut s, 0.1);
        assert_eq!(s, "null0.1");
    }
}
