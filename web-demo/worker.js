// The demo's worker: loading, calibration, quantization and the exports run here, so the page
// stays responsive. The package loads its wasm with a top-level await: the message handler is
// registered first and waits for it.
//
//   -> {type: 'load', id, model: Uint8Array, name, loadOptions}        <- {type: 'model', id, info}
//      loadOptions: ONNX inputShapes / inputValues (dynamic axes, non-float inputs), or absent
//   -> {type: 'quantize', id, samples, labels, options}                <- {type: 'progress', id, ...}
//                                                                       <- {type: 'result', id, ...}
//      options.mode "static": calibrateAndQuantize (the .mq, QDQ ONNX, C and Rust arrays);
//      "weight-only" / "dynamic": quantizeWeightOnly / quantizeDynamic (an ONNX model; samples
//      optional, for the report)
//   -> {type: 'cancel'}                                                 (the running job rejects)
//   <- {type: 'error', id, name, message}                               any failure, readable
const microquant = import('./pkg/index.js');
let model = null;
let controller = null;

function info(m) {
  return { format: m.format, name: m.name, inputs: m.inputs, outputs: m.outputs, macs: m.macs,
    weightBytes: m.weightBytes, carriesQuantization: m.carriesQuantization, layers: m.layers };
}

async function handle(msg) {
  const mq = await microquant;
  switch (msg.type) {
    case 'load': {
      const m = mq.loadModel(msg.model, { name: msg.name, ...(msg.loadOptions ?? {}) });
      if (!(m instanceof mq.FloatModel)) {
        m.free();
        throw new Error(`${msg.name} is already quantized (a .mq or int8 model): drop the float ONNX or TFLite model to quantize it`);
      }
      model?.free();
      model = m;
      self.postMessage({ type: 'model', id: msg.id, info: info(m) });
      break;
    }
    case 'quantize': {
      if (!model) throw new Error('load a model first');
      controller = new AbortController();
      const t0 = performance.now();
      const progress = { signal: controller.signal, chunkMs: 30, onProgress: (p) => self.postMessage({ type: 'progress', id: msg.id, ...p }) };
      const stem = model.name.replace(/\.[^.]*$/, '') || 'model';
      const { mode, perChannel } = msg.options;
      if (mode === 'weight-only' || mode === 'dynamic') {
        // Int8 weights with float activations: another kind of model (no calibration, no .mq),
        // exported as ONNX; the samples, if any, measure it against the float model.
        const run = mode === 'dynamic' ? model.quantizeDynamic : model.quantizeWeightOnly;
        const h = await run.call(model, {
          perChannel,
          evalSamples: msg.samples ?? undefined,
          labels: msg.samples ? msg.labels ?? undefined : undefined,
          ...progress,
        });
        const ms = performance.now() - t0;
        const onnx = h.toQdqOnnx();
        const result = {
          type: 'result', id: msg.id, ms, mode, report: h.report, reportJson: h.reportJson(), sizes: h.sizes,
          quantizedLayers: h.quantizedLayers, onnx, stem,
        };
        h.free();
        self.postMessage(result, [onnx.buffer]);
        break;
      }
      const q = await model.calibrateAndQuantize(msg.samples, { ...msg.options, labels: msg.labels ?? undefined, ...progress });
      const ms = performance.now() - t0;
      const mqBytes = q.toBytes();
      let qdq = null;
      let qdqError = null;
      try {
        qdq = q.toQdqOnnx();
      } catch (e) {
        qdqError = e.message;
      }
      const result = {
        type: 'result', id: msg.id, ms, mode, report: q.report, reportJson: q.reportJson(), sizes: q.sizes,
        inputs: q.inputs, outputs: q.outputs, mq: mqBytes, qdq, qdqError,
        header: q.toCHeader(stem), rust: q.toRustSource(stem), stem,
      };
      q.free();
      self.postMessage(result, [mqBytes.buffer, ...(qdq ? [qdq.buffer] : [])]);
      break;
    }
    default:
      throw new TypeError(`unknown message ${msg.type}`);
  }
}

self.onmessage = (e) => {
  if (e.data?.type === 'cancel') {
    controller?.abort();
    return;
  }
  handle(e.data).catch((err) => {
    self.postMessage({ type: 'error', id: e.data?.id, name: err?.name ?? 'Error', message: String(err?.message ?? err) });
  });
};
