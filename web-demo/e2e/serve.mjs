// A static file server on 127.0.0.1 for the e2e tests (correct MIME type for .wasm).
import http from 'node:http';
import { readFile } from 'node:fs/promises';
import path from 'node:path';

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.css': 'text/css',
  '.wasm': 'application/wasm', '.json': 'application/json', '.png': 'image/png' };

export async function serve(root) {
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
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${server.address().port}/` };
}
