// scripts/bench-wasm.sh's measurements, in one Node process, one thread:
//   - inference time per model: microquant (the npm package's wasm) vs onnxruntime-web (wasm
//     backend, SIMD, 1 thread) on the same int8 models: the MLPerf Tiny int8 TFLite models
//     (ours: compiled to .mq; ORT: their QDQ ONNX export by our exporter, toQdqOnnx) and the
//     digits CNN (ours: quantized here; ORT: the same QDQ export, and ONNX Runtime's own
//     quantize_static QDQ model when given);
//   - calibration throughput (samples per second) in wasm;
//   - the .wasm sizes.
// Usage: node bench.mjs PKG_DIR WORK_DIR --export   writes WORK_DIR/<model>.ours.qdq.onnx
//        node bench.mjs PKG_DIR WORK_DIR            measures, writes WORK_DIR/bench.json
// With MQ_BENCH_SMALL_PKG=DIR (the package built for size, MQ_WASM_SIZE=1 wasm/build-npm.sh), its
// inference time is measured too (same .mq, outputs checked identical) and its sizes reported.
// (between the two, ort_python.py checks the QDQ files and adds ONNX Runtime's own QDQ model
// of the digits CNN, WORK_DIR/digits_ort_minmax.qdq.onnx).
import { readFileSync, writeFileSync, statSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import os from 'node:os';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const [pkgDir, work, mode] = process.argv.slice(2);
const exportOnly = mode === '--export';
const mq = await import(path.resolve(pkgDir, 'node.mjs'));
const smallDir = process.env.MQ_BENCH_SMALL_PKG;
const small = smallDir && !exportOnly ? await import(path.resolve(smallDir, 'node.mjs')) : null;
const ort = await import('onnxruntime-web');
ort.env.wasm.numThreads = 1;
ort.env.wasm.simd = true;
ort.env.logLevel = 'error';

// SplitMix64 (tests/src/rng.rs): the same seeded inputs every run.
function splitmix(seed) {
  let s = BigInt.asUintN(64, BigInt(seed));
  return () => {
    s = BigInt.asUintN(64, s + 0x9e3779b97f4a7c15n);
    let z = s;
    z = BigInt.asUintN(64, (z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n);
    z = BigInt.asUintN(64, (z ^ (z >> 27n)) * 0x94d049bb133111ebn);
    return z ^ (z >> 31n);
  };
}

/** Float input whose values are exactly int8 codes of the model input (so both quantize them alike). */
function input(info, seed) {
  const n = info.shape.reduce((a, b) => a * b, 1);
  const r = splitmix(seed);
  const x = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const q = Number(BigInt.asIntN(8, r() & 0xffn));
    x[i] = (q - info.zeroPoint) * info.scale;
  }
  return x;
}

/** Median and best time per call (ms) of `fn` (sync or async): 20 warm-up calls, then at least
 *  `minRuns` calls and `minMs` milliseconds. */
async function timeit(fn, { minRuns = 100, minMs = 1500 } = {}) {
  for (let i = 0; i < 20; i++) await fn();
  const times = [];
  const t0 = performance.now();
  while (times.length < minRuns || performance.now() - t0 < minMs) {
    const a = performance.now();
    await fn();
    times.push(performance.now() - a);
  }
  times.sort((a, b) => a - b);
  return { median: times[Math.floor(times.length / 2)], best: times[0], runs: times.length };
}

/** `fns` timed in alternating rounds (each round: every fn for at least 20 calls and 300 ms),
 *  so that load from other processes falls on all of them alike; per fn, the lowest of its
 *  per-round medians (the least disturbed round) and the median over all calls. */
async function timeAlternating(fns, rounds = 15) {
  for (const fn of fns) for (let i = 0; i < 20; i++) await fn();
  const perRound = fns.map(() => []);
  const all = fns.map(() => []);
  for (let r = 0; r < rounds; r++) {
    for (const [k, fn] of fns.entries()) {
      const times = [];
      const t0 = performance.now();
      while (times.length < 20 || performance.now() - t0 < 300) {
        const a = performance.now();
        await fn();
        times.push(performance.now() - a);
      }
      times.sort((a, b) => a - b);
      perRound[k].push(times[Math.floor(times.length / 2)]);
      all[k].push(...times);
    }
  }
  return fns.map((_, k) => {
    const t = all[k].sort((a, b) => a - b);
    return { median: Math.min(...perRound[k]), medianAll: t[Math.floor(t.length / 2)], best: t[0], runs: t.length };
  });
}

async function ortSession(bytes) {
  return ort.InferenceSession.create(bytes, { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
}

async function ortRun(session, x, shape) {
  const feeds = { [session.inputNames[0]]: new ort.Tensor('float32', x, shape) };
  const out = await session.run(feeds);
  return out[session.outputNames[0]].data;
}

const argmax = (v) => v.reduce((b, x, i) => (x > v[b] ? i : b), 0);

const results = { date: new Date().toISOString().slice(0, 10), node: process.version, cpu: os.cpus()[0]?.model ?? '?',
  cores: os.cpus().length, loadavg_start: os.loadavg()[0],
  ort: ort.env.versions?.web ?? JSON.parse(readFileSync(path.join(here, 'node_modules/onnxruntime-web/package.json'))).version,
  microquant: mq.version(), inference: [], calibration: [], sizes: {} };

async function inference(name, q, qdqBytes, source, extra = {}) {
  const info = q.inputs[0];
  const x = input(info, 1234);
  const session = await ortSession(qdqBytes);
  let smallMs = null;
  let qs = null;
  if (small) {
    qs = small.loadModel(q.toBytes());
    const same = (a, b) => a.length === b.length && a.every((v, i) => v === b[i]);
    for (let s = 0; s < 20; s++) {
      const xi = input(info, 100 + s);
      if (!same(qs.run(xi)[0].data, q.run(xi)[0].data)) throw new Error(`${name}: the size-optimized build gives other outputs`);
    }
  }
  const fns = [() => q.run(x), () => ortRun(session, x, info.shape)];
  if (qs) fns.push(() => qs.run(x));
  const [ours, theirs, smallT] = await timeAlternating(fns);
  if (qs) {
    smallMs = smallT.median;
    qs.free();
  }
  // Sanity: both give the same class on 20 seeded inputs (ORT rounds its own way, so outputs
  // may differ in the last bits).
  let agree = 0;
  for (let s = 0; s < 20; s++) {
    const xi = input(info, 100 + s);
    const a = q.run(xi)[0].dequantize();
    const b = await ortRun(session, xi, info.shape);
    agree += Number(argmax(a) === argmax(b));
  }
  await session.release();
  const row = { model: name, macs: q.macs, qdq: source, ours_ms: ours.median, ours_best_ms: ours.best, ort_ms: theirs.median,
    ort_best_ms: theirs.best, ours_median_all_ms: ours.medianAll, ort_median_all_ms: theirs.medianAll, speedup: theirs.median / ours.median, top1_agreement_of_20: agree, small_ms: smallMs, ...extra };
  results.inference.push(row);
  console.log(`${name}: ours ${ours.median.toFixed(4)} ms${smallMs === null ? '' : ` (size build ${smallMs.toFixed(4)} ms)`}, onnxruntime-web ${theirs.median.toFixed(4)} ms (${row.speedup.toFixed(2)}x), ${agree}/20 same class`);
}

const mlperf = [
  ['kws', 'kws_ref_model_int8.tflite'], ['ic', 'ic_resnet8_int8.tflite'], ['vww', 'vww_96_int8.tflite'], ['ad', 'ad01_int8.tflite'],
];
const digitsBytes = readFileSync(path.join(root, 'web-demo/examples/digits_cnn.onnx'));
const calib = readFileSync(path.join(root, 'web-demo/examples/digits_calib.npy'));
const digits = mq.loadModel(digitsBytes, { name: 'digits_cnn.onnx' });
const dq = await digits.calibrateAndQuantize(new Uint8Array(calib), { chunkMs: 1e9 });
if (exportOnly) {
  for (const [name, file] of mlperf) {
    const q = mq.loadModel(readFileSync(path.join(root, 'models/mlperf-tiny', file)), { name });
    writeFileSync(path.join(work, `${name}.ours.qdq.onnx`), q.toQdqOnnx());
  }
  writeFileSync(path.join(work, 'digits.ours.qdq.onnx'), dq.toQdqOnnx());
  process.exit(0);
}

for (const [name, file] of mlperf) {
  const q = mq.loadModel(readFileSync(path.join(root, 'models/mlperf-tiny', file)), { name });
  try {
    await inference(name, q, readFileSync(path.join(work, `${name}.ours.qdq.onnx`)), 'ours');
  } catch (e) {
    console.log(`${name}: ${e.message}`);
    results.inference.push({ model: name, macs: q.macs, qdq: 'ours', error: e.message.split('\n')[0] });
  }
  q.free();
}

// The digits CNN: quantized here from the float ONNX on its 100 calibration images; ORT runs
// our QDQ export of it and ONNX Runtime's own quantize_static model of the float ONNX.
await inference('digits', dq, readFileSync(path.join(work, 'digits.ours.qdq.onnx')), 'ours');
const ortDigits = path.join(work, 'digits_ort_minmax.qdq.onnx');
try {
  await inference('digits', dq, readFileSync(ortDigits), 'onnxruntime quantize_static');
} catch (e) {
  console.log(`digits (ORT quantize_static): ${e.message.split('\n')[0]}`);
}

// Calibration throughput in wasm (the observers of every activation, the float executor).
async function calibration(name, model, samples, n, observer) {
  const t = await timeit(async () => {
    const cal = model.createCalibration({ observer });
    await cal.calibrate(samples, { chunkMs: 1e9 });
    const passes = cal.passes;
    cal.free();
    return passes;
  }, { minRuns: 3, minMs: 1000 });
  const cal = model.createCalibration({ observer });
  const passes = cal.passes;
  cal.free();
  const row = { model: name, observer, samples: n, passes, ms: t.median, samples_per_s: n / (t.median / 1000) };
  results.calibration.push(row);
  console.log(`calibration ${name} ${observer}: ${row.samples_per_s.toFixed(0)} samples/s (${passes} pass${passes > 1 ? 'es' : ''})`);
}
for (const obs of ['minmax', 'entropy']) await calibration('digits', digits, new Uint8Array(calib), 100, obs);
const kwsFloat = mq.loadModel(readFileSync(path.join(root, 'models/mlperf-tiny/kws_ref_model_float32.tflite')), { name: 'kws' });
const kwsInfo = mq.loadModel(readFileSync(path.join(root, 'models/mlperf-tiny/kws_ref_model_int8.tflite'))).inputs[0];
const kwsSamples = Array.from({ length: 32 }, (_, i) => input(kwsInfo, 500 + i));
for (const obs of ['minmax', 'entropy']) await calibration('kws', kwsFloat, kwsSamples, 32, obs);

// Sizes.
for (const [dir, suffix] of [[pkgDir, ''], [smallDir, '_small']]) {
  if (!dir) continue;
  for (const [key, file] of [['converter', 'web/microquant_bg.wasm'], ['runtime', 'runtime/microquant_runtime_bg.wasm']]) {
    const b = readFileSync(path.join(dir, file));
    results.sizes[key + suffix] = { raw: b.length, gzip: gzipSync(b, { level: 9 }).length };
  }
}
const ortWasm = path.join(here, 'node_modules/onnxruntime-web/dist/ort-wasm-simd-threaded.wasm');
results.sizes.ort = { raw: statSync(ortWasm).size, gzip: gzipSync(readFileSync(ortWasm), { level: 9 }).length };
results.loadavg_end = os.loadavg()[0];
writeFileSync(path.join(work, 'bench.json'), JSON.stringify(results, null, 1));
console.log(JSON.stringify(results.sizes));
