// microquant/worker for Node (worker_threads):
//   new Worker(new URL(import.meta.resolve('microquant/worker')))
import { parentPort } from 'node:worker_threads';
import * as mq from './node.mjs';
import { handleMessage } from './worker-protocol.js';

parentPort.on('message', (m) => {
  handleMessage(mq, m, (msg, transfer) => parentPort.postMessage(msg, transfer ?? []));
});
