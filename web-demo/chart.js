// The per-layer SQNR bar chart, as plain SVG: one bar per layer, labelled axes, a title per bar.
const NS = 'http://www.w3.org/2000/svg';
const SHORT = { Conv2d: 'conv', DepthwiseConv2d: 'dwconv', FullyConnected: 'fc', MaxPool2d: 'maxpool', AvgPool2d: 'avgpool',
  Reshape: 'reshape', Softmax: 'softmax', Logistic: 'sigmoid', Concatenation: 'concat', HardSwish: 'hswish', Quantize: 'requant' };

function el(name, attrs = {}, text) {
  const e = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

/** Draws `layers` ({index, name, op, sqnrDb}) into `container`. Identical outputs (infinite
 *  SQNR, `sqnrDb === null`) are drawn to the top and marked ∞. */
export function sqnrChart(container, layers) {
  const finite = layers.map((l) => l.sqnrDb).filter((v) => v !== null && Number.isFinite(v));
  const top = Math.max(10, Math.ceil((Math.max(0, ...finite) + 5) / 10) * 10);
  const bottom = Math.min(0, Math.floor(Math.min(0, ...finite) / 10) * 10);
  const left = 56, right = 16, upper = 16, lower = 92;
  const bar = Math.max(14, Math.min(64, Math.floor(720 / Math.max(1, layers.length))));
  const width = left + right + bar * layers.length;
  const height = 330;
  const plot = height - upper - lower;
  const y = (v) => upper + ((top - v) / (top - bottom)) * plot;
  const svg = el('svg', { viewBox: `0 0 ${width} ${height}`, width, height, role: 'img',
    'aria-label': 'SQNR per layer, in dB', class: 'chart' });
  svg.append(el('title', {}, 'Signal-to-quantization-noise ratio of each layer\'s quantized output against the float model, in dB'));
  for (let v = bottom; v <= top; v += 10) {
    svg.append(el('line', { x1: left, x2: width - right, y1: y(v), y2: y(v), class: 'grid' }));
    svg.append(el('text', { x: left - 6, y: y(v) + 4, 'text-anchor': 'end', class: 'tick' }, String(v)));
  }
  svg.append(el('line', { x1: left, x2: left, y1: upper, y2: upper + plot, class: 'axis' }));
  svg.append(el('line', { x1: left, x2: width - right, y1: y(0), y2: y(0), class: 'axis' }));
  svg.append(el('text', { x: 14, y: upper + plot / 2, transform: `rotate(-90 14 ${upper + plot / 2})`,
    'text-anchor': 'middle', class: 'label' }, 'SQNR (dB)'));
  svg.append(el('text', { x: left + (width - left - right) / 2, y: height - 6, 'text-anchor': 'middle', class: 'label' },
    'layer (index: op)'));
  layers.forEach((l, i) => {
    const x = left + i * bar + 2;
    const inf = l.sqnrDb === null;
    const v = inf ? top : l.sqnrDb;
    const y0 = y(Math.max(0, v)), y1 = y(Math.min(0, v));
    const rect = el('rect', { x, y: y0, width: bar - 4, height: Math.max(1, y1 - y0),
      class: inf ? 'bar inf' : v < 20 ? 'bar low' : 'bar', 'data-layer': l.index });
    rect.append(el('title', {}, `#${l.index} ${l.name} (${l.op}): ${inf ? '∞ (identical to float)' : `${l.sqnrDb.toFixed(2)} dB`}`));
    svg.append(rect);
    if (inf) svg.append(el('text', { x: x + (bar - 4) / 2, y: y0 + 12, 'text-anchor': 'middle', class: 'tick' }, '∞'));
    const lx = x + (bar - 4) / 2, ly = upper + plot + 8;
    svg.append(el('text', { x: lx, y: ly, transform: `rotate(40 ${lx} ${ly})`, class: 'tick' },
      `${l.index}: ${SHORT[l.op] ?? l.op}`));
  });
  container.replaceChildren(svg);
}
