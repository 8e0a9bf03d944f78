// The calibration worker's side of calibrateInWorkers (workers.js). Messages carry
// `microquant: 1`; anything else is left to the application's own handlers.
//
//   -> {microquant: 1, type: 'calibrate', id, key, model?, loadOptions, calibration, state, samples}
//        observes `samples` in the current pass of a calibration that starts from `state`
//        (`model`, the float model's bytes, is sent the first time a `key` is used)
//   <- {microquant: 1, type: 'progress', id, stage, pass, passes, done, total}
//   <- {microquant: 1, type: 'state', id, state}   (the calibration's toState() bytes)
//   <- {microquant: 1, type: 'error', id, name, message}
//   -> {microquant: 1, type: 'abort', id}          cancels job `id`
//   -> {microquant: 1, type: 'dispose', key}       forgets the model `key`

const models = new Map();
const jobs = new Map();

async function calibrate(mq, msg, post) {
  const controller = new AbortController();
  jobs.set(msg.id, controller);
  let cal;
  try {
    let model = models.get(msg.key);
    if (!model) {
      if (!msg.model) throw new Error(`microquant worker: model "${msg.key}" was not sent to this worker`);
      model = mq.loadModel(msg.model, msg.loadOptions);
      if (!(model instanceof mq.FloatModel)) {
        throw new Error('calibration needs a float model (ONNX or TFLite), this one is already quantized');
      }
      models.set(msg.key, model);
    }
    cal = model.createCalibration(msg.calibration);
    if (msg.state) cal.loadState(msg.state);
    await cal.observe(msg.samples, {
      signal: controller.signal,
      onProgress: (p) => post({ microquant: 1, type: 'progress', id: msg.id, ...p }),
    });
    const state = cal.toState();
    post({ microquant: 1, type: 'state', id: msg.id, state }, [state.buffer]);
  } catch (e) {
    post({ microquant: 1, type: 'error', id: msg.id, name: e?.name ?? 'Error', message: String(e?.message ?? e) });
  } finally {
    cal?.free();
    jobs.delete(msg.id);
  }
}

/** Handles one message; returns false if it is not for microquant. */
export function handleMessage(mq, msg, post) {
  if (!msg || typeof msg !== 'object' || msg.microquant !== 1) return false;
  switch (msg.type) {
    case 'calibrate':
      calibrate(mq, msg, post);
      break;
    case 'abort':
      jobs.get(msg.id)?.abort();
      break;
    case 'dispose':
      models.get(msg.key)?.free();
      models.delete(msg.key);
      break;
    default:
      post({ microquant: 1, type: 'error', id: msg.id, name: 'TypeError', message: `unknown message type ${msg.type}` });
  }
  return true;
}
