/**
 * The peer of the request-floor rows: bare `node:http` in a process of its own, answering each
 * path it is given with the bytes our service answered it with (status 200, JSON), and nothing
 * else: what the platform costs for the same bytes, with no framework, validation or store.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { cpuSeconds } from './server-process.ts';

export interface BareServer {
  url: string;
  /** CPU seconds the bare server has used. */
  cpu(): number;
  stop(): Promise<void>;
}

/** The child: reads `{path: body}` from the file named in argv, listens, prints its port. */
const CHILD = `
const http = require('node:http');
const fs = require('node:fs');
const bodies = new Map(Object.entries(JSON.parse(fs.readFileSync(process.argv[1], 'utf8'))).map(([p, b]) => [p, Buffer.from(b)]));
const server = http.createServer((req, res) => {
  const body = bodies.get(req.url);
  if (!body) { res.writeHead(404); res.end(); return; }
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
  res.end(body);
});
server.keepAliveTimeout = 65000;
server.listen(0, '127.0.0.1', () => process.stdout.write(String(server.address().port) + '\\n'));
`;

export async function startBareServer(bodies: Map<string, string>): Promise<BareServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-bench-bare-'));
  const file = path.join(dir, 'bodies.json');
  fs.writeFileSync(file, JSON.stringify(Object.fromEntries(bodies)));
  const child = spawn(process.execPath, ['-e', CHILD, file], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += String(d);
      if (out.includes('\n')) resolve(Number(out.trim()));
    });
    child.once('exit', (code) => reject(new Error(`bare server exited (${code})`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    cpu: () => cpuSeconds(child.pid!),
    stop: async () => {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
