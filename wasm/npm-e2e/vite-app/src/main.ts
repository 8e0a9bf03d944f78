// A Vite 7 + TypeScript app: the package's types, its wasm bundled by Vite, quantization in a
// Web Worker (the page stays responsive), the .mq bytes handed back to the page.
import { loadModel, QuantizedModel, QTensor, type Report } from 'microquant';

const out = document.getElementById('out')!;
const worker = new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' });
const result = await new Promise<{ mq: Uint8Array; report: Report; progress: number }>((resolve, reject) => {
  worker.onmessage = (e) => (e.data.error ? reject(new Error(e.data.error)) : resolve(e.data));
  worker.postMessage({ producer: new URLSearchParams(location.search).get('producer') ?? undefined });
});
// The main thread loads the .mq the worker made and runs it.
const q = loadModel(result.mq) as QuantizedModel;
const [y]: QTensor[] = q.run(new Float32Array(64));
const summary = { bytes: Array.from(result.mq), int8Accuracy: result.report.model.int8Accuracy, progress: result.progress, output: y.toString() };
out.textContent = JSON.stringify({ ...summary, bytes: result.mq.length });
(window as unknown as { __result: typeof summary }).__result = summary;
