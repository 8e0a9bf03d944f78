//! The support matrix shown in `README.md` and `docs/KERNELS.md` is `microquant::support`'s,
//! rendered: each file holds it between `<!-- support-matrix:begin ... -->` and
//! `<!-- support-matrix:end -->`. `MQ_BLESS=1` rewrites the files instead of failing.

use std::path::Path;

use microquant::support::{Detail, write_markdown};

const BEGIN: &str = "<!-- support-matrix:begin";
const END: &str = "<!-- support-matrix:end -->";

/// Checks (or, with `MQ_BLESS=1`, rewrites) the generated block of `file` (relative to the
/// repository root).
fn check(file: &str, detail: Detail) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    let start = text.find(BEGIN).unwrap_or_else(|| panic!("{file}: no `{BEGIN}` marker"));
    let body = start + text[start..].find("-->").expect("unterminated begin marker") + "-->\n".len();
    let end = body + text[body..].find(END).unwrap_or_else(|| panic!("{file}: no `{END}` marker"));
    let mut table = String::new();
    write_markdown(&mut table, detail).unwrap();
    if text[body..end] == table {
        return;
    }
    if std::env::var_os("MQ_BLESS").is_some() {
        let updated = format!("{}{}{}", &text[..body], table, &text[end..]);
        std::fs::write(&path, updated).unwrap();
        return;
    }
    panic!(
        "{file}: the support matrix differs from microquant::support::KERNELS; \
         regenerate it with `MQ_BLESS=1 cargo test -p microquant-tests --test host support_matrix`\n\
         in the file:\n{}\nfrom the code:\n{table}",
        &text[body..end]
    );
}

#[test]
fn readme_matrix_is_generated_from_the_code() {
    check("README.md", Detail::Brief);
}

#[test]
fn kernels_md_matrix_is_generated_from_the_code() {
    check("docs/KERNELS.md", Detail::Full);
}
