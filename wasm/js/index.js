// microquant: the entry for browsers and bundlers (an ES module). The wasm module (one binary,
// the same one Node loads) is fetched and instantiated here, once, before anything is exported,
// so every function works as soon as the import resolves.
import init, { parseNpy } from './web/microquant.js';
import { makeCalibrateInWorkers } from './workers.js';

export * from './web/microquant.js';

/** See workers.js: calibration split over workers running microquant/worker. */
export const calibrateInWorkers = makeCalibrateInWorkers(parseNpy);

await init({ module_or_path: new URL('./web/microquant_bg.wasm', import.meta.url) });
