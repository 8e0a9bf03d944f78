// The demo page: everything runs locally in the microquant wasm module.
import init, { quantizeLinear, dequantizeLinear } from './pkg/microquant.js';

const $ = (id) => document.getElementById(id);

function parseValues(text) {
  const parts = text.split(/[\s,]+/).filter((s) => s.length > 0);
  if (parts.length === 0) throw new Error('enter at least one value');
  return Float32Array.from(parts, (s, i) => {
    const v = Number(s);
    if (Number.isNaN(v) && s.toLowerCase() !== 'nan') throw new Error(`value ${i + 1} ("${s}") is not a number`);
    return v;
  });
}

function show(x, q, dq) {
  const body = $('result').querySelector('tbody');
  body.replaceChildren();
  for (let i = 0; i < x.length; i++) {
    const tr = document.createElement('tr');
    for (const v of [i, x[i], q[i], dq[i], Math.abs(dq[i] - x[i])]) {
      const td = document.createElement('td');
      td.textContent = String(v);
      tr.append(td);
    }
    body.append(tr);
  }
  $('result').hidden = false;
}

function quantize(ev) {
  ev.preventDefault();
  $('error').hidden = true;
  try {
    const x = parseValues($('values').value);
    const scale = Number($('scale').value);
    const zp = Number($('zero-point').value);
    if (!Number.isInteger(zp)) throw new Error('zero point must be an integer');
    const q = quantizeLinear(x, scale, zp);
    const dq = dequantizeLinear(q, scale, zp);
    show(x, q, dq);
    $('status').textContent = `Quantized ${x.length} values.`;
  } catch (e) {
    $('result').hidden = true;
    $('error').textContent = `Error: ${e.message}`;
    $('error').hidden = false;
  }
}

try {
  await init();
  $('qform').addEventListener('submit', quantize);
  $('quantize').disabled = false;
  $('status').textContent = 'Ready.';
} catch (e) {
  $('error').textContent = `Could not load the wasm module: ${e.message}`;
  $('error').hidden = false;
}
