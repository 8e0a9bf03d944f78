import type { Progress } from 'microquant';

// Listen first, then load the package (its wasm loads with a top-level await, during which a
// module worker could miss messages).
const microquant = import('microquant');
self.onmessage = async (e: MessageEvent<{ producer?: string }>) => {
  try {
    const { loadModel, parseNpy, FloatModel } = await microquant;
    const get = async (f: string) => new Uint8Array(await (await fetch(`/${f}`)).arrayBuffer());
    const model = loadModel(await get('digits_cnn.onnx'), { name: 'digits_cnn.onnx' });
    if (!(model instanceof FloatModel)) throw new Error('expected a float model');
    const calib = await get('digits_calib.npy');
    const labels = Array.from(parseNpy(await get('digits_labels.npy')).data);
    let progress = 0;
    const metadata: Record<string, string> = e.data.producer ? { producer: e.data.producer } : {};
    const q = await model.calibrateAndQuantize(calib, { labels, metadata, onProgress: (_: Progress) => progress++ });
    const mq = q.toBytes();
    self.postMessage({ mq, report: q.report, progress }, { transfer: [mq.buffer] });
  } catch (err) {
    self.postMessage({ error: String(err) });
  }
};
