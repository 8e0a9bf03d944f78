// The calibration worker's side of calibrateInWorkers (workers.js). Messages carry
// `microquant: 1`; anything else is left to the application's own handlers.
//
//   -> {microquant: 1, type: 'calibrate', id, key, model?, loadOptions, calibration, state, samples,
//       keep?, replay?}
//        observes `samples` in the current pass of a calibration that starts from `state`
//        (`model`, the float model's bytes, is sent the first time a `key` is used). `keep` (first
//        pass): the worker keeps what the "auto" observers' error pass needs of its samples, until
//        the next job of `key`; `replay` (error pass, the same samples as the kept job): that pass
//        is measured from what was kept, without running the model, when it was kept (else the
//        samples are observed as usual)
//   <- {microquant: 1, type: 'progress', id, stage, pass, passes, done, total}
//   <- {microquant: 1, type: 'state', id, state}   (the calibration's toState() bytes)
//   <- {microquant: 1, type: 'error', id, name, message}
//   -> {microquant: 1, type: 'abort', id}          cancels job `id`
//   -> {microquant: 1, type: 'dispose', key}       forgets the model `key`

const models = new Map();
const jobs = new Map();
// Per model key: the Calibration of its last `keep` job, holding what it kept of its samples.
const kept = new Map();

function dropKept(key) {
  kept.get(key)?.free();
  kept.delete(key);
}

/** The error pass of job `msg` from the Calibration that kept its samples: its state, or null. */
function replay(msg) {
  const cal = kept.get(msg.key);
  kept.delete(msg.key);
  if (!cal) return null;
  try {
    cal.loadState(msg.state);
    if (!cal.replayPass()) return null;
    return { state: cal.toState(), pass: cal.pass, passes: cal.passes, samples: cal.samples };
  } finally {
    cal.free();
  }
}

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
    const replayed = msg.replay ? replay(msg) : (dropKept(msg.key), null);
    if (replayed) {
      const { state, pass, passes, samples } = replayed;
      post({ microquant: 1, type: 'progress', id: msg.id, stage: 'calibrate', pass, passes, done: samples, total: samples });
      post({ microquant: 1, type: 'state', id: msg.id, state }, [state.buffer]);
      return;
    }
    cal = model.createCalibration(msg.calibration);
    if (msg.state) cal.loadState(msg.state);
    await cal.observe(msg.samples, {
      signal: controller.signal,
      keepForReplay: !!msg.keep,
      onProgress: (p) => post({ microquant: 1, type: 'progress', id: msg.id, ...p }),
    });
    const state = cal.toState();
    if (msg.keep) {
      kept.set(msg.key, cal);
      cal = undefined;
    }
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
      dropKept(msg.key);
      models.get(msg.key)?.free();
      models.delete(msg.key);
      break;
    default:
      post({ microquant: 1, type: 'error', id: msg.id, name: 'TypeError', message: `unknown message type ${msg.type}` });
  }
  return true;
}
