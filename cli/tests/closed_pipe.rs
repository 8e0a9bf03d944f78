//! A closed standard output ends a command quietly: `microquant inspect model.mq | head -1` exits
//! with status 0 and says nothing on stderr (no "failed printing to stdout: Broken pipe" panic).
//! The commands write into a pipe whose reader has already gone (every write fails with
//! `BrokenPipe`), and, as `head -1` does, into a pipe read for one line and then closed.
#![cfg(unix)]

use std::ffi::OsStr;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn microquant() -> Command {
    Command::new(env!("CARGO_BIN_EXE_microquant"))
}

/// The write end of a pipe whose read end is closed: the read end was a child's stdin, and the
/// child has exited without reading.
fn closed_pipe() -> Stdio {
    let mut child =
        microquant().arg("--version").stdin(Stdio::piped()).stdout(Stdio::null()).spawn().expect("run microquant");
    let writer = child.stdin.take().expect("stdin");
    child.wait().expect("wait");
    Stdio::from(writer)
}

/// A `.mq` model (the tiny M0 model, imported) in a temporary folder.
fn model(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("microquant-cli-closed-pipe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mq = dir.join(name);
    let tflite = repo().join("tests/golden/models/tiny_m0_int8.tflite");
    let out = microquant().arg("import").arg(&tflite).arg("-o").arg(&mq).output().expect("run microquant");
    assert!(out.status.success(), "import failed:\n{}", String::from_utf8_lossy(&out.stderr));
    mq
}

/// Runs `microquant args` with its stdout a pipe nobody reads.
fn into_closed_pipe<S: AsRef<OsStr>>(args: &[S]) -> Output {
    microquant().args(args).stdout(closed_pipe()).stderr(Stdio::piped()).output().expect("run microquant")
}

fn assert_quiet_success(out: &Output, what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked") && !err.contains("Broken pipe"), "{what}: stderr: {err}");
    assert!(err.is_empty(), "{what}: stderr not empty: {err}");
    assert_eq!(out.status.code(), Some(0), "{what}: exit status {:?}, stderr: {err}", out.status);
}

#[test]
fn inspect_into_a_closed_pipe_exits_quietly() {
    let mq = model("inspect.mq");
    assert_quiet_success(&into_closed_pipe(&[OsStr::new("inspect"), mq.as_os_str()]), "inspect");
    assert_quiet_success(&into_closed_pipe(&[OsStr::new("inspect"), mq.as_os_str(), OsStr::new("--json")]), "--json");
    std::fs::remove_file(&mq).unwrap();
}

#[test]
fn qdq_and_import_into_a_closed_pipe_exit_quietly() {
    let out = into_closed_pipe(&["qdq", "--scale", "0.5", "--zero-point", "-3", "1.0", "-2.5", "7"]);
    assert_quiet_success(&out, "qdq");
    let mq = model("import.mq");
    let tflite = repo().join("tests/golden/models/tiny_m0_int8.tflite");
    let out = into_closed_pipe(&[OsStr::new("import"), tflite.as_os_str(), OsStr::new("-o"), mq.as_os_str()]);
    assert_quiet_success(&out, "import");
    std::fs::remove_file(&mq).unwrap();
}

#[test]
fn inspect_read_for_one_line_as_head_does() {
    let mq = model("head.mq");
    for json in [false, true] {
        let mut cmd = microquant();
        cmd.arg("inspect").arg(&mq);
        if json {
            cmd.arg("--json");
        }
        let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("run microquant");
        let mut first = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut first).expect("read a line");
        assert!(!first.is_empty(), "no first line");
        // The reader is dropped here: the pipe is closed with the rest of the output unread.
        let out = child.wait_with_output().expect("wait");
        assert_quiet_success(&out, if json { "inspect --json | head -1" } else { "inspect | head -1" });
    }
    std::fs::remove_file(&mq).unwrap();
}

#[test]
fn an_error_is_still_reported_when_stdout_is_closed() {
    let out = into_closed_pipe(&["inspect", "/nonexistent/model.mq"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    assert!(err.starts_with("microquant: error: /nonexistent/model.mq: "), "stderr: {err}");
    assert!(!err.contains("panicked"), "stderr: {err}");
}
