/**
 * The server as a child process, for fault tests and the kill script: start, wait healthy,
 * SIGKILL or SIGTERM, restart on the same data folder.
 */
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';

export const ROOT = path.resolve(import.meta.dirname, '../..');

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  stderr: () => string;
  exited: Promise<number | null>;
}

export async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as net.AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

/** Runs `src/main.ts` with `env`; does not wait for it to listen. */
export function spawnServer(env: Record<string, string>, port: number): ServerProcess {
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      DEMO_DATA: 'false',
      LOG_LEVEL: 'warn',
      HOST: '127.0.0.1',
      PORT: String(port),
      PUBLIC_URL: url,
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (d) => (err += String(d)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { url, child, stderr: () => err, exited };
}

export async function startServer(env: Record<string, string>): Promise<ServerProcess> {
  const server = spawnServer(env, await freePort());
  for (let i = 0; i < 300; i++) {
    if (server.child.exitCode !== null) throw new Error(`server exited: ${server.stderr()}`);
    try {
      if ((await fetch(`${server.url}/health`)).ok) return server;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('server did not become healthy');
}

export async function kill(
  server: ServerProcess,
  signal: NodeJS.Signals = 'SIGKILL',
): Promise<number | null> {
  server.child.kill(signal);
  return server.exited;
}

/** The process and its descendants (cluster workers), read from /proc. */
export function processTree(pid: number): number[] {
  const parents = new Map<number, number[]>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)]);
    } catch {
      // exited meanwhile
    }
  }
  const out: number[] = [];
  const visit = (p: number) => {
    out.push(p);
    for (const c of parents.get(p) ?? []) visit(c);
  };
  visit(pid);
  return out;
}

/** One request on a fresh connection (so each may land on another worker); the JSON body, if any. */
export function requestOnFreshConnection(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { agent: false, method: options.method ?? 'GET', headers: options.headers },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += String(d)));
        res.on('end', () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : undefined }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}
