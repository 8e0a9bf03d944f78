// A static file server on 127.0.0.1 for the e2e tests (correct MIME type for .wasm). Run directly
// (`npm run serve [-- PORT]`, after `npm run build`), it serves the demo page.
import http from 'node:http';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.css': 'text/css',
  '.wasm': 'application/wasm', '.json': 'application/json', '.png': 'image/png' };

export async function serve(root, port = 0) {
  root = path.resolve(root);
  const server = http.createServer(async (req, res) => {
    let p = path.join(root, decodeURIComponent(new URL(req.url, 'http://h').pathname));
    if (!p.startsWith(root)) { res.writeHead(403); return res.end(); }
    if (p.endsWith(path.sep)) p = path.join(p, 'index.html');
    try {
      const body = await readFile(p);
      res.writeHead(200, { 'content-type': TYPES[path.extname(p)] ?? 'application/octet-stream' });
      res.end(body);
    } catch {
      res.writeHead(404); res.end();
    }
  });
  await new Promise((r) => server.listen(port, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${server.address().port}/` };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const demo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const { url } = await serve(demo, Number(process.argv[2] ?? 8080));
  console.log(`the microquant demo: ${url} (Ctrl-C stops)`);
}
