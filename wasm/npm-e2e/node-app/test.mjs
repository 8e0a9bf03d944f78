// A Node 20 ES-module app using the installed `microquant` tarball.
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { Worker } from 'node:worker_threads';
import os from 'node:os';
import path from 'node:path';
import { loadModel, parseNpy, QTensor, FloatModel, QuantizedModel, HybridModel, calibrateInWorkers, version, hasConverter } from 'microquant';
import * as runtime from 'microquant/runtime';

const root = process.env.MQ_ROOT;
const ex = (f) => readFileSync(path.join(root, 'web-demo/examples', f));
const expected = readFileSync(path.join(root, 'wasm/tests/data/digits_default.mq'));
const producer = readFileSync(path.join(root, 'wasm/tests/data/cli_producer.txt'), 'utf8').trim();
let failures = 0;
const check = (ok, what) => { if (!ok) { failures++; console.error('FAIL', what); } else console.log('ok  ', what); };
const same = (a, b) => a.length === b.length && a.every((v, i) => v === b[i]);

check(hasConverter() && version() === JSON.parse(readFileSync(new URL(import.meta.resolve('microquant/package.json')))).version, `microquant ${version()} with the converter`);
const modelBytes = ex('digits_cnn.onnx');
const model = loadModel(modelBytes, { name: 'digits_cnn.onnx' });
check(model instanceof FloatModel, 'loadModel gives a FloatModel for a float ONNX');
const calib = new Uint8Array(ex('digits_calib.npy'));
const labels = Array.from(parseNpy(ex('digits_labels.npy')).data);
let progress = 0;
const q = await model.calibrateAndQuantize(calib, { labels, metadata: { producer }, onProgress: () => progress++ });
check(q instanceof QuantizedModel && progress > 0, `calibrateAndQuantize with progress (${progress} reports)`);
check(same(q.toBytes(), expected), 'the .mq is byte-identical to `microquant quantize` (wasm/tests/data/digits_default.mq)');
check(q.report.model.int8Accuracy === 0.97, `report: int8 accuracy ${q.report.model.int8Accuracy}`);
const x = parseNpy(calib).data.slice(0, 64);
const [y] = q.run(x);
check(y instanceof QTensor && y.dtype === 'int8' && y.shape.join() === '1,10', `run: ${y}`);
let typeError = false;
try { model.run(y); } catch (e) { typeError = e instanceof TypeError; }
check(typeError, 'a QTensor where floats are expected is a TypeError');

// Dynamic quantization (int8 weights, inputs quantized per call): the CLI's ONNX model.
const dyn = await model.quantizeDynamic({ evalSamples: calib, labels });
const cliDynamic = readFileSync(path.join(root, 'tests/golden/hybrid/dynamic_digits.onnx'));
check(dyn instanceof HybridModel && dyn.mode === 'dynamic' && same(dyn.toQdqOnnx(), cliDynamic), 'quantizeDynamic: the ONNX model is byte-identical to `microquant quantize --mode dynamic`');
check(dyn.report.model.mode === 'dynamic int8' && dyn.run(x)[0] instanceof Float32Array, `quantizeDynamic: report (${dyn.report.model.mode}) and a float run`);

// microquant/runtime: the smaller build loads the .mq and computes the same bits.
const rq = runtime.loadModel(q.toBytes());
check(!runtime.hasConverter() && same(rq.run(x)[0].data, y.data), 'microquant/runtime runs the .mq with the same output');
let refused = '';
try { runtime.loadModel(modelBytes); } catch (e) { refused = e.message; }
check(/runtime-only/.test(refused), `microquant/runtime refuses a float model: "${refused}"`);

// Calibration split over two worker_threads, merged: the same .mq.
const workerUrl = new URL(import.meta.resolve('microquant/worker'));
const workers = [new Worker(workerUrl), new Worker(workerUrl)];
const cal = await calibrateInWorkers(model, modelBytes, calib, { workers, observer: 'entropy', onProgress: () => {} });
const qw = await model.quantize(cal, { metadata: { producer } });
const single = await model.calibrateAndQuantize(calib, { observer: 'entropy', metadata: { producer } });
check(cal.complete && cal.samples === 100 && same(qw.toBytes(), single.toBytes()), 'calibrateInWorkers (2 worker_threads, entropy, 2 passes) gives the same .mq as one calibration');
await Promise.all(workers.map((w) => w.terminate()));

// Firmware exports compile.
const dir = mkdtempSync(path.join(os.tmpdir(), 'mq-export-'));
writeFileSync(path.join(dir, 'digits.h'), q.toCHeader('digits'));
writeFileSync(path.join(dir, 'main.c'), '#include "digits.h"\n#include <stdio.h>\nint main(void) { printf("%u %u %u\\n", (unsigned)DIGITS_MQ_LEN, (unsigned)((uintptr_t)digits_mq % 16), (unsigned)DIGITS_ARENA_LEN); return digits_mq[0] != 0x4d; }\n');
try {
  execFileSync('cc', ['-std=c11', '-Wall', '-Werror', '-o', path.join(dir, 'c'), path.join(dir, 'main.c')]);
  const out = execFileSync(path.join(dir, 'c')).toString().trim();
  check(out === `${q.modelBytes} 0 ${q.arenaBytes}`, `C header compiles (cc -std=c11 -Wall -Werror), aligned: ${out}`);
} catch (e) { check(false, `C header: ${e.message}`); }
writeFileSync(path.join(dir, 'digits.rs'), q.toRustSource('digits'));
writeFileSync(path.join(dir, 'main.rs'), 'mod digits;\nfn main() { assert_eq!(digits::DIGITS.as_ptr() as usize % 16, 0); println!("{} {}", digits::DIGITS.len(), digits::DIGITS_ARENA_LEN); }\n');
try {
  execFileSync('rustc', ['--edition', '2021', '-D', 'warnings', '-o', path.join(dir, 'r'), path.join(dir, 'main.rs')]);
  const out = execFileSync(path.join(dir, 'r')).toString().trim();
  check(out === `${q.modelBytes} ${q.arenaBytes}`, `Rust source compiles (rustc -D warnings), aligned: ${out}`);
} catch (e) { check(false, `Rust source: ${e.message}`); }
console.log(failures === 0 ? 'node app: all checks passed' : `node app: ${failures} failures`);
process.exit(failures === 0 ? 0 : 1);
