// calibrateInWorkers: one calibration split over several workers (Web Workers or Node
// worker_threads running microquant/worker), their observer statistics merged exactly, pass by
// pass, into a Calibration of the main thread's model.

let nextId = 1;

function listen(worker, fn) {
  if (typeof worker.addEventListener === 'function') {
    const h = (e) => fn(e.data);
    worker.addEventListener('message', h);
    return () => worker.removeEventListener('message', h);
  }
  worker.on('message', fn);
  return () => worker.off('message', fn);
}

function abortReason(signal) {
  if (signal.reason !== undefined) return signal.reason;
  const e = new Error('the operation was aborted');
  e.name = 'AbortError';
  return e;
}

/** The samples as a list (one entry per sample), in the model's layout. */
function sampleList(model, samples, parseNpy) {
  const per = model.inputs.map((i) => i.shape.reduce((a, b) => a * b, 1));
  if (samples instanceof ArrayBuffer) samples = new Uint8Array(samples);
  if (samples instanceof Uint8Array) samples = parseNpy(samples).data;
  if (samples instanceof Float32Array) {
    if (per.length !== 1) throw new TypeError(`the model has ${per.length} inputs: pass an array of samples`);
    if (samples.length === 0 || samples.length % per[0] !== 0) {
      throw new Error(`samples: ${samples.length} values, not a whole number of samples of ${per[0]} values`);
    }
    const out = [];
    for (let i = 0; i < samples.length; i += per[0]) out.push(samples.subarray(i, i + per[0]));
    return out;
  }
  if (Array.isArray(samples) && samples.length > 0) return samples;
  throw new TypeError('samples must be .npy bytes, a Float32Array or a non-empty array of samples');
}

/** One shard as a message payload: one packed Float32Array for one-input models. */
function pack(shard) {
  if (shard.every((s) => s instanceof Float32Array)) {
    const n = shard.reduce((a, s) => a + s.length, 0);
    const out = new Float32Array(n);
    let at = 0;
    for (const s of shard) {
      out.set(s, at);
      at += s.length;
    }
    return { samples: out, transfer: [out.buffer] };
  }
  const samples = shard.map((s) => (Array.isArray(s) ? s.map((x) => x.slice()) : s.slice()));
  return { samples, transfer: [] };
}

function job(worker, message, transfer, onProgress, signal) {
  return new Promise((resolve, reject) => {
    const id = message.id;
    const stop = listen(worker, (m) => {
      if (!m || m.microquant !== 1 || m.id !== id) return;
      if (m.type === 'progress') onProgress(m);
      else {
        stop();
        signal?.removeEventListener('abort', onAbort);
        if (m.type === 'state') resolve(m.state);
        else {
          const e = new Error(m.message);
          e.name = m.name;
          reject(e);
        }
      }
    });
    const onAbort = () => {
      worker.postMessage({ microquant: 1, type: 'abort', id });
      stop();
      reject(abortReason(signal));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    worker.postMessage(message, transfer);
  });
}

/** calibrateInWorkers for one build of the module (`parseNpy` reads .npy sample files). */
export function makeCalibrateInWorkers(parseNpy) {
  return (model, modelBytes, samples, options) => calibrateInWorkers(model, modelBytes, samples, options, parseNpy);
}

/**
 * Calibrates `model` (a FloatModel of this thread, loaded from `modelBytes`) on `samples`,
 * split over `options.workers` (each running microquant/worker), and returns the merged
 * Calibration, complete: the same statistics as one calibration over all the samples.
 * Options: `workers` (required), the calibration options (`observer`, `percentile`,
 * `overrides`, `twoPass`), `loadOptions` (as given to loadModel), `onProgress`, `signal`.
 */
async function calibrateInWorkers(model, modelBytes, samples, options = {}, parseNpy) {
  const { workers, onProgress, signal, loadOptions, chunkMs, ...calibration } = options;
  if (!Array.isArray(workers) || workers.length === 0) {
    throw new TypeError('calibrateInWorkers: options.workers must be a non-empty array of workers running microquant/worker');
  }
  if (signal?.aborted) throw abortReason(signal);
  const list = sampleList(model, samples, parseNpy);
  const k = Math.min(workers.length, list.length);
  const shards = Array.from({ length: k }, (_, i) => list.slice(Math.floor((i * list.length) / k), Math.floor(((i + 1) * list.length) / k)));
  const key = `microquant-model-${nextId++}`;
  const bytes = modelBytes instanceof Uint8Array ? modelBytes : new Uint8Array(modelBytes);
  let cal = model.createCalibration(calibration);
  let first = true;
  try {
    while (!cal.complete) {
      const start = cal.toState();
      // The first pass's samples kept in each worker, the error pass measured from them.
      const [keep, replay] = [cal.pass === 0, cal.pass > 0 && cal.pass + 1 === cal.passes];
      const done = new Array(k).fill(0);
      const states = await Promise.all(
        shards.map((shard, i) => {
          const { samples: payload, transfer } = pack(shard);
          const message = {
            microquant: 1, type: 'calibrate', id: nextId++, key, loadOptions, calibration,
            model: first ? bytes : undefined, state: start, samples: payload, keep, replay,
          };
          return job(workers[i], message, transfer, (p) => {
            done[i] = p.done;
            onProgress?.({ stage: 'calibrate', pass: p.pass, passes: p.passes, done: done.reduce((a, b) => a + b, 0), total: list.length });
          }, signal);
        }),
      );
      first = false;
      const merged = model.createCalibration(calibration);
      merged.loadState(start);
      for (const s of states) merged.merge(s);
      merged.endPass();
      cal.free();
      cal = merged;
    }
  } finally {
    for (const w of workers.slice(0, k)) w.postMessage({ microquant: 1, type: 'dispose', key });
  }
  return cal;
}
