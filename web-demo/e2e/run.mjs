// End-to-end test of the demo page in real headless Chromium (playwright-core + /usr/bin/chromium):
// a user types the golden ONNX QuantizeLinear cases into the page, clicks Quantize, and the table
// must show exactly the values onnx's reference evaluator gives; bad input must show an error.
import { chromium } from 'playwright-core';
import { readFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve } from './serve.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const demo = path.resolve(here, '..');
const golden = JSON.parse(await readFile(path.resolve(demo, '../tests/golden/smoke/quantize_linear.json'), 'utf8'));
const shots = path.join(demo, 'e2e', 'screenshots');
await mkdir(shots, { recursive: true });

const { server, url } = await serve(demo);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
    '--disable-sync', '--no-first-run'],
});
let failures = 0, checked = 0;
const fail = (msg) => { failures++; console.error('FAIL', msg); };
try {
  const page = await browser.newPage();
  page.on('pageerror', (e) => fail(`page error: ${e.message}`));
  await page.goto(url);
  await page.waitForFunction(() => !document.getElementById('quantize').disabled, null, { timeout: 30000 });

  for (const c of golden.cases) {
    await page.fill('#values', c.x.map((v) => String(v)).join(' '));
    await page.fill('#scale', String(c.scale));
    await page.fill('#zero-point', String(c.zero_point));
    await page.click('#quantize');
    await page.waitForSelector('#result:not([hidden])');
    const rows = await page.$$eval('#result tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
    if (rows.length !== c.x.length) { fail(`${c.name}: ${rows.length} rows shown, want ${c.x.length}`); continue; }
    rows.forEach((r, i) => {
      // Cells show JS numbers (the f32 widened to f64), exactly what the golden file holds.
      if (Number(r[2]) !== c.q[i]) fail(`${c.name}[${i}]: q shown ${r[2]}, want ${c.q[i]}`);
      if (Number(r[3]) !== c.dq[i]) fail(`${c.name}[${i}]: dequantized shown ${r[3]}, want ${c.dq[i]}`);
      checked++;
    });
  }
  await page.screenshot({ path: path.join(shots, 'quantize.png'), fullPage: true });

  // Bad input: the user sees a message naming the problem, not a blank page.
  await page.fill('#scale', '0');
  await page.click('#quantize');
  const err = await page.textContent('#error');
  if (!(await page.isVisible('#error')) || !/scale/.test(err)) fail(`zero scale: error shown was "${err}"`);
  await page.fill('#scale', '0.1');
  await page.fill('#values', '1 two 3');
  await page.click('#quantize');
  const err2 = await page.textContent('#error');
  if (!/value 2/.test(err2)) fail(`non-number: error shown was "${err2}"`);
  await page.screenshot({ path: path.join(shots, 'error.png'), fullPage: true });
  console.log(`web-demo e2e: Chromium ${browser.version()}, ${checked} values checked against onnx, ${failures} failures`);
} finally {
  await browser.close();
  server.close();
}
if (checked === 0) failures++;
process.exit(failures === 0 ? 0 : 1);
