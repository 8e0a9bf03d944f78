// Serves the Vite build and runs it in headless Chromium: the bundled wasm loads, a Web Worker
// quantizes the digits example, and the .mq equals the CLI's; calibration split over two Web Workers
// running microquant/worker gives the same .mq as one calibration.
// Usage: node check-vite.mjs DIST_DIR EXPECTED.mq CLI_PRODUCER
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const require = createRequire(path.join(root, 'web-demo/package.json'));
const { chromium } = require('playwright-core');
const { serve } = await import(path.join(root, 'web-demo/e2e/serve.mjs'));
const [dist, expectedPath, producer] = process.argv.slice(2);
const expected = [...readFileSync(expectedPath)];
const golden = readFileSync(path.join(root, 'tests/golden/hybrid/digits.onnx'));
const { server, url } = await serve(dist);
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'] });
let ok = false;
try {
  const page = await browser.newPage();
  page.on('pageerror', (e) => console.error('[pageerror]', e.message));
  page.on('console', (m) => m.type() === 'error' && console.error('[console]', m.text()));
  await page.goto(`${url}?producer=${encodeURIComponent(producer)}`);
  await page.waitForFunction(() => window.__result !== undefined, null, { timeout: 60000 });
  const r = await page.evaluate(() => window.__result);
  const same = r.bytes.length === expected.length && r.bytes.every((b, i) => b === expected[i]);
  console.log(`vite app in Chromium ${browser.version()}: .mq ${r.bytes.length} bytes, ${same ? 'byte-identical to the CLI' : 'DIFFERENT from the CLI'}, int8 accuracy ${r.int8Accuracy}, ${r.progress} progress reports, ${r.output}; calibrateInWorkers over 2 Web Workers (microquant/worker): ${r.workersSame ? 'the same .mq as one calibration' : 'A DIFFERENT .mq'} (${r.workerProgress} progress reports); quantizeWeightOnly: a ${r.hybridMode} model, ONNX ${r.hybridOnnxBytes} bytes (the CLI's ${golden.length})`);
  ok = same && r.progress > 0 && r.int8Accuracy === 0.97 && r.workersSame === true && r.workerProgress > 0
    && r.hybridMode === 'weight-only' && r.hybridOnnxBytes === golden.length;
} finally {
  await browser.close();
  server.close();
}
process.exit(ok ? 0 : 1);
