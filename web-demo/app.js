// The demo page. Model work (loading, calibration, quantization, exports) runs in worker.js;
// this thread reads files, draws the results and runs the small tensor panel. Nothing leaves
// the browser: the only requests are for the page's own files, made when it loads.
import { sqnrChart } from './chart.js';
import { imageInput, imagesToSamples } from './images.js';

const $ = (id) => document.getElementById(id);

// Measured figures used for the estimates (BENCHMARKS.md, "Firmware"; QEMU mps2-an386, Cortex-M4F):
// instructions per MAC of whole MLPerf Tiny models (ic 1.81 ... vww 3.28) and the flash of the
// runtime and kernels (runtime code 77.7 KB + kernels 83.1 KB).
const M4_INSTR_PER_MAC = [1.81, 3.28];
const M4_RUNTIME_FLASH = (77.7 + 83.1) * 1024;

const state = { info: null, name: '', samples: null, count: 0, labels: null, running: false, calibrating: true, nextId: 1, links: [] };

function showError(message) {
  $('error').textContent = message;
  $('error').hidden = false;
  $('error').scrollIntoView({ block: 'nearest' });
}

function clearError() {
  $('error').hidden = true;
  $('error').textContent = '';
}

function setStatus(text) {
  $('model-status').textContent = text;
}

// ---- the worker ----

const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
const pending = new Map();
worker.onmessage = (e) => {
  const m = e.data;
  const p = pending.get(m.id);
  if (!p) return;
  if (m.type === 'progress') return p.onProgress?.(m);
  pending.delete(m.id);
  if (m.type === 'error') {
    const err = new Error(m.message);
    err.name = m.name;
    p.reject(err);
  } else p.resolve(m);
};
worker.onerror = (e) => showError(`The worker failed: ${e.message ?? 'could not start (is the page served over http?)'}`);

function call(message, transfer = [], onProgress) {
  const id = state.nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject, onProgress });
    worker.postMessage({ ...message, id }, transfer);
  });
}

// ---- model and data ----

const fmtBytes = (n) => (n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(2)} MB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KB` : `${n} B`);
const fmtInt = (n) => Math.round(n).toLocaleString('en-US');

function facts(dl, rows) {
  dl.replaceChildren();
  for (const [k, v] of rows) {
    const dt = document.createElement('dt');
    dt.textContent = k;
    const dd = document.createElement('dd');
    dd.textContent = v;
    dl.append(dt, dd);
  }
}

function showModel() {
  const i = state.info;
  const input = i.inputs.map((t) => `${t.name} [${t.shape.join(', ')}]`).join(', ');
  facts($('model-info'), [
    ['model', `${state.name} (${i.format.toUpperCase()}${i.carriesQuantization ? ', QDQ: its scales are kept' : ''})`],
    ['input', input],
    ['output', i.outputs.map((t) => `${t.name} [${t.shape.join(', ')}]`).join(', ')],
    ['layers', `${i.layers.length} after graph optimization, ${fmtInt(i.macs)} MACs`],
    ['float weights', fmtBytes(i.weightBytes)],
    ['calibration', state.samples ? `${state.count} samples${state.labels ? ` with ${state.labels.length} labels` : ''}` : 'none yet: add an .npy or a folder of images'],
  ]);
  const body = $('layer-options').querySelector('tbody');
  body.replaceChildren();
  const int16Ops = new Set(['Conv2d', 'DepthwiseConv2d', 'FullyConnected', 'Add', 'Mul', 'MaxPool2d', 'AvgPool2d', 'Pad', 'Mean', 'Reshape', 'Squeeze', 'Transpose']);
  for (const l of i.layers) {
    const tr = document.createElement('tr');
    const sel = document.createElement('select');
    sel.dataset.layer = l.name;
    for (const [v, t] of [['', 'default'], ['auto', 'auto'], ['minmax', 'min/max'], ['moving-average', 'moving average'], ['histogram', 'histogram'], ['entropy', 'entropy'], ['percentile', 'percentile']]) {
      sel.append(new Option(t, v));
    }
    const box = document.createElement('input');
    box.type = 'checkbox';
    box.dataset.layer = l.name;
    box.dataset.int16 = int16Ops.has(l.op) ? 'yes' : 'no';
    box.disabled = !int16Ops.has(l.op);
    for (const cell of [String(l.index), l.name, l.op, sel, box]) {
      const td = document.createElement('td');
      td.append(cell);
      tr.append(td);
    }
    body.append(tr);
  }
  showMode();
}

// ---- modes ----

const HYBRID = new Set(['weight-only', 'dynamic']);
const isHybrid = () => HYBRID.has($('mode').value);
const MODE_NOTES = {
  static: 'Static: int8 weights and activations, scales calibrated on your data: a .mq for the device, bit-exact with TFLite Micro.',
  'weight-only': 'Weight-only: int8 weights, float compute, no calibration (as ONNX Runtime quantizes weights). An ONNX model about a quarter of the float weights; no .mq (the device runtime computes in int8). Data, if added, measures it against the float model.',
  dynamic: 'Dynamic: int8 weights, each layer\'s input quantized per call, as ONNX Runtime\'s quantize_dynamic. An ONNX model; no .mq (the device runtime needs calibrated activations). Data, if added, measures it against the float model.',
};

/** A model is loaded, nothing runs, and static mode has calibration data. */
function canQuantize() {
  return Boolean(state.info) && !state.running && (Boolean(state.samples) || isHybrid());
}

/** Static-only options are disabled in the hybrid modes, with the reason shown. */
function showMode() {
  const hybrid = isHybrid();
  for (const id of ['observer', 'percentile', 'activations', 'rounding', 'producer', 'weight-bits', 'adaround']) $(id).disabled = hybrid;
  for (const c of document.querySelectorAll('#layer-options select, #layer-options input')) {
    c.disabled = hybrid || (c.type === 'checkbox' && c.dataset.int16 === 'no');
  }
  $('mode-note').textContent = MODE_NOTES[$('mode').value] ?? '';
  $('quantize-model').disabled = !canQuantize();
}

// ---- inputs with dynamic extents or non-float types (ONNX) ----

/** A first guess for a dynamic extent from its dim_param name (the user edits it). */
function defaultExtent(name, axis) {
  const n = (name ?? '').toLowerCase();
  if (axis === 0 || /batch|^n$/.test(n)) return 1;
  if (/height|width|^h$|^w$|size|img|image/.test(n)) return 224;
  if (/sample|audio|wave/.test(n)) return 16000;
  if (/seq|len|time|token|frame|step|^t$/.test(n)) return 128;
  return 1;
}

/** A first guess for a non-float input's value from its name. */
const defaultValue = (name, dtype) => (/sr|rate/i.test(name) ? '16000' : dtype === 'bool' ? '1' : '');

/** Shows the form asking for the extents of dynamic axes and the values of non-float inputs of
 *  `inputs` (modelInputs), prefilled with the model's dim_param names and common defaults;
 *  submitting it loads the model with them. */
function askInputs(inputs, pending) {
  state.pendingModel = pending;
  const box = $('input-fields');
  box.replaceChildren();
  for (const i of inputs.filter((x) => x.needsShape || x.needsValue)) {
    const fs = document.createElement('fieldset');
    fs.dataset.input = i.name;
    const legend = document.createElement('legend');
    const dims = i.dims ? `[${i.dims.map((d) => (d === null ? '?' : d)).join(', ')}]` : 'no declared shape';
    legend.textContent = `${i.name} (${i.dtype}, ${dims})`;
    fs.append(legend);
    if (i.needsValue) {
      const label = document.createElement('label');
      label.textContent = 'value (comma-separated for several) ';
      const input = document.createElement('input');
      input.type = 'text';
      input.dataset.value = i.name;
      input.value = defaultValue(i.name, i.dtype);
      input.placeholder = i.dtype === 'bool' ? 'true / false' : 'e.g. 16000';
      label.append(input);
      fs.append(label);
    } else {
      (i.dims ?? []).forEach((d, axis) => {
        const label = document.createElement('label');
        const input = document.createElement('input');
        input.type = 'number';
        input.min = '1';
        input.dataset.input = i.name;
        input.dataset.axis = String(axis);
        if (typeof d === 'number') {
          label.textContent = `axis ${axis} `;
          input.value = String(d);
          input.disabled = true;
        } else {
          label.textContent = `${d ?? `axis ${axis}`} `;
          input.value = String(defaultExtent(d, axis));
          input.dataset.dim = d ?? '';
        }
        label.append(input);
        fs.append(label);
      });
    }
    box.append(fs);
  }
  $('input-form').hidden = false;
  setStatus(`${pending.name} has dynamic inputs: give their sizes (and values) above, then load it.`);
}

/** The loadModel options the input form holds. */
function inputOptions() {
  const inputShapes = {};
  const inputValues = {};
  for (const fs of $('input-fields').querySelectorAll('fieldset')) {
    const name = fs.dataset.input;
    const value = fs.querySelector('input[data-value]');
    if (value) {
      const parts = value.value.split(/[\s,]+/).filter((s) => s.length);
      if (!parts.length) throw new Error(`give a value for input '${name}'`);
      inputValues[name] = parts.map((t, k) => {
        const v = t === 'true' ? 1 : t === 'false' ? 0 : Number(t);
        if (!Number.isFinite(v)) throw new Error(`input '${name}': value ${k + 1} ("${t}") is not a number`);
        return v;
      });
      continue;
    }
    inputShapes[name] = [...fs.querySelectorAll('input[data-axis]')].map((e) => {
      const v = Number(e.value);
      if (!Number.isInteger(v) || v < 1) throw new Error(`input '${name}': ${e.dataset.dim || `axis ${e.dataset.axis}`} must be a positive integer, got "${e.value}"`);
      return v;
    });
  }
  return { inputShapes, inputValues };
}

async function loadWithInputs(ev) {
  ev.preventDefault();
  const p = state.pendingModel;
  if (!p) return;
  clearError();
  const options = inputOptions();
  await loadModelBytes(p.bytes.slice(), p.name, options);
  $('input-form').hidden = true;
  state.pendingModel = null;
  if (p.rest.length) await takeFiles(p.rest);
}

/** Loads a model in the worker. An ONNX model whose inputs need sizes or values (and no
 *  `loadOptions` yet) first asks for them: returns false then (the files in `rest` wait). */
async function loadModelBytes(bytes, name, loadOptions, rest = []) {
  clearError();
  if (!loadOptions && bytes.length >= 8 && String.fromCharCode(...bytes.subarray(4, 8)) !== 'TFL3') {
    let inputs = [];
    try {
      inputs = mq.modelInputs(bytes);
    } catch {
      // Not a readable ONNX model: the worker's loadModel names the problem.
    }
    if (inputs.some((i) => i.needsShape || i.needsValue)) {
      askInputs(inputs, { bytes: bytes.slice(), name, rest });
      return false;
    }
  }
  $('input-form').hidden = true;
  setStatus(`Loading ${name}…`);
  const r = await call({ type: 'load', model: bytes, name, loadOptions }, [bytes.buffer]);
  state.info = r.info;
  state.name = name;
  state.samples = null;
  state.labels = null;
  state.count = 0;
  $('results').hidden = true;
  showModel();
  setStatus(`${name} loaded. Add calibration data.`);
  return true;
}

function npyInfo(bytes, what) {
  const a = mq.parseNpy(bytes);
  return { ...a, what };
}

function setCalibration(bytes, name) {
  const a = npyInfo(bytes, name);
  const per = state.info.inputs[0].shape.reduce((x, y) => x * y, 1);
  const n = a.shape.length ? a.shape[0] : 1;
  const rest = a.shape.slice(1).reduce((x, y) => x * y, 1);
  if (state.info.inputs.length !== 1) throw new Error('this page calibrates models with one input (the package API takes several)');
  if (rest !== per && a.data.length !== per) {
    throw new Error(`${name}: shape [${a.shape.join(', ')}] does not fit input '${state.info.inputs[0].name}' [${state.info.inputs[0].shape.join(', ')}]: expected [N, ${state.info.inputs[0].shape.slice(1).join(', ')}] (${per} values per sample)`);
  }
  state.samples = bytes;
  state.count = a.data.length / per;
  if (state.labels && state.labels.length !== state.count) state.labels = null;
  return n;
}

function setLabels(bytes, name) {
  const a = npyInfo(bytes, name);
  if (a.shape.length > 2 || (a.shape.length === 2 && a.shape[1] !== 1)) throw new Error(`${name}: labels must be [N], got [${a.shape.join(', ')}]`);
  if (state.samples && a.data.length !== state.count) throw new Error(`${name}: ${a.data.length} labels for ${state.count} calibration samples`);
  state.labels = Array.from(a.data);
}

async function useExample() {
  clearError();
  const get = async (f) => {
    const r = await fetch(`examples/${f}`);
    if (!r.ok) throw new Error(`could not load examples/${f} (${r.status})`);
    return new Uint8Array(await r.arrayBuffer());
  };
  const [model, calib, labels] = await Promise.all([get('digits_cnn.onnx'), get('digits_calib.npy'), get('digits_labels.npy')]);
  for (const id of ['model-file', 'calib-file', 'labels-file', 'image-dir']) $(id).value = '';
  await loadModelBytes(model, 'digits_cnn.onnx');
  setCalibration(calib, 'digits_calib.npy');
  setLabels(labels, 'digits_labels.npy');
  showModel();
  setStatus('Ready: the bundled example is loaded. Click Quantize.');
}

async function takeFiles(files) {
  clearError();
  const list = [...files];
  const model = list.find((f) => /\.(onnx|tflite)$/i.test(f.name));
  const images = list.filter((f) => f.type.startsWith('image/') || /\.(png|jpe?g|gif|bmp|webp)$/i.test(f.name));
  const npys = list.filter((f) => /\.npy$/i.test(f.name));
  const others = list.filter((f) => f !== model && !images.includes(f) && !npys.includes(f));
  if (others.length) throw new Error(`${others.map((f) => f.name).join(', ')}: not a model (.onnx, .tflite), an .npy or an image`);
  if (model) {
    const rest = list.filter((f) => f !== model);
    // A model with dynamic inputs asks for them first; the other files wait for it.
    if (!(await loadModelBytes(new Uint8Array(await model.arrayBuffer()), model.name, undefined, rest))) return;
  }
  if (!state.info) throw new Error('load a model first (.onnx or .tflite)');
  for (const f of npys) {
    const bytes = new Uint8Array(await f.arrayBuffer());
    const a = mq.parseNpy(bytes);
    const integer = /[iu][1248]$/.test(a.dtype);
    if (integer && a.shape.length <= 2 && (a.shape.length < 2 || a.shape[1] === 1)) setLabels(bytes, f.name);
    else setCalibration(bytes, f.name);
  }
  if (images.length) await takeImages(images);
  showModel();
  setStatus(state.samples ? 'Ready. Click Quantize.' : 'Add calibration data (.npy or a folder of images).');
}

async function takeImages(files) {
  const range = $('pixel-range').value.split(',').map(Number);
  const shape = state.info.inputs[0].shape;
  imageInput(shape);
  setStatus(`Reading ${files.length} images…`);
  const r = await imagesToSamples(files, shape, range);
  state.samples = r.samples;
  state.count = r.count;
  state.labels = null;
  setStatus(`${r.count} images resized to ${shape.join('×')} (${r.layout}).`);
}

// ---- quantization ----

function options() {
  const o = {
    observer: $('observer').value,
    perChannel: $('per-channel').value === 'true',
    activations: $('activations').value,
    mode: $('mode').value,
    rounding: $('rounding').value,
    overrides: {},
    int16Layers: [],
  };
  const bits = Number($('weight-bits').value);
  if (bits !== 8 && !isHybrid()) o.weightBits = bits;
  if ($('adaround').checked && !isHybrid()) o.adaround = true;
  if (o.observer === 'percentile' || [...document.querySelectorAll('#layer-options select')].some((s) => s.value === 'percentile')) {
    o.percentile = Number($('percentile').value);
  }
  for (const s of document.querySelectorAll('#layer-options select')) if (s.value) o.overrides[s.dataset.layer] = s.value;
  for (const b of document.querySelectorAll('#layer-options input:checked')) o.int16Layers.push(b.dataset.layer);
  const producer = $('producer').value.trim();
  if (producer) o.metadata = { producer };
  return o;
}

let passes = 1;
function onProgress(p) {
  if (p.stage === 'adaround') {
    // Between calibration and the report: pass 0 gathers each layer's inputs, pass 1 optimizes.
    setStatus(p.pass === 0
      ? `AdaRound: gathering layer inputs, ${p.done} / ${p.total} samples`
      : `AdaRound: optimizing the rounding, ${p.done} / ${p.total} steps`);
    return;
  }
  if (p.stage === 'calibrate') passes = p.passes;
  else if (!state.calibrating) passes = 0;
  const f = p.stage === 'calibrate' ? (p.pass + p.done / p.total) / (passes + 1) : (passes + p.done / Math.max(1, p.total)) / (passes + 1);
  $('progress').value = f;
  setStatus(p.stage === 'calibrate'
    ? `Calibrating: pass ${p.pass + 1} of ${p.passes}, ${p.done} / ${p.total} samples`
    : `Evaluating float vs ${state.calibrating ? 'int8' : 'quantized'} layer by layer: ${p.done} / ${p.total} samples`);
}

async function quantize(ev) {
  ev.preventDefault();
  if (state.running) return;
  clearError();
  state.running = true;
  $('quantize-model').disabled = true;
  $('cancel').disabled = false;
  $('progress').value = 0;
  passes = 1;
  state.calibrating = !isHybrid();
  setStatus('Starting…');
  try {
    const samples = state.samples ? state.samples.slice() : null;
    const r = await call({ type: 'quantize', samples, labels: state.labels, options: options() }, samples ? [samples.buffer] : [], onProgress);
    $('progress').value = 1;
    showResults(r);
    setStatus(`Quantized in ${(r.ms / 1000).toFixed(2)} s.`);
  } catch (e) {
    if (e.name === 'AbortError') {
      setStatus('Cancelled.');
      $('progress').value = 0;
    } else {
      setStatus('Failed.');
      showError(e.message);
    }
  } finally {
    state.running = false;
    $('cancel').disabled = true;
    $('quantize-model').disabled = !canQuantize();
  }
}

// ---- results ----

function cell(text, value) {
  const td = document.createElement('td');
  td.textContent = text;
  if (value !== undefined) td.dataset.value = value === null ? 'null' : String(value);
  return td;
}

const pct = (v) => (v === null ? '–' : `${(v * 100).toFixed(2)} %`);
const db = (v) => (v === null ? '∞ (identical)' : `${v.toFixed(2)} dB`);

function card(title, main, sub, key, value) {
  const d = document.createElement('div');
  d.className = 'card';
  d.dataset.key = key;
  if (value !== undefined) d.dataset.value = String(value);
  const h = document.createElement('h4');
  h.textContent = title;
  const b = document.createElement('p');
  b.className = 'big';
  b.textContent = main;
  const s = document.createElement('p');
  s.className = 'sub';
  s.textContent = sub;
  d.append(h, b, s);
  return d;
}

function link(id, data, name, type) {
  const a = $(id);
  if (!data) {
    a.removeAttribute('href');
    a.setAttribute('aria-disabled', 'true');
    return;
  }
  const url = URL.createObjectURL(new Blob([data], { type }));
  state.links.push(url);
  a.href = url;
  a.download = name;
  a.removeAttribute('aria-disabled');
}

function showResults(r) {
  for (const u of state.links.splice(0)) URL.revokeObjectURL(u);
  if (r.mode === 'weight-only' || r.mode === 'dynamic') showHybrid(r);
  else showStatic(r);
  $('results').hidden = false;
}

/** The accuracy table: `rows` of [measure, text, value, key]. */
function accuracyRows(rows) {
  const acc = $('accuracy').querySelector('tbody');
  acc.replaceChildren();
  for (const [k, text, value, key] of rows) {
    const tr = document.createElement('tr');
    tr.dataset.key = key;
    tr.append(cell(k), cell(text, value));
    acc.append(tr);
  }
}

function modelRows(m, quantized) {
  return [
    ['samples evaluated', String(m.samples), m.samples, 'samples'],
    ['top-1 agreement with float', pct(m.top1Agreement), m.top1Agreement, 'top1'],
    ['float accuracy', m.floatAccuracy === null ? 'no labels' : pct(m.floatAccuracy), m.floatAccuracy, 'float-accuracy'],
    [`${quantized} accuracy`, m.int8Accuracy === null ? 'no labels' : pct(m.int8Accuracy), m.int8Accuracy, 'int8-accuracy'],
    ['output SQNR', db(m.outputSqnrDb), m.outputSqnrDb, 'output-sqnr'],
    ['mode', m.mode, m.mode, 'mode'],
    ...(m.rangeChoice ? [['ranges (auto)', m.rangeChoice.why, m.rangeChoice.chosen, 'range-choice']] : []),
  ];
}

/** The chart and the layer table; float outputs (hybrid models) have no scale: "–". */
function layerResults(layers) {
  if (layers.length) sqnrChart($('chart'), layers);
  else $('chart').replaceChildren();
  const body = $('layers').querySelector('tbody');
  body.replaceChildren();
  for (const l of layers) {
    const float = l.scale === null;
    const tr = document.createElement('tr');
    tr.append(cell(String(l.index)), cell(l.name), cell(l.op), cell(l.dtype), cell(float ? '–' : l.scale.toPrecision(5), l.scale),
      cell(float ? '–' : String(l.zeroPoint), l.zeroPoint), cell(l.qparams), cell(`[${l.range[0].toFixed(3)}, ${l.range[1].toFixed(3)}]`),
      cell(l.sqnrDb === null ? '∞' : l.sqnrDb.toFixed(2), l.sqnrDb), cell(l.maxAbsError.toExponential(3), l.maxAbsError));
    body.append(tr);
  }
}

function showStatic(r) {
  const m = r.report.model;
  const [lo, hi] = M4_INSTR_PER_MAC.map((k) => (m.macs * k) / 1e6);
  $('cards').replaceChildren(
    card('weights', `${fmtBytes(m.floatWeightBytes)} → ${fmtBytes(m.int8WeightBytes)}`, `float → int8, ${(m.floatWeightBytes / Math.max(1, m.int8WeightBytes)).toFixed(1)}× smaller`, 'weights', m.int8WeightBytes),
    card('.mq model', fmtBytes(m.modelBytes), 'weights, kernel parameters, tables: the model in flash', 'model', m.modelBytes),
    card('arena (RAM)', fmtBytes(m.arenaBytes), 'activations and scratch, planned exactly', 'arena', m.arenaBytes),
    card('flash with the runtime', `≈ ${fmtBytes(m.modelBytes + M4_RUNTIME_FLASH)}`, `.mq + runtime and kernels (${fmtBytes(M4_RUNTIME_FLASH)} on Cortex-M4F, measured)`, 'flash'),
    card('Cortex-M4 per inference', `≈ ${lo.toFixed(2)}–${hi.toFixed(2)} M instr.`, `estimate: ${fmtInt(m.macs)} MACs × ${M4_INSTR_PER_MAC[0]}–${M4_INSTR_PER_MAC[1]} instructions/MAC (MLPerf Tiny, QEMU)`, 'm4'),
  );
  accuracyRows(modelRows(m, 'int8'));
  layerResults(r.report.layers);
  $('dl-qdq').textContent = 'QDQ ONNX';
  link('dl-mq', r.mq, `${r.stem}.mq`, 'application/octet-stream');
  link('dl-qdq', r.qdq, `${r.stem}.qdq.onnx`, 'application/octet-stream');
  link('dl-h', r.header, `${r.stem}.h`, 'text/x-c');
  link('dl-rs', r.rust, `${r.stem}.rs`, 'text/x-rust');
  link('dl-report', r.reportJson, `${r.stem}.report.json`, 'application/json');
  for (const id of ['dl-mq', 'dl-h', 'dl-rs']) $(id).removeAttribute('title');
  $('dl-qdq').title = r.qdqError ?? '';
}

/** A weight-only or dynamic model: int8 weights, float activations, an ONNX model, no .mq. */
function showHybrid(r) {
  const s = r.sizes;
  const how = r.mode === 'dynamic' ? 'each layer\'s input quantized per call, integer sums' : 'float compute, weights dequantized';
  $('cards').replaceChildren(
    card('weights', `${fmtBytes(s.floatWeightBytes)} → ${fmtBytes(s.weightBytes)}`, `float → int8 weights (float biases), ${(s.floatWeightBytes / Math.max(1, s.weightBytes)).toFixed(1)}× smaller`, 'weights', s.weightBytes),
    card('ONNX model', fmtBytes(r.onnx.length), `${r.mode}: ${how}; runs in ONNX Runtime`, 'onnx', r.onnx.length),
    card('int8 layers', `${r.quantizedLayers.length} of ${state.info.layers.length}`, 'convolutions and fully connected layers with int8 weights', 'int8-layers', r.quantizedLayers.length),
    card('device', 'no .mq', 'the device runtime computes in int8 with calibrated activations: use static mode for a .mq, its arena and flash', 'device'),
  );
  if (r.report) {
    accuracyRows(modelRows(r.report.model, r.mode));
    layerResults(r.report.layers);
  } else {
    accuracyRows([['samples evaluated', 'none: add data (.npy or images) to measure against the float model', 0, 'samples'], ['mode', r.mode, r.mode, 'mode']]);
    layerResults([]);
  }
  const why = `a ${r.mode} model has float activations and no .mq form: use static mode for the device`;
  for (const id of ['dl-mq', 'dl-h', 'dl-rs']) {
    link(id, null);
    $(id).title = why;
  }
  $('dl-qdq').textContent = `ONNX (${r.mode})`;
  $('dl-qdq').title = '';
  link('dl-qdq', r.onnx, `${r.stem}.${r.mode}.onnx`, 'application/octet-stream');
  link('dl-report', r.reportJson, `${r.stem}.${r.mode}.report.json`, 'application/json');
}

// ---- the tensor panel (ONNX QuantizeLinear) ----

function parseValues(text) {
  const parts = text.split(/[\s,]+/).filter((s) => s.length > 0);
  if (parts.length === 0) throw new Error('enter at least one value');
  return Float32Array.from(parts, (s, i) => {
    const v = Number(s);
    if (Number.isNaN(v) && s.toLowerCase() !== 'nan') throw new Error(`value ${i + 1} ("${s}") is not a number`);
    return v;
  });
}

function showTensor(x, q, dq) {
  const body = $('result').querySelector('tbody');
  body.replaceChildren();
  for (let i = 0; i < x.length; i++) {
    const tr = document.createElement('tr');
    for (const v of [i, x[i], q[i], dq[i], Math.abs(dq[i] - x[i])]) tr.append(cell(String(v)));
    body.append(tr);
  }
  $('result').hidden = false;
}

function quantizeTensor(ev) {
  ev.preventDefault();
  $('tensor-error').hidden = true;
  try {
    const x = parseValues($('values').value);
    const scale = Number($('scale').value);
    const zp = Number($('zero-point').value);
    if (!Number.isInteger(zp)) throw new Error('zero point must be an integer');
    const q = mq.quantizeLinear(x, scale, zp);
    const dq = mq.dequantizeLinear(q, scale, zp);
    showTensor(x, q, dq);
    $('status').textContent = `Quantized ${x.length} values.`;
  } catch (e) {
    $('result').hidden = true;
    $('tensor-error').textContent = `Error: ${e.message}`;
    $('tensor-error').hidden = false;
  }
}

// ---- start ----

let mq;
const guard = (f) => (...a) => Promise.resolve(f(...a)).catch((e) => {
  setStatus('Failed.');
  showError(e.message ?? String(e));
});

try {
  mq = await import('./pkg/index.js');
  $('version').textContent = mq.version();
  $('qform').addEventListener('submit', quantizeTensor);
  $('quantize').disabled = false;
  $('status').textContent = 'Ready.';
  $('options').addEventListener('submit', guard(quantize));
  $('mode').addEventListener('change', showMode);
  $('cancel').addEventListener('click', () => worker.postMessage({ type: 'cancel' }));
  $('use-example').addEventListener('click', guard(useExample));
  $('input-form').addEventListener('submit', guard(loadWithInputs));
  $('model-file').addEventListener('change', guard((e) => takeFiles(e.target.files)));
  $('calib-file').addEventListener('change', guard((e) => takeFiles(e.target.files)));
  $('labels-file').addEventListener('change', guard((e) => takeFiles(e.target.files)));
  $('image-dir').addEventListener('change', guard((e) => takeFiles(e.target.files)));
  const drop = $('drop');
  drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', guard((e) => {
    e.preventDefault();
    drop.classList.remove('over');
    return takeFiles(e.dataTransfer.files);
  }));
  await guard(useExample)();
} catch (e) {
  showError(`Could not load the wasm module: ${e.message}`);
  $('status').textContent = 'Failed.';
}
