// End-to-end test of the demo page in real headless Chromium (playwright-core + /usr/bin/chromium).
//
// 1. The bundled example, quantized offline (no request leaves the page while it runs): the
//    numbers shown (accuracy table, sizes, per-layer SQNR, scales, zero points) equal the CLI's
//    report for the same model, samples and options (`microquant quantize`, committed by
//    wasm/tests/data/gen_cli_expected.sh), and the downloaded .mq, QDQ ONNX and report are
//    byte-identical to the CLI's. Then again with the entropy observer and per-tensor weights, with
//    4-bit weights and AdaRound,
//    two layers in 16x8 chosen in the per-layer table, and with a QDQ ONNX model dropped on the page
//    (its scales kept).
// 2. The user's own files: a float TFLite model (MLPerf Tiny KWS) with a generated .npy; the page
//    stays responsive while the worker calibrates, and Cancel stops it. A folder of PNG images
//    resized to the model input is quantized too. Weight-only and dynamic modes on the example:
//    the page's numbers equal the CLI's report, the ONNX download is the CLI's file.
//    An ONNX model with dynamic axes: the page asks for the extents (prefilled with the
//    model's dim_param names and defaults), loads and quantizes it; a bool input's value.
// 3. Bad input: a corrupted model, an unsupported op, calibration data of the wrong shape, an
//    unknown file: each shows a readable message on the page.
// 4. The tensor panel: the golden ONNX QuantizeLinear cases (onnx's reference evaluator).
// Screenshots go to e2e/screenshots/; with MQ_SCREENSHOT_DOCS=1 the example's is copied to
// docs/screenshot.png.
import { chromium } from 'playwright-core';
import { readFile, mkdir, mkdtemp, writeFile, copyFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve } from './serve.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const demo = path.resolve(here, '..');
const repo = path.resolve(demo, '..');
const data = path.join(repo, 'wasm/tests/data');
const golden = JSON.parse(await readFile(path.join(repo, 'tests/golden/smoke/quantize_linear.json'), 'utf8'));
const producer = (await readFile(path.join(data, 'cli_producer.txt'), 'utf8')).trim();
const shots = path.join(demo, 'e2e', 'screenshots');
await mkdir(shots, { recursive: true });
const tmp = await mkdtemp(path.join(os.tmpdir(), 'mq-e2e-'));

let failures = 0, checked = 0;
const fail = (msg) => { failures++; console.error('FAIL', msg); };
const expect = (ok, msg) => { checked++; if (!ok) fail(msg); };
const sameBytes = (a, b) => a.length === b.length && a.every((v, i) => v === b[i]);

/** An .npy file (float32, C order) for `shape` and `values`. */
function npy(shape, values) {
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
  while ((10 + header.length + 1) % 64 !== 0) header += ' ';
  header += '\n';
  const out = Buffer.alloc(10 + header.length + values.length * 4);
  Buffer.from('\x93NUMPY', 'latin1').copy(out, 0);
  out[6] = 1;
  out[7] = 0;
  out.writeUInt16LE(header.length, 8);
  out.write(header, 10, 'latin1');
  Buffer.from(values.buffer, values.byteOffset, values.byteLength).copy(out, 10 + header.length);
  return out;
}

/** The number a result cell holds (`data-value`), or null. */
const valueOf = (s) => (s === 'null' ? null : Number(s));

/** A download through the browser (the click, the download event, the saved file). */
async function browserDownload(page, selector) {
  const [dl] = await Promise.all([page.waitForEvent('download', { timeout: 120000 }), page.click(selector)]);
  return new Uint8Array(await readFile(await dl.path()));
}

let browserDownloads = 0;

/** What a download link holds. The first few go through the browser's download path; later ones
 *  read the link's blob in the page: Chromium stops delivering automatic downloads after about ten
 *  from one page in quick succession (seen here: the 11th never arrives), which is not what the
 *  test is about. */
async function download(page, selector) {
  if (browserDownloads < 6) {
    browserDownloads += 1;
    return browserDownload(page, selector);
  }
  const bytes = await page.$eval(selector, async (a) => {
    if (!a.getAttribute('href') || !a.download) throw new Error(`${a.id}: nothing to download`);
    const r = await fetch(a.href);
    return Array.from(new Uint8Array(await r.arrayBuffer()));
  });
  return new Uint8Array(bytes);
}

async function quantizeAndWait(page) {
  await page.click('#quantize-model');
  await page.waitForFunction(() => /Quantized in|Failed|Cancelled/.test(document.getElementById('model-status').textContent),
    null, { timeout: 120000 });
  return page.textContent('#model-status');
}

/** Compares what the page shows with the CLI's report and downloads the CLI's files. */
async function checkAgainstCli(page, name, stem = 'digits_cnn') {
  const report = JSON.parse(await readFile(path.join(data, `${name}.report.json`), 'utf8'));
  const m = report.model;
  await checkReport(page, name, report);
  const cards = Object.fromEntries(await page.$$eval('#cards .card', (cs) => cs.map((c) => [c.dataset.key, c.dataset.value])));
  expect(Number(cards.model) === m.model_bytes, `${name}: .mq size ${cards.model}, the CLI's ${m.model_bytes}`);
  expect(Number(cards.arena) === m.arena_bytes, `${name}: arena ${cards.arena}, the CLI's ${m.arena_bytes}`);
  expect(Number(cards.weights) === m.int8_weight_bytes, `${name}: int8 weights ${cards.weights}, the CLI's ${m.int8_weight_bytes}`);
  const mq = await download(page, '#dl-mq');
  expect(sameBytes(mq, new Uint8Array(await readFile(path.join(data, `${name}.mq`)))), `${name}: the downloaded .mq differs from the CLI's`);
  const qdq = await download(page, '#dl-qdq');
  expect(sameBytes(qdq, new Uint8Array(await readFile(path.join(data, `${name}.qdq.onnx`)))), `${name}: the downloaded QDQ ONNX differs from the CLI's`);
  const json = Buffer.from(await download(page, '#dl-report')).toString('utf8');
  expect(json === await readFile(path.join(data, `${name}.report.json`), 'utf8'), `${name}: the downloaded report differs from the CLI's`);
  const header = Buffer.from(await download(page, '#dl-h')).toString('utf8');
  const id = stem.replace(/[^A-Za-z0-9]/g, '_').toUpperCase();
  expect(header.includes(`#define ${id}_MQ_LEN ${m.model_bytes}u`), `${name}: the C header`);
  console.log(`${name}: page numbers, .mq, QDQ ONNX and report equal the CLI's`);
}

/** Weight-only or dynamic (`mode`) on the bundled example: the page's numbers equal the CLI's
 *  report, the ONNX download is the CLI's file (`golden`, checked against ONNX Runtime), and the
 *  .mq downloads are disabled with the reason. */
async function checkHybridAgainstCli(page, mode, name, golden) {
  const report = JSON.parse(await readFile(path.join(data, `${name}.report.json`), 'utf8'));
  await checkReport(page, name, report);
  const cards = Object.fromEntries(await page.$$eval('#cards .card', (cs) => cs.map((c) => [c.dataset.key, c.dataset.value])));
  expect(Number(cards.weights) === report.model.int8_weight_bytes, `${name}: int8 weights ${cards.weights}, the CLI's ${report.model.int8_weight_bytes}`);
  const onnx = await download(page, '#dl-qdq');
  const cli = new Uint8Array(await readFile(path.join(repo, 'tests/golden/hybrid', golden)));
  expect(sameBytes(onnx, cli), `${name}: the downloaded ONNX differs from the CLI's (tests/golden/hybrid/${golden})`);
  expect(Number(cards.onnx) === cli.length, `${name}: ONNX size card ${cards.onnx}, the file has ${cli.length} bytes`);
  const json = Buffer.from(await download(page, '#dl-report')).toString('utf8');
  expect(json === await readFile(path.join(data, `${name}.report.json`), 'utf8'), `${name}: the downloaded report differs from the CLI's`);
  for (const id of ['dl-mq', 'dl-h', 'dl-rs']) {
    const [disabled, title] = await page.$eval(`#${id}`, (a) => [a.getAttribute('aria-disabled'), a.title]);
    expect(disabled === 'true' && title.includes(`a ${mode} model has float activations and no .mq`), `${name}: #${id} is not disabled with the reason ("${title}")`);
  }
  for (const id of ['observer', 'activations', 'rounding']) expect(await page.isDisabled(`#${id}`), `${name}: #${id} (static only) is enabled`);
  console.log(`${name}: page numbers, ONNX model and report equal the CLI's`);
}

/** The accuracy table, the layer table and the chart against the CLI's report. */
async function checkReport(page, name, report) {
  const m = report.model;
  const acc = Object.fromEntries(await page.$$eval('#accuracy tbody tr', (rows) =>
    rows.map((r) => [r.dataset.key, [r.children[1].dataset.value, r.children[1].textContent]])));
  const pct = (v) => `${(v * 100).toFixed(2)} %`;
  for (const [key, cli, text] of [
    ['samples', m.samples, String(m.samples)],
    ['top1', m.top1_agreement, pct(m.top1_agreement)],
    ['float-accuracy', m.float_accuracy, pct(m.float_accuracy)],
    ['int8-accuracy', m.int8_accuracy, pct(m.int8_accuracy)],
    ['output-sqnr', m.output_sqnr_db, `${m.output_sqnr_db.toFixed(2)} dB`],
  ]) {
    expect(valueOf(acc[key][0]) === cli, `${name}: ${key} is ${acc[key][0]}, the CLI's ${cli}`);
    expect(acc[key][1] === text, `${name}: ${key} shows "${acc[key][1]}", expected "${text}"`);
  }
  expect(acc.mode?.[0] === m.mode, `${name}: mode "${acc.mode?.[0]}", the CLI's "${m.mode}"`);
  const choice = m.range_choice?.chosen;
  expect(acc['range-choice']?.[0] === choice, `${name}: range choice "${acc['range-choice']?.[0]}", the CLI's "${choice}"`);
  const layers = await page.$$eval('#layers tbody tr', (rows) => rows.map((r) => [...r.children].map((c) => [c.dataset.value, c.textContent])));
  expect(layers.length === report.layers.length, `${name}: ${layers.length} layers shown, the CLI has ${report.layers.length}`);
  report.layers.forEach((l, i) => {
    const row = layers[i] ?? [];
    expect(row[1]?.[1] === l.name, `${name} layer ${i}: name "${row[1]?.[1]}", the CLI's "${l.name}"`);
    expect(valueOf(row[4]?.[0]) === (l.scale === null ? null : Math.fround(l.scale)), `${name} layer ${i}: scale ${row[4]?.[0]}, the CLI's ${l.scale}`);
    expect(valueOf(row[5]?.[0]) === l.zero_point, `${name} layer ${i}: zero point ${row[5]?.[0]}, the CLI's ${l.zero_point}`);
    expect(valueOf(row[8]?.[0]) === l.sqnr_db, `${name} layer ${i}: SQNR ${row[8]?.[0]}, the CLI's ${l.sqnr_db}`);
    expect(row[8]?.[1] === (l.sqnr_db === null ? '∞' : l.sqnr_db.toFixed(2)), `${name} layer ${i}: SQNR shows "${row[8]?.[1]}"`);
  });
  const bars = await page.$$eval('#chart rect.bar', (r) => r.length);
  expect(bars === report.layers.length, `${name}: ${bars} bars in the SQNR chart`);
}

const { server, url } = await serve(demo);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
    '--disable-sync', '--no-first-run'],
});
try {
  const context = await browser.newContext({ viewport: { width: 1200, height: 900 }, acceptDownloads: true });
  const page = await context.newPage();
  page.on('pageerror', (e) => fail(`page error: ${e.message}`));
  page.on('worker', (w) => w.on('console', (m) => m.type() === 'error' && fail(`worker console error: ${m.text()}`)));
  await page.goto(url);
  await page.waitForFunction(() => !document.getElementById('quantize-model').disabled, null, { timeout: 60000 });

  // 1. The bundled example, offline: nothing is requested while it runs.
  const requests = [];
  page.on('request', (r) => requests.push(r.url()));
  await context.setOffline(true);
  await page.click('#metadata summary');
  await page.fill('#producer', producer);
  await page.click('#metadata summary');
  let status = await quantizeAndWait(page);
  expect(/Quantized in/.test(status), `example: status "${status}"`);
  await checkAgainstCli(page, 'digits_default');
  await page.screenshot({ path: path.join(shots, 'example.png'), fullPage: true });
  await page.selectOption('#observer', 'entropy');
  await page.selectOption('#per-channel', 'false');
  status = await quantizeAndWait(page);
  expect(/Quantized in/.test(status), `entropy: status "${status}"`);
  await checkAgainstCli(page, 'digits_entropy_per_tensor');
  // 16x8 layers chosen in the per-layer table, with the histogram observer (the CLI's --int16).
  await page.selectOption('#observer', 'histogram');
  await page.selectOption('#per-channel', 'true');
  await page.click('#per-layer summary');
  for (const l of ['/pw/Conv', '/fc1/Gemm']) await page.check(`#layer-options input[data-layer="${l}"]`);
  status = await quantizeAndWait(page);
  expect(/Quantized in/.test(status), `int16 layers: status "${status}"`);
  await checkAgainstCli(page, 'digits_int16_layers');
  for (const l of ['/pw/Conv', '/fc1/Gemm']) await page.uncheck(`#layer-options input[data-layer="${l}"]`);
  await page.click('#per-layer summary');
  // 4-bit weights rounded by AdaRound (the CLI's --weight-bits 4 --adaround): its progress is
  // shown while it optimizes, and the result is the CLI's.
  await page.selectOption('#observer', 'auto');
  await page.selectOption('#weight-bits', '4');
  await page.check('#adaround');
  await page.click('#quantize-model');
  await page.waitForFunction(() => /AdaRound: /.test(document.getElementById('model-status').textContent), null, { timeout: 120000 });
  await page.waitForFunction(() => /Quantized in|Failed|Cancelled/.test(document.getElementById('model-status').textContent),
    null, { timeout: 120000 });
  status = await page.textContent('#model-status');
  expect(/Quantized in/.test(status), `W4 AdaRound: status "${status}"`);
  await checkAgainstCli(page, 'digits_w4_adaround');
  await page.selectOption('#weight-bits', '8');
  await page.uncheck('#adaround');
  // A QDQ ONNX model (the CLI's portable export of the first case, --qdq-portable) dropped with
  // the example's data: its scales are kept, and the result is the CLI's for the same file.
  await page.selectOption('#observer', 'auto');
  await page.setInputFiles('#model-file', path.join(data, 'portable', 'digits_default.qdq.onnx'));
  await page.waitForFunction(() => /QDQ: its scales are kept/.test(document.getElementById('model-info').textContent), null, { timeout: 30000 });
  await page.setInputFiles('#calib-file', path.join(demo, 'examples/digits_calib.npy'));
  await page.setInputFiles('#labels-file', path.join(demo, 'examples/digits_labels.npy'));
  status = await quantizeAndWait(page);
  expect(/Quantized in/.test(status), `QDQ input: status "${status}"`);
  await checkAgainstCli(page, 'digits_qdq_input', 'digits_default.qdq');
  const outside = requests.filter((u) => !u.startsWith('blob:'));
  expect(outside.length === 0, `requests while quantizing offline: ${outside.join(', ')}`);
  await context.setOffline(false);
  await page.selectOption('#observer', 'auto');
  await page.selectOption('#per-channel', 'true');

  // 2. The user's files: KWS (float TFLite) with 300 generated samples; cancel mid-way.
  await page.setInputFiles('#model-file', path.join(repo, 'models/mlperf-tiny/kws_ref_model_float32.tflite'));
  await page.waitForFunction(() => /kws_ref_model_float32\.tflite \(TFLITE\)/.test(document.getElementById('model-info').textContent), null, { timeout: 30000 });
  const n = 300, per = 49 * 10;
  const x = new Float32Array(n * per);
  let s = 12345;
  for (let i = 0; i < x.length; i++) { s = (s * 1103515245 + 12345) >>> 0; x[i] = ((s >>> 8) / (1 << 24)) * 100 - 50; }
  await page.setInputFiles('#calib-file', { name: 'kws_calib.npy', mimeType: 'application/octet-stream', buffer: npy([n, 1, 49, 10, 1], x) });
  await page.waitForFunction(() => /Ready/.test(document.getElementById('model-status').textContent), null, { timeout: 30000 });
  await page.selectOption('#observer', 'histogram');
  await page.click('#quantize-model');
  await page.waitForFunction(() => document.getElementById('progress').value > 0.05, null, { timeout: 60000 });
  const p1 = await page.$eval('#progress', (p) => p.value);
  // The main thread answers while the worker calibrates (the page stays responsive).
  const t0 = Date.now();
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
  const frameMs = Date.now() - t0;
  expect(frameMs < 1000, `the page froze for ${frameMs} ms during calibration`);
  await page.waitForFunction((v) => document.getElementById('progress').value > v, p1, { timeout: 60000 });
  await page.screenshot({ path: path.join(shots, 'progress.png') });
  await page.click('#cancel');
  await page.waitForFunction(() => /Cancelled/.test(document.getElementById('model-status').textContent), null, { timeout: 30000 });
  expect(await page.isHidden('#error'), 'cancelling is not an error');
  expect(!(await page.isDisabled('#quantize-model')), 'Quantize is enabled again after Cancel');
  console.log(`kws: progress reached ${(p1 * 100).toFixed(0)} % and more, a frame took ${frameMs} ms, Cancel stopped the job`);

  // A folder of images resized to the model input (the digits model: [1, 1, 8, 8]).
  await page.click('#use-example');
  await page.waitForFunction(() => /bundled example is loaded/.test(document.getElementById('model-status').textContent), null, { timeout: 30000 });
  const pngs = await page.evaluate(async () => {
    const out = [];
    for (let k = 0; k < 6; k++) {
      const c = new OffscreenCanvas(32, 32);
      const g = c.getContext('2d');
      g.fillStyle = '#000';
      g.fillRect(0, 0, 32, 32);
      g.fillStyle = '#fff';
      g.fillRect(6 + k, 4, 8 + 2 * k, 24);
      const b = await c.convertToBlob({ type: 'image/png' });
      out.push([...new Uint8Array(await b.arrayBuffer())]);
    }
    return out;
  });
  const dir = path.join(tmp, 'images');
  await mkdir(dir);
  for (const [k, bytes] of pngs.entries()) await writeFile(path.join(dir, `digit${k}.png`), Buffer.from(bytes));
  await page.setInputFiles('#image-dir', dir);
  await page.waitForFunction(() => /Ready/.test(document.getElementById('model-status').textContent), null, { timeout: 30000 });
  status = await quantizeAndWait(page);
  expect(/Quantized in/.test(status), `images: status "${status}"`);
  const samples = await page.$eval('#accuracy tr[data-key=samples] td:nth-child(2)', (c) => c.dataset.value);
  expect(samples === '6', `images: ${samples} samples evaluated, want 6`);
  const noLabels = await page.$eval('#accuracy tr[data-key=int8-accuracy] td:nth-child(2)', (c) => c.textContent);
  expect(noLabels === 'no labels', `images: int8 accuracy shows "${noLabels}"`);

  // Weight-only and dynamic on the bundled example (int8 weights, float activations: an ONNX
  // model, no .mq), then weight-only without data (no report, the model still downloads).
  await page.click('#use-example');
  await page.waitForFunction(() => /bundled example is loaded/.test(document.getElementById('model-status').textContent), null, { timeout: 30000 });
  const hybridFrom = requests.length;
  await context.setOffline(true);
  for (const [mode, name, file] of [['weight-only', 'digits_weight_only', 'digits.onnx'], ['dynamic', 'digits_dynamic', 'dynamic_digits.onnx']]) {
    await page.selectOption('#mode', mode);
    const note = await page.textContent('#mode-note');
    expect(note.includes('no .mq'), `${mode}: the mode note says "${note}"`);
    status = await quantizeAndWait(page);
    expect(/Quantized in/.test(status), `${mode}: status "${status}"`);
    await checkHybridAgainstCli(page, mode, name, file);
    if (mode === 'weight-only') await page.screenshot({ path: path.join(shots, 'weight-only.png'), fullPage: true });
  }
  const hybridOutside = requests.slice(hybridFrom).filter((u) => !u.startsWith('blob:'));
  expect(hybridOutside.length === 0, `requests while quantizing weight-only and dynamic offline: ${hybridOutside.join(', ')}`);
  await context.setOffline(false);
  await page.selectOption('#mode', 'weight-only');
  await page.setInputFiles('#model-file', path.join(demo, 'examples/digits_cnn.onnx'));
  await page.waitForFunction(() => /Add calibration data/.test(document.getElementById('model-status').textContent), null, { timeout: 30000 });
  status = await quantizeAndWait(page);
  expect(/Quantized in/.test(status), `weight-only without data: status "${status}"`);
  const noData = await page.$eval('#accuracy tr[data-key=samples] td:nth-child(2)', (c) => c.textContent);
  expect(/none: add data/.test(noData), `weight-only without data: samples row shows "${noData}"`);
  const wo = await download(page, '#dl-qdq');
  expect(sameBytes(wo, new Uint8Array(await readFile(path.join(repo, 'tests/golden/hybrid/digits.onnx')))), 'weight-only without data: the ONNX differs from the CLI\'s');
  await page.selectOption('#mode', 'static');
  expect(await page.isDisabled('#quantize-model'), 'static mode without calibration data: Quantize is enabled');
  expect(!(await page.isDisabled('#observer')), 'static mode: the observer select is disabled');

  const errorAfter = async (action, pattern, what) => {
    await action();
    await page.waitForSelector('#error:not([hidden])', { timeout: 30000 });
    const text = await page.textContent('#error');
    expect(pattern.test(text), `${what}: the page shows "${text}"`);
    return text;
  };

  // 2b. An ONNX model with dynamic axes (dim_params batch, height, width): the page asks for the
  //     extents, prefilled with the model's names and defaults, then loads and quantizes it; a
  //     bool input is asked for its value.
  const shapesDir = path.join(repo, 'tests/golden/onnx/shapes');
  await page.setInputFiles('#model-file', path.join(shapesDir, 'dyn_conv_opset13.onnx'));
  await page.waitForSelector('#input-form:not([hidden])', { timeout: 30000 });
  const asked = await page.$$eval('#input-fields input', (es) => es.map((e) => [e.dataset.dim ?? '', e.value, e.disabled]));
  expect(JSON.stringify(asked) === JSON.stringify([['batch', '1', false], ['', '3', true], ['height', '224', false], ['width', '224', false]]),
    `dynamic axes: the form asks ${JSON.stringify(asked)}`);
  const labels = await page.textContent('#input-fields');
  expect(/height/.test(labels) && /width/.test(labels) && /x \(float32/.test(labels), `dynamic axes: the form shows "${labels}"`);
  await page.screenshot({ path: path.join(shots, 'input-shapes.png'), fullPage: false });
  await page.fill('#input-fields input[data-dim=height]', '0');
  await errorAfter(() => page.click('#load-with-inputs'), /input 'x': height must be a positive integer/, 'extent 0');
  await page.fill('#input-fields input[data-dim=height]', '12');
  await page.fill('#input-fields input[data-dim=width]', '10');
  await page.click('#load-with-inputs');
  await page.waitForFunction(() => /dyn_conv_opset13\.onnx loaded/.test(document.getElementById('model-status').textContent), null, { timeout: 30000 });
  const info = await page.textContent('#model-info');
  expect(/x \[1, 3, 12, 10\]/.test(info) && /y \[1, 5\]/.test(info), `dynamic axes: the loaded model shows "${info}"`);
  expect(await page.isHidden('#input-form'), 'dynamic axes: the form stays after loading');
  const dynSamples = 8 * 3 * 12 * 10;
  await page.setInputFiles('#calib-file', { name: 'dyn_calib.npy', mimeType: 'application/octet-stream',
    buffer: npy([8, 3, 12, 10], Float32Array.from({ length: dynSamples }, (_, i) => Math.sin(i * 0.37) * 2)) });
  await page.waitForFunction(() => /Ready/.test(document.getElementById('model-status').textContent), null, { timeout: 30000 });
  status = await quantizeAndWait(page);
  expect(/Quantized in/.test(status), `dynamic axes: status "${status}"`);
  const dynSqnr = valueOf(await page.$eval('#accuracy tr[data-key=output-sqnr] td:nth-child(2)', (c) => c.dataset.value));
  expect(dynSqnr !== null && dynSqnr > 30, `dynamic axes: output SQNR ${dynSqnr} dB`);
  await page.setInputFiles('#model-file', path.join(shapesDir, 'if_flag.onnx'));
  await page.waitForSelector('#input-form:not([hidden])', { timeout: 30000 });
  const flag = await page.$eval('#input-fields input[data-value=flag]', (e) => e.value);
  expect(flag === '1', `bool input: prefilled "${flag}"`);
  await page.click('#load-with-inputs');
  await page.waitForFunction(() => /if_flag\.onnx loaded/.test(document.getElementById('model-status').textContent), null, { timeout: 30000 });
  const flagInfo = await page.textContent('#model-info');
  expect(/x \[1, 6\]/.test(flagInfo) && !/flag \[/.test(flagInfo), `bool input fixed: the model shows "${flagInfo}"`);
  console.log(`dynamic axes: asked ${JSON.stringify(asked)}, loaded [1, 3, 12, 10], quantized (SQNR ${dynSqnr?.toFixed(1)} dB)`);

  // 3. Bad input: readable messages on the page.
  const digits = await readFile(path.join(demo, 'examples/digits_cnn.onnx'));
  const corrupt = Buffer.from(digits.subarray(0, 2000));
  const shown = await errorAfter(() => page.setInputFiles('#model-file', { name: 'corrupted.onnx', mimeType: 'application/octet-stream', buffer: corrupt }),
    /reading the ONNX model: truncated model: not a valid ONNX protobuf \(2000 bytes\)/, 'corrupted model');
  await page.locator('#error').scrollIntoViewIfNeeded();
  await page.screenshot({ path: path.join(shots, 'error.png'), fullPage: false });
  console.log(`corrupted model: "${shown.slice(0, 120)}…"`);
  await errorAfter(() => page.setInputFiles('#model-file', path.join(repo, 'tests/golden/onnx/errors/unsupported_op.onnx')),
    /ONNX op "Hardmax".*operator 1 Hardmax "my_hardmax"/, 'unsupported op');
  await page.click('#use-example');
  await page.waitForFunction(() => /bundled example is loaded/.test(document.getElementById('model-status').textContent), null, { timeout: 30000 });
  await errorAfter(() => page.setInputFiles('#calib-file', { name: 'wrong.npy', mimeType: 'application/octet-stream', buffer: npy([4, 63], new Float32Array(4 * 63)) }),
    /wrong\.npy: shape \[4, 63\] does not fit input 'x' \[1, 1, 8, 8\]: expected \[N, 1, 8, 8\] \(64 values per sample\)/, 'wrong shape');
  await errorAfter(() => page.setInputFiles('#calib-file', { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('hello') }),
    /notes\.txt: not a model/, 'unknown file');

  // 4. The tensor panel: the golden ONNX QuantizeLinear cases.
  for (const c of golden.cases) {
    await page.fill('#values', c.x.map((v) => String(v)).join(' '));
    await page.fill('#scale', String(c.scale));
    await page.fill('#zero-point', String(c.zero_point));
    await page.click('#quantize');
    await page.waitForSelector('#result:not([hidden])');
    const rows = await page.$$eval('#result tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
    if (rows.length !== c.x.length) { fail(`${c.name}: ${rows.length} rows shown, want ${c.x.length}`); continue; }
    rows.forEach((r, i) => {
      // Cells show JS numbers (the f32 widened to f64), exactly what the golden file holds.
      expect(Number(r[2]) === c.q[i], `${c.name}[${i}]: q shown ${r[2]}, want ${c.q[i]}`);
      expect(Number(r[3]) === c.dq[i], `${c.name}[${i}]: dequantized shown ${r[3]}, want ${c.dq[i]}`);
    });
  }
  await page.fill('#scale', '0');
  await page.click('#quantize');
  const err = await page.textContent('#tensor-error');
  expect((await page.isVisible('#tensor-error')) && /scale/.test(err), `zero scale: error shown was "${err}"`);
  await page.fill('#scale', '0.1');
  await page.fill('#values', '1 two 3');
  await page.click('#quantize');
  const err2 = await page.textContent('#tensor-error');
  expect(/value 2/.test(err2), `non-number: error shown was "${err2}"`);
  await page.screenshot({ path: path.join(shots, 'tensor.png'), fullPage: false });
  if (process.env.MQ_SCREENSHOT_DOCS === '1') await copyFile(path.join(shots, 'example.png'), path.join(repo, 'docs/screenshot.png'));
  console.log(`web-demo e2e: Chromium ${browser.version()}, ${checked} checks (CLI equality, downloads, cancel, images, errors, ${golden.cases.length} ONNX tensor cases), ${failures} failures`);
} finally {
  await browser.close();
  server.close();
  await rm(tmp, { recursive: true, force: true });
}
if (checked === 0) failures++;
process.exit(failures === 0 ? 0 : 1);
