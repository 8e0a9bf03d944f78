// microquant/runtime for Node: the runtime alone (see runtime.js).
import { readFileSync } from 'node:fs';
import { initSync } from './runtime/microquant_runtime.js';

export * from './runtime/microquant_runtime.js';

initSync({ module: readFileSync(new URL('./runtime/microquant_runtime_bg.wasm', import.meta.url)) });
