// A Vite 7 + TypeScript app: the package's types, its wasm bundled by Vite, quantization in a
// Web Worker (the page stays responsive), the .mq bytes handed back to the page.
import { loadModel, calibrateInWorkers, FloatModel, HybridModel, QuantizedModel, QTensor, type Report } from 'microquant';

const out = document.getElementById('out')!;
const worker = new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' });
const result = await new Promise<{ mq: Uint8Array; report: Report; progress: number }>((resolve, reject) => {
  worker.onmessage = (e) => (e.data.error ? reject(new Error(e.data.error)) : resolve(e.data));
  worker.postMessage({ producer: new URLSearchParams(location.search).get('producer') ?? undefined });
});
// The main thread loads the .mq the worker made and runs it.
const q = loadModel(result.mq) as QuantizedModel;
const [y]: QTensor[] = q.run(new Float32Array(64));

// One calibration split over two Web Workers running microquant/worker, merged exactly: the same
// .mq as one calibration on this thread (entropy: two passes, so two rounds of merging).
const get = async (f: string) => new Uint8Array(await (await fetch(`/${f}`)).arrayBuffer());
const modelBytes = await get('digits_cnn.onnx');
const calib = await get('digits_calib.npy');
const model = loadModel(modelBytes, { name: 'digits_cnn.onnx' });
if (!(model instanceof FloatModel)) throw new Error('expected a float model');
const workers = [0, 1].map(() => new Worker(new URL('./cal-worker.ts', import.meta.url), { type: 'module' }));
let workerProgress = 0;
const cal = await calibrateInWorkers(model, modelBytes, calib, { workers, observer: 'entropy', onProgress: () => workerProgress++ });
const merged = (await model.quantize(cal)).toBytes();
const single = (await model.calibrateAndQuantize(calib, { observer: 'entropy' })).toBytes();
const workersSame = cal.complete && merged.length === single.length && merged.every((b, i) => b === single[i]);
workers.forEach((w) => w.terminate());

// Weight-only quantization through the types: a HybridModel whose ONNX model runs in ONNX Runtime.
const hybrid: HybridModel = await model.quantizeWeightOnly({ perChannel: true, evalSamples: calib });
const hybridMode: 'weight-only' | 'dynamic' = hybrid.mode;
const hybridOnnxBytes = hybrid.toQdqOnnx().length;

const summary = { bytes: Array.from(result.mq), int8Accuracy: result.report.model.int8Accuracy, progress: result.progress, output: y.toString(), workersSame, workerProgress, hybridMode, hybridOnnxBytes };
out.textContent = JSON.stringify({ ...summary, bytes: result.mq.length });
(window as unknown as { __result: typeof summary }).__result = summary;
