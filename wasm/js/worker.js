// microquant/worker: a module Web Worker that calibrates for calibrateInWorkers(). Use it as is
//   new Worker(new URL('microquant/worker', import.meta.url), { type: 'module' })   // some bundlers
// or import it from your own worker file (it only answers messages marked `microquant: 1`):
//   // my-worker.js
//   import 'microquant/worker';
//
// The listener is registered before the wasm module loads (a module worker that awaits first
// can miss the messages posted to it meanwhile); messages wait until it is ready.
import { handleMessage } from './worker-protocol.js';

let mq = null;
const pending = [];
const post = (m, transfer) => self.postMessage(m, transfer ?? []);
self.addEventListener('message', (e) => {
  if (mq) handleMessage(mq, e.data, post);
  else pending.push(e.data);
});
import('./index.js').then((m) => {
  mq = m;
  for (const d of pending.splice(0)) handleMessage(mq, d, post);
});
