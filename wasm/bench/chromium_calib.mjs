// Calibration of the zoo models (tests/zoo) side by side in one run: ONNX Runtime's Python
// quantize_static, the CLI's `microquant quantize`, and the npm package in headless Chromium with
// one and with two Web Workers (scripts/bench-chromium-calib.sh builds everything and runs this).
//
// Per model, one after the other (never two at once, so they do not compete for the cores):
//   1. wasm/bench/chromium_calib_ort.py: the first 32 rows of calib.npy (tests/zoo/bench_zoo.py's
//      samples) and the wall time of bench_zoo's ort_quantize (QDQ, per-channel, QInt8/QInt8,
//      MinMax; one Python process, ONNX Runtime's default threads as bench_zoo);
//   2. `microquant quantize model --calib calib.npy -o cli.mq` + the options bench_zoo derives from
//      the meta (--input-shape, --input-value, --output-name): wall time of the process;
//   3. the package in Chromium (playwright-core + /usr/bin/chromium, as web-demo/e2e/run.mjs), a
//      page served by web-demo/e2e/serve.mjs: the model and samples are fetched and the workers
//      started and loaded before the clock starts; then, timed with performance.now() in the page:
//      loadModel(bytes, {inputShapes, inputValues, outputNames}) on the main thread,
//      calibrateInWorkers(model, bytes, samples, {workers}) with 1 worker (the calibration runs in
//      one dedicated Web Worker, which loads the model itself from the bytes) and with 2 workers
//      (16 samples each, statistics merged exactly), then model.quantize(calibration) on the main
//      thread (default options: MinMax, per-channel, bias correction; no evaluation report).
//      Both .mq (toBytes()) are hashed (SHA-256) and compared with each other and with the CLI's
//      (the page passes the CLI's producer metadata entry, the only entry that names the front end).
// A model that takes longer than the timeout in one of the steps is recorded as a timeout there.
//
// Usage: node chromium_calib.mjs --pkg DIR --cli PATH --python PATH --zoo DIR --work DIR
//          [--timeout-s 600] [--only NAME ...]
//        node chromium_calib.mjs --report-only --work DIR      (the table again from WORK/chromium_calib.json)
// Writes WORK/chromium_calib.json (raw figures) and WORK/chromium_calib.md (the table).
import { createRequire } from 'node:module';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync, cpSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve } from '../../web-demo/e2e/serve.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../..');
// playwright-core is the web demo's (web-demo/node_modules, `npm ci` there), as for its e2e test.
const { chromium } = createRequire(path.join(repo, 'web-demo', 'package.json'))('playwright-core');

function args() {
  const a = { timeoutS: 600, only: [] };
  const v = process.argv.slice(2);
  for (let i = 0; i < v.length; i++) {
    const k = v[i];
    if (k === '--only') {
      while (i + 1 < v.length && !v[i + 1].startsWith('--')) a.only.push(v[++i]);
    } else if (k === '--timeout-s') a.timeoutS = Number(v[++i]);
    else if (k === '--report-only') a.reportOnly = true;
    else a[k.replace(/^--/, '')] = v[++i];
  }
  for (const k of a.reportOnly ? ['work'] : ['pkg', 'cli', 'python', 'zoo', 'work']) if (!a[k]) throw new Error(`--${k} is required`);
  return a;
}
const opt = args();
const log = (s) => console.error(`[chromium-calib] ${s}`);
const sha256 = (b) => createHash('sha256').update(b).digest('hex');
const version = readFileSync(path.join(repo, 'Cargo.toml'), 'utf8').match(/^version = "(.*)"/m)[1];
const producer = `microquant-cli ${version} quantize`;

// The page: the package's entry, and a worker that reports once the package is loaded in it.
const site = path.join(opt.work, 'site');
if (!opt.reportOnly) {
rmSync(site, { recursive: true, force: true });
mkdirSync(path.join(site, 'data'), { recursive: true });
cpSync(opt.pkg, path.join(site, 'pkg'), { recursive: true });
writeFileSync(path.join(site, 'index.html'), `<!doctype html><meta charset="utf-8"><title>microquant calibration bench</title>
<script type="module">import * as mq from './pkg/index.js'; window.mq = mq; window.mqReady = true;</script>\n`);
writeFileSync(path.join(site, 'bench-worker.js'), `// microquant/worker, and a message once the package is loaded here.
import './pkg/worker.js';
import('./pkg/index.js').then(() => self.postMessage({ benchReady: 1 }));\n`);
}

/** In the page: load, calibrate in `nWorkers` workers, quantize; times in ms and the .mq's hash. */
async function inPage({ modelUrl, calibUrl, loadOptions, nWorkers, producer }) {
  const mq = window.mq;
  const bytes = new Uint8Array(await (await fetch(modelUrl)).arrayBuffer());
  const samples = new Uint8Array(await (await fetch(calibUrl)).arrayBuffer());
  const workers = await Promise.all(Array.from({ length: nWorkers }, () => new Promise((resolve, reject) => {
    const w = new Worker('./bench-worker.js', { type: 'module' });
    const on = (e) => { if (e.data?.benchReady) { w.removeEventListener('message', on); resolve(w); } };
    w.addEventListener('message', on);
    w.addEventListener('error', (e) => reject(new Error(`worker: ${e.message}`)));
  })));
  try {
    const t0 = performance.now();
    const model = mq.loadModel(bytes, loadOptions);
    const t1 = performance.now();
    const cal = await mq.calibrateInWorkers(model, bytes, samples, { workers, loadOptions });
    const t2 = performance.now();
    const q = await model.quantize(cal, { metadata: { producer } });
    const t3 = performance.now();
    const out = q.toBytes();
    const hash = Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', out)), (b) => b.toString(16).padStart(2, '0')).join('');
    q.free?.();
    cal.free?.();
    model.free?.();
    return { load_ms: t1 - t0, calibrate_ms: t2 - t1, quantize_ms: t3 - t2, total_ms: t3 - t0, mq_sha256: hash, mq_bytes: out.length };
  } finally {
    for (const w of workers) w.terminate();
  }
}

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([promise, new Promise((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`${what}: timeout after ${ms / 1000} s`), { timeout: true })), ms);
  })]).finally(() => clearTimeout(timer));
}

const short = (e) => String(e?.message ?? e).replace(/\s+/g, ' ').slice(0, 300);

let server, url, browser, chromiumVersion;
let rows = [];
if (opt.reportOnly) {
  ({ chromium: chromiumVersion, rows } = JSON.parse(readFileSync(path.join(opt.work, 'chromium_calib.json'), 'utf8')));
} else {
  ({ server, url } = await serve(site));
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'],
  });
  chromiumVersion = browser.version();
}

async function chromiumRun(name, fmt, loadOptions, nWorkers) {
  const page = await browser.newPage();
  page.on('pageerror', (e) => log(`${name}: page error: ${e.message}`));
  try {
    await page.goto(url, { waitUntil: 'load' });
    await page.waitForFunction(() => window.mqReady === true, null, { timeout: 120000 });
    return await withTimeout(page.evaluate(inPage, {
      modelUrl: `data/${name}/model.${fmt}`, calibUrl: `data/${name}/calib.npy`, loadOptions, nWorkers, producer,
    }), opt.timeoutS * 1000, `${nWorkers} worker(s)`);
  } catch (e) {
    return e.timeout ? { timeout: true, error: short(e) } : { error: short(e) };
  } finally {
    await page.close().catch(() => {});
  }
}

const names = opt.reportOnly ? [] : readdirSync(opt.zoo).filter((n) => existsSync(path.join(opt.zoo, n, 'meta.json'))).sort()
  .filter((n) => opt.only.length === 0 || opt.only.includes(n));
try {
  for (const name of names) {
    const w = path.join(opt.work, name);
    mkdirSync(w, { recursive: true });
    const row = { model: name, loadavg_1min: os.loadavg()[0] };
    rows.push(row);
    // 1. samples, options, ONNX Runtime
    log(`${name}: ONNX Runtime quantize_static`);
    const py = spawnSync(opt.python, [path.join(here, 'chromium_calib_ort.py'), path.join(opt.zoo, name), w],
      { encoding: 'utf8', timeout: opt.timeoutS * 1000 });
    const line = (py.stdout ?? '').split('\n').find((l) => l.startsWith('CHROMIUM_CALIB '));
    if (!line) {
      row.error = py.error?.code === 'ETIMEDOUT' ? 'ONNX Runtime: timeout' : `host script: ${short(py.stderr.trim().split('\n').slice(-3).join(' / '))}`;
      log(`${name}: ${row.error}`);
      continue;
    }
    Object.assign(row, JSON.parse(line.slice('CHROMIUM_CALIB '.length)));
    if (py.error?.code === 'ETIMEDOUT') row.ort_error = 'timeout';
    // 2. the CLI
    log(`${name}: microquant quantize (CLI)`);
    const model = path.join(opt.zoo, name, `model.${row.format}`);
    const t0 = performance.now();
    const cli = spawnSync(opt.cli, ['quantize', model, '--calib', path.join(w, 'calib.npy'), '-o', path.join(w, 'cli.mq'), ...row.cli_options],
      { encoding: 'utf8', timeout: opt.timeoutS * 1000 });
    const dt = (performance.now() - t0) / 1000;
    if (cli.error?.code === 'ETIMEDOUT') row.cli_error = 'timeout';
    else if (cli.status !== 0) row.cli_error = short(cli.stderr.trim().split('\n').slice(-3).join(' / '));
    else {
      row.cli_time_s = dt;
      row.cli_mq_sha256 = sha256(readFileSync(path.join(w, 'cli.mq')));
    }
    // 3. Chromium, one worker then two
    const data = path.join(site, 'data', name);
    mkdirSync(data, { recursive: true });
    symlinkSync(model, path.join(data, `model.${row.format}`));
    symlinkSync(path.join(w, 'calib.npy'), path.join(data, 'calib.npy'));
    for (const k of [1, 2]) {
      log(`${name}: Chromium, ${k} worker(s)`);
      row[`chromium_${k}w`] = await chromiumRun(name, row.format, row.load_options, k);
    }
    log(`${name}: ${JSON.stringify({ ...row, cli_options: undefined, load_options: undefined })}`);
    writeFileSync(path.join(opt.work, 'chromium_calib.json'), JSON.stringify({ chromium: chromiumVersion, rows }, null, 1));
  }
} finally {
  await browser?.close();
  server?.close();
}

// The table.
const secs = (x) => x.toFixed(x < 10 ? 2 : 1);
const s = (ms) => secs(ms / 1000);
const cell = (r) => (r?.total_ms !== undefined ? s(r.total_ms) : r?.timeout ? 'timeout' : 'error');
const md = ['| model | format | samples | ORT quantize_static (s) | CLI quantize (s) | Chromium 1 worker (s) | Chromium 2 workers (s) '
  + '| 1 worker / ORT | 2 workers / ORT | goal (1w ≤ 2× ORT, 2w < ORT) | .mq 1w = 2w | .mq = CLI |',
'|---|---|---|---|---|---|---|---|---|---|---|---|'];
const notes = [];
for (const r of rows) {
  if (r.error) {
    md.push(`| ${r.model} | – | – | error | – | – | – | – | – | – | – | – |`);
    notes.push(`- **${r.model}**: \`${r.error}\``);
    continue;
  }
  const c1 = r.chromium_1w, c2 = r.chromium_2w;
  const ort = r.ort_time_s;
  const r1 = ort && c1?.total_ms !== undefined ? c1.total_ms / 1000 / ort : null;
  const r2 = ort && c2?.total_ms !== undefined ? c2.total_ms / 1000 / ort : null;
  const goal = r1 === null || r2 === null ? '–' : r1 <= 2 && r2 < 1 ? 'met' : `not met${r1 > 2 ? ' (1w)' : ''}${r2 >= 1 ? ' (2w)' : ''}`;
  const same12 = c1?.mq_sha256 && c2?.mq_sha256 ? (c1.mq_sha256 === c2.mq_sha256 ? 'yes' : 'no') : '–';
  const sameCli = r.cli_mq_sha256 && (c1?.mq_sha256 || c2?.mq_sha256)
    ? [c1, c2].map((c) => (c?.mq_sha256 ? (c.mq_sha256 === r.cli_mq_sha256 ? 'yes' : 'no') : '–')).join(' / ') : '–';
  const ortCell = r.ort_error ? 'error' : `${secs(ort)}${r.ort_on ? ` (${r.ort_on})` : ''}`;
  md.push(`| ${r.model} | ${r.format} | ${r.samples} | ${ortCell} | ${r.cli_error ? (r.cli_error === 'timeout' ? 'timeout' : 'error') : secs(r.cli_time_s)} `
    + `| ${cell(c1)} | ${cell(c2)} | ${r1 === null ? '–' : r1.toFixed(2)} | ${r2 === null ? '–' : r2.toFixed(2)} | ${goal} | ${same12} | ${sameCli} |`);
  for (const [k, what] of [['ort_error', 'ONNX Runtime quantize_static'], ['cli_error', 'CLI']]) {
    if (r[k]) notes.push(`- **${r.model}**, ${what}: \`${r[k]}\``);
  }
  for (const [c, what] of [[c1, 'Chromium, 1 worker'], [c2, 'Chromium, 2 workers']]) {
    if (c?.error) notes.push(`- **${r.model}**, ${what}: \`${c.error}\``);
  }
}
const split = rows.filter((r) => r.chromium_1w?.total_ms !== undefined).map((r) => {
  const f = (c) => (c?.total_ms !== undefined ? `${s(c.load_ms)} + ${s(c.calibrate_ms)} + ${s(c.quantize_ms)}` : '–');
  return `| ${r.model} | ${f(r.chromium_1w)} | ${f(r.chromium_2w)} | ${r.loadavg_1min.toFixed(1)} |`;
});
let text = md.join('\n');
if (notes.length) text += '\n\nErrors and timeouts, as reported:\n\n' + notes.join('\n');
if (split.length) {
  text += '\n\nWhere the Chromium time goes (s): load + calibrate + quantize, and the machine\'s 1-minute load average when the model started (2 cores)\n\n| model | 1 worker | 2 workers | load average |\n|---|---|---|---|\n' + split.join('\n');
}
const timed = rows.filter((r) => r.ort_time_s);
const t = (r, k) => r[`chromium_${k}w`]?.total_ms / 1000;
const one = timed.filter((r) => t(r, 1) <= 2 * r.ort_time_s).length;
const two = timed.filter((r) => t(r, 2) < r.ort_time_s).length;
const both = timed.filter((r) => t(r, 1) <= 2 * r.ort_time_s && t(r, 2) < r.ort_time_s).length;
const same = rows.filter((r) => r.cli_mq_sha256 && [1, 2].every((k) => r[`chromium_${k}w`]?.mq_sha256 === r.cli_mq_sha256)).length;
text += `\n\nOf the ${timed.length} models ONNX Runtime quantized (of ${rows.length}): Chromium with 1 worker within 2× of ONNX Runtime on ${one}, `
  + `with 2 workers faster than ONNX Runtime on ${two}, both (the goal) on ${both}. The .mq of both Chromium runs equals the CLI's `
  + `on ${same}/${rows.length} models. Chromium ${chromiumVersion}.`;
writeFileSync(path.join(opt.work, 'chromium_calib.md'), text + '\n');
writeFileSync(path.join(opt.work, 'chromium_calib.json'), JSON.stringify({ chromium: chromiumVersion, rows }, null, 1));
console.log(text);
