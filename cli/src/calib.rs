//! `--calib`: the calibration samples as a stream ([`SampleSource`]), read a chunk at a time so
//! that memory does not grow with their number.
//!
//! Each `--calib [NAME=]PATH` is an `.npy` file, a directory (its `.npy` files, or with
//! `--preprocess` its images, in file-name order) or a glob pattern (`calib/part_*.npy`, in
//! sorted order); several files of one input are its samples end to end. An `.npy` file is read
//! from its header on, [`CHUNK_SAMPLES`](microquant::ptq::CHUNK_SAMPLES) samples at a time
//! (seek and read), never whole.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use microquant::npy::{NpyDType, NpyError, NpyHeader};
use microquant::onnx::IoInfo;
use microquant::ptq::{Sample, SampleSource, SourceError, SourceErrorKind};

use crate::CliError;
use crate::preprocess::{Preprocess, is_image};

fn name(path: &Path) -> String {
    path.display().to_string()
}

fn dims(s: &[usize]) -> String {
    s.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")
}

/// The files of one `--calib` path: the file itself, a directory's `.npy` files (or images,
/// with `images`), or a glob pattern's matches, sorted.
fn expand(path: &str, images: bool) -> Result<Vec<PathBuf>, CliError> {
    let wanted = |p: &Path| {
        p.is_file() && if images { is_image(p) } else { p.extension().is_some_and(|e| e.eq_ignore_ascii_case("npy")) }
    };
    let what = if images { "image (.png, .jpg, .jpeg)" } else { ".npy" };
    let mut files: Vec<PathBuf> = if path.contains(['*', '?', '[']) {
        let paths =
            glob::glob(path).map_err(|e| CliError::Invalid(format!("--calib {path:?}: bad glob pattern: {e}")))?;
        let mut v = Vec::new();
        for p in paths {
            let p = p.map_err(|e| CliError::io(e.path(), std::io::Error::other(e.to_string())))?;
            if p.is_file() {
                v.push(p);
            }
        }
        if v.is_empty() {
            return Err(CliError::Invalid(format!("--calib {path:?}: no file matches")));
        }
        v
    } else if Path::new(path).is_dir() {
        let dir = Path::new(path);
        let mut v = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| CliError::io(dir, e))? {
            let p = entry.map_err(|e| CliError::io(dir, e))?.path();
            if wanted(&p) {
                v.push(p);
            }
        }
        if v.is_empty() {
            return Err(CliError::data(dir, format!("no {what} file in the directory")));
        }
        v
    } else {
        return Ok(vec![PathBuf::from(path)]);
    };
    files.sort();
    Ok(files)
}

/// Which `--calib` entries are which model input: one input takes every entry (`NAME=` optional);
/// several take `NAME=PATH` each, every input at least once. Returns the paths per input, in the
/// model's order.
fn group(entries: &[String], names: &[&str]) -> Result<Vec<Vec<String>>, CliError> {
    let listed = names.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", ");
    let split =
        |f: &str| f.split_once('=').filter(|(n, _)| names.contains(n)).map(|(n, p)| (n.to_string(), p.to_string()));
    let mut per: Vec<Vec<String>> = vec![Vec::new(); names.len()];
    for f in entries {
        match (split(f), names.len()) {
            (Some((n, p)), _) => per[names.iter().position(|m| *m == n).unwrap_or(0)].push(p),
            (None, 1) => per[0].push(f.clone()),
            (None, k) => {
                return Err(CliError::Invalid(format!(
                    "input {f:?}: the model has {k} inputs ({listed}): give each as NAME=FILE.npy"
                )));
            }
        }
    }
    if let Some(k) = per.iter().position(Vec::is_empty) {
        return Err(CliError::Invalid(format!(
            "no file for the model input {:?} (the model's inputs: {listed}; give each as NAME=FILE.npy)",
            names[k]
        )));
    }
    Ok(per)
}

/// One `.npy` file of samples: its header, and where each sample is.
struct NpyFile {
    path: PathBuf,
    header: NpyHeader,
    samples: usize,
    sample_bytes: usize,
}

/// The `.npy` files of one model input, read in order.
struct NpyInput {
    info: IoInfo,
    files: Vec<NpyFile>,
    /// The file being read, its index in `files`, and the next sample in it.
    open: Option<(usize, File)>,
    file: usize,
    next: usize,
    bytes: Vec<u8>,
}

/// Reads `buf.len()` bytes unless the file ends first: how many were read.
fn read_full(f: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Where the sample's shape (after the first, samples axis) fits the model input: `[N, model
/// shape without its batch axis]` when that axis is 1, or `[N, model shape]`.
fn fits(shape: &[usize], model: &[usize]) -> bool {
    let batch_one = model.first() == Some(&1);
    (batch_one && shape.len() == model.len() && shape.iter().skip(1).eq(model.iter().skip(1)))
        || shape.get(1..).is_some_and(|s| s == model)
}

fn expected(model: &[usize]) -> String {
    let mut e = format!("[N, {}]", dims(model));
    if model.first() == Some(&1) {
        e = format!("[N, {}] or {e}", dims(&model[1..]));
    }
    e
}

impl NpyFile {
    /// Opens `path` and checks its header: float (or integer) samples of `input`'s shape, and
    /// as many bytes as they need. `first`: the first file of the input, whose sample shape
    /// every other must have.
    fn open(path: &Path, input: &IoInfo, first: Option<&NpyFile>) -> Result<Self, SourceError> {
        let err = |kind, msg: String| SourceError::new(kind, msg).in_file(name(path));
        let mut f = File::open(path).map_err(|e| err(SourceErrorKind::Io, e.to_string()))?;
        let len = f.metadata().map_err(|e| err(SourceErrorKind::Io, e.to_string()))?.len();
        let mut prefix = vec![0u8; len.min(1 << 16) as usize];
        let got = read_full(&mut f, &mut prefix).map_err(|e| err(SourceErrorKind::Io, e.to_string()))?;
        prefix.truncate(got);
        let header = match NpyHeader::parse(&prefix) {
            // A header longer than the first 64 KiB: read it all.
            Err(NpyError::HeaderPastEnd { end, .. }) if end <= len && end > prefix.len() as u64 => {
                let mut all = vec![0u8; end as usize];
                f.seek(SeekFrom::Start(0)).map_err(|e| err(SourceErrorKind::Io, e.to_string()))?;
                let got = read_full(&mut f, &mut all).map_err(|e| err(SourceErrorKind::Io, e.to_string()))?;
                all.truncate(got);
                NpyHeader::parse(&all)
            }
            other => other,
        }
        .map_err(|e| err(SourceErrorKind::Format, format!("not a valid .npy file: {e}")))?;
        if header.dtype() == NpyDType::I8 {
            return Err(err(SourceErrorKind::Format, "calibration samples must be float32, not int8".into()));
        }
        let shape = header.shape().to_vec();
        let n = shape.first().copied().unwrap_or(0);
        if !fits(&shape, &input.model_shape) || n == 0 {
            let mut msg = format!(
                "shape {shape:?} does not fit the model input {:?} {:?}: expected {} in the model's own layout",
                input.name,
                input.model_shape,
                expected(&input.model_shape)
            );
            if let Some(first) = first.filter(|f| f.header.shape().get(1..) != shape.get(1..)) {
                msg.push_str(&format!(
                    " (the first file, {}, has samples of shape {:?})",
                    first.path.display(),
                    &first.header.shape()[1..]
                ));
            }
            return Err(err(SourceErrorKind::Shape, msg));
        }
        let data_len = header.data_len().unwrap_or(usize::MAX) as u64;
        let sample_bytes = (data_len / n as u64) as usize;
        let start = header.data_offset() as u64;
        let have = len.saturating_sub(start);
        if have < data_len {
            let sample = (have / sample_bytes as u64) as usize;
            return Err(SourceError::new(
                SourceErrorKind::Truncated,
                format!(
                    "the file ends inside sample {sample} of {n}: {len} bytes, the header's shape {shape:?} of {} needs {}",
                    header.descr(),
                    start + data_len
                ),
            )
            .in_file(name(path))
            .at_sample(sample)
            .at_offset(start + sample as u64 * sample_bytes as u64));
        }
        if have > data_len {
            return Err(err(
                SourceErrorKind::Format,
                format!("{} bytes after the data the header's shape {shape:?} announces", have - data_len),
            )
            .at_offset(start + data_len));
        }
        Ok(Self { path: path.to_path_buf(), header, samples: n, sample_bytes })
    }
}

impl NpyInput {
    fn open(info: &IoInfo, paths: &[PathBuf]) -> Result<Self, SourceError> {
        let mut files: Vec<NpyFile> = Vec::with_capacity(paths.len());
        for p in paths {
            let f = NpyFile::open(p, info, files.first())?;
            files.push(f);
        }
        Ok(Self { info: info.clone(), files, open: None, file: 0, next: 0, bytes: Vec::new() })
    }

    fn count(&self) -> usize {
        self.files.iter().map(|f| f.samples).sum()
    }

    fn rewind(&mut self) {
        self.file = 0;
        self.next = 0;
        self.open = None;
    }

    /// The next `k` samples in the graph's layout (fewer at the end).
    fn read(&mut self, k: usize) -> Result<Vec<Vec<f32>>, SourceError> {
        let mut out = Vec::with_capacity(k);
        while out.len() < k && self.file < self.files.len() {
            let f = &self.files[self.file];
            if self.next == f.samples {
                self.file += 1;
                self.next = 0;
                continue;
            }
            let at = f.header.data_offset() as u64 + (self.next * f.sample_bytes) as u64;
            let io = |e: std::io::Error| SourceError::new(SourceErrorKind::Io, e.to_string()).in_file(name(&f.path));
            let file = match &mut self.open {
                Some((i, file)) if *i == self.file => file,
                slot => {
                    let mut file = File::open(&f.path).map_err(io)?;
                    file.seek(SeekFrom::Start(at)).map_err(io)?;
                    &mut slot.insert((self.file, file)).1
                }
            };
            let take = (k - out.len()).min(f.samples - self.next);
            self.bytes.resize(take * f.sample_bytes, 0);
            let got = read_full(file, &mut self.bytes).map_err(io)?;
            if got < self.bytes.len() {
                let sample = self.next + got / f.sample_bytes;
                return Err(SourceError::new(
                    SourceErrorKind::Truncated,
                    "the file ends inside the sample (it shrank while being read)",
                )
                .in_file(name(&f.path))
                .at_sample(sample)
                .at_offset(f.header.data_offset() as u64 + (sample * f.sample_bytes) as u64));
            }
            let values = f.header.to_f32(&self.bytes);
            let per = values.len() / take;
            for (j, s) in values.chunks_exact(per).enumerate() {
                let g = self.info.to_graph_layout(s).map_err(|e| {
                    SourceError::new(SourceErrorKind::Shape, e.to_string())
                        .in_file(name(&f.path))
                        .at_sample(self.next + j)
                })?;
                out.push(g);
            }
            self.next += take;
        }
        Ok(out)
    }
}

/// The images of one model input, decoded and preprocessed as they are read.
struct ImageInput {
    info: IoInfo,
    files: Vec<PathBuf>,
    next: usize,
    preprocess: Preprocess,
}

impl ImageInput {
    fn open(info: &IoInfo, files: Vec<PathBuf>, preprocess: &Preprocess) -> Result<Self, SourceError> {
        // With a resize, the sample shape is known: check it against the model's now.
        if let Some((w, h)) = preprocess.resize {
            let shape = preprocess.shape(w, h);
            let mut with_n = vec![1];
            with_n.extend(&shape);
            if !fits(&with_n, &info.model_shape) {
                return Err(SourceError::new(
                    SourceErrorKind::Shape,
                    format!(
                        "--preprocess {preprocess} makes samples of shape {shape:?}, which do not fit the model input {:?} {:?} (expected {} in the model's own layout)",
                        info.name,
                        info.model_shape,
                        expected(&info.model_shape)
                    ),
                )
                .in_file(name(&files[0])));
            }
        }
        Ok(Self { info: info.clone(), files, next: 0, preprocess: preprocess.clone() })
    }

    fn read(&mut self, k: usize) -> Result<Vec<Vec<f32>>, SourceError> {
        let end = (self.next + k).min(self.files.len());
        let mut out = Vec::with_capacity(end - self.next);
        for i in self.next..end {
            let path = &self.files[i];
            let (shape, values) = self.preprocess.load(path, i)?;
            let mut with_n = vec![1];
            with_n.extend(&shape);
            let bad = |msg: String| SourceError::new(SourceErrorKind::Shape, msg).in_file(name(path)).at_sample(i);
            if !fits(&with_n, &self.info.model_shape) {
                return Err(bad(format!(
                    "the image preprocesses to shape {shape:?}, which does not fit the model input {:?} {:?} (resize it: --preprocess resize=WxH,...)",
                    self.info.name, self.info.model_shape
                )));
            }
            out.push(self.info.to_graph_layout(&values).map_err(|e| bad(e.to_string()))?);
        }
        self.next = end;
        Ok(out)
    }
}

enum Input {
    Npy(NpyInput),
    Images(ImageInput),
}

impl Input {
    fn count(&self) -> usize {
        match self {
            Input::Npy(n) => n.count(),
            Input::Images(i) => i.files.len(),
        }
    }

    fn first_file(&self) -> &Path {
        match self {
            Input::Npy(n) => &n.files[0].path,
            Input::Images(i) => &i.files[0],
        }
    }
}

/// The calibration samples of every model input, streamed from their files.
pub struct CalibSource {
    inputs: Vec<Input>,
    total: usize,
    chunk: Vec<Sample>,
    done: usize,
}

impl CalibSource {
    /// Opens the files of `entries` (`--calib`) for the model `inputs` and checks every header;
    /// `preprocess`: how images become samples (images are refused without it).
    pub fn open(entries: &[String], inputs: &[IoInfo], preprocess: Option<&Preprocess>) -> Result<Self, CliError> {
        if inputs.is_empty() {
            return Err(CliError::Invalid("the model has no input".into()));
        }
        let names: Vec<&str> = inputs.iter().map(|i| i.name.as_str()).collect();
        let groups = group(entries, &names)?;
        let mut opened = Vec::with_capacity(inputs.len());
        for (info, paths) in inputs.iter().zip(&groups) {
            let mut files = Vec::new();
            for p in paths {
                files.extend(expand(p, preprocess.is_some() && !p.to_ascii_lowercase().ends_with(".npy"))?);
            }
            let images = files.iter().filter(|f| is_image(f)).count();
            let input = match (images, preprocess) {
                (0, _) => Input::Npy(NpyInput::open(info, &files).map_err(CliError::Source)?),
                (n, Some(pre)) if n == files.len() => {
                    Input::Images(ImageInput::open(info, files, pre).map_err(CliError::Source)?)
                }
                (_, Some(_)) => {
                    return Err(CliError::Invalid(format!(
                        "the files of the model input {:?} mix images and other files: give one kind per input",
                        info.name
                    )));
                }
                (_, None) => {
                    return Err(CliError::Invalid(format!(
                        "{}: images need --preprocess SPEC (how they become samples; see --help)",
                        files.iter().find(|f| is_image(f)).map(|f| f.display().to_string()).unwrap_or_default()
                    )));
                }
            };
            opened.push(input);
        }
        let total = opened[0].count();
        for input in &opened[1..] {
            if input.count() != total {
                return Err(CliError::data(
                    input.first_file(),
                    format!(
                        "{} samples, {} has {total}: every input needs the same number",
                        input.count(),
                        opened[0].first_file().display()
                    ),
                ));
            }
        }
        if preprocess.is_some() && !opened.iter().any(|i| matches!(i, Input::Images(_))) {
            return Err(CliError::Invalid(
                "--preprocess applies to images (.png, .jpg, .jpeg); --calib has none".into(),
            ));
        }
        Ok(Self { inputs: opened, total, chunk: Vec::new(), done: 0 })
    }

    /// Every sample in memory (`--mode weight-only` / `dynamic`, whose report takes a slice).
    pub fn read_all(&mut self) -> Result<Vec<Sample>, SourceError> {
        self.rewind()?;
        let mut all = Vec::with_capacity(self.total);
        loop {
            let c = self.next_chunk(microquant::ptq::CHUNK_SAMPLES)?;
            if c.is_empty() {
                return Ok(all);
            }
            all.extend_from_slice(c);
        }
    }
}

impl SampleSource for CalibSource {
    fn sample_count(&self) -> usize {
        self.total
    }

    fn rewind(&mut self) -> Result<(), SourceError> {
        for input in &mut self.inputs {
            match input {
                Input::Npy(n) => n.rewind(),
                Input::Images(i) => i.next = 0,
            }
        }
        self.done = 0;
        Ok(())
    }

    fn next_chunk(&mut self, max: usize) -> Result<&[Sample], SourceError> {
        let k = max.max(1).min(self.total - self.done);
        self.chunk.clear();
        self.chunk.resize_with(k, Vec::new);
        for input in &mut self.inputs {
            let got = match input {
                Input::Npy(n) => n.read(k)?,
                Input::Images(i) => i.read(k)?,
            };
            if got.len() != k {
                return Err(SourceError::new(
                    SourceErrorKind::Count,
                    format!("{} samples where {k} were expected", got.len()),
                )
                .in_file(name(input.first_file())));
            }
            for (s, v) in self.chunk.iter_mut().zip(got) {
                s.push(v);
            }
        }
        self.done += k;
        Ok(&self.chunk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_group_the_files() {
        let e = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(group(&e(&["a.npy", "x=b.npy"]), &["x"]).unwrap(), vec![e(&["a.npy", "b.npy"])]);
        assert_eq!(
            group(&e(&["h=1.npy", "x=2.npy", "x=3.npy"]), &["x", "h"]).unwrap(),
            vec![e(&["2.npy", "3.npy"]), e(&["1.npy"])]
        );
        assert!(
            group(&e(&["x=2.npy"]), &["x", "h"]).unwrap_err().to_string().contains("no file for the model input \"h\"")
        );
        assert!(group(&e(&["2.npy"]), &["x", "h"]).unwrap_err().to_string().contains("NAME=FILE"));
    }
}
