// microquant: the entry for Node (an ES module). The same wasm binary as the browser build,
// read from the package directory and instantiated synchronously.
import { readFileSync } from 'node:fs';
import { initSync, parseNpy } from './web/microquant.js';
import { makeCalibrateInWorkers } from './workers.js';

export * from './web/microquant.js';

/** See workers.js: calibration split over workers running microquant/worker. */
export const calibrateInWorkers = makeCalibrateInWorkers(parseNpy);

initSync({ module: readFileSync(new URL('./web/microquant_bg.wasm', import.meta.url)) });
