// microquant/runtime: the runtime alone (load a .mq, run it, quantized tensors, C and Rust arrays
// for firmware), a much smaller wasm binary without the converter. Browsers and bundlers.
import init from './runtime/microquant_runtime.js';

export * from './runtime/microquant_runtime.js';

await init({ module_or_path: new URL('./runtime/microquant_runtime_bg.wasm', import.meta.url) });
