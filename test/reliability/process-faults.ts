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

/**
 * Runs `src/main.ts` with `env`; does not wait for it to listen. Its stderr is kept, and with
 * `withStdout` its stdout too (the JSON log at `LOG_LEVEL=info`), in `output()` in arrival order.
 */
export function spawnServer(
  env: Record<string, string>,
  port: number,
  { withStdout = false, cwd = ROOT }: { withStdout?: boolean; cwd?: string } = {},
): ServerProcess & { output: () => string; onOutput: (listener: () => boolean) => void } {
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd,
    env: {
      ...process.env,
      DEMO_DATA: 'false',
      LOG_LEVEL: 'warn',
      HOST: '127.0.0.1',
      PORT: String(port),
      PUBLIC_URL: url,
      ...env,
    },
    stdio: ['ignore', withStdout ? 'pipe' : 'ignore', 'pipe'],
  });
  let err = '';
  let out = '';
  /** Called on each chunk of output until they answer true. */
  let listeners: Array<() => boolean> = [];
  const collect = (d: Buffer, isStderr: boolean) => {
    if (isStderr) err += String(d);
    out += String(d);
    listeners = listeners.filter((listener) => !listener());
  };
  child.stderr!.on('data', (d: Buffer) => collect(d, true));
  child.stdout?.on('data', (d: Buffer) => collect(d, false));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    url,
    child,
    stderr: () => err,
    exited,
    output: () => out,
    onOutput: (listener) => listeners.push(listener),
  };
}

/** Waits until the server answers `/health` (about `attempts` tenths of a second at most). */
async function untilHealthy<S extends ServerProcess>(server: S, attempts = 300): Promise<S> {
  for (let i = 0; i < attempts; i++) {
    if (server.child.exitCode !== null) throw new Error(`server exited: ${server.stderr()}`);
    try {
      if ((await fetch(`${server.url}/health`)).ok) return server;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  // Not left running behind a failed test.
  signalServer(server.child, 'SIGKILL');
  throw new Error(`server did not become healthy: ${server.stderr().slice(-2000)}`);
}

/** Spawns the server and waits until it is healthy (`attempts` tenths of a second at most). */
export async function startServer(env: Record<string, string>, attempts?: number): Promise<ServerProcess> {
  return untilHealthy(spawnServer(env, await freePort()), attempts);
}

/**
 * Sends `signal` to the server. SIGKILL goes to every process of the service (its server processes
 * first, then the primary), as a crash of the machine or the out-of-memory killer would end them:
 * a server process whose primary is gone would otherwise finish its current work before it leaves.
 */
export function signalServer(child: ChildProcess, signal: NodeJS.Signals): void {
  if (signal === 'SIGKILL' && child.pid !== undefined && child.exitCode === null) {
    for (const pid of processTree(child.pid).reverse()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    return;
  }
  child.kill(signal);
}

export async function kill(
  server: ServerProcess,
  signal: NodeJS.Signals = 'SIGKILL',
): Promise<number | null> {
  signalServer(server.child, signal);
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

/** The server processes a `WORKERS` > 1 server forked (see `forkedServers`). */
export function workersOf(server: ServerProcess): number[] {
  return forkedServers(server.child.pid!);
}

/**
 * The server processes the service's primary process `primary` forked (its descendants running
 * `src/main.ts`; tsx may run an esbuild service beside them while it compiles files it has not
 * cached).
 */
export function forkedServers(primary: number): number[] {
  return processTree(primary)
    .slice(1)
    .filter((pid) => {
      try {
        return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('src/main.ts');
      } catch {
        return false; // exited meanwhile
      }
    });
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

/** A server child whose log (stdout and stderr, `LOG_LEVEL=info`) a test can wait on. */
export interface LoggingServer {
  url: string;
  logs: () => string;
  /** Resolves once `message` appears in the log; rejects after `timeoutMs` with the log's tail. */
  waitForLog: (message: string, timeoutMs: number) => Promise<void>;
  exited: Promise<unknown>;
  kill: (signal: NodeJS.Signals) => void;
}

/** Starts `src/main.ts` (one process, info logs) over `env` and waits until it is healthy. */
/** `cwd`: another checkout whose `src/main.ts` runs (to compare with an older version). */
export async function startLoggingServer(env: Record<string, string>, cwd = ROOT): Promise<LoggingServer> {
  const server = spawnServer({ LOG_LEVEL: 'info', WORKERS: '1', ...env }, await freePort(), {
    withStdout: true,
    cwd,
  });
  const waitForLog = (message: string, timeoutMs: number) =>
    new Promise<void>((resolve, reject) => {
      const deadline = setTimeout(
        () => reject(new Error(`no "${message}" in the log:\n${server.output().slice(-2000)}`)),
        timeoutMs,
      );
      const check = () => {
        if (!server.output().includes(message)) return false;
        clearTimeout(deadline);
        resolve();
        return true;
      };
      if (!check()) server.onOutput(check);
    });
  await untilHealthy(server, 600);
  return {
    url: server.url,
    logs: server.output,
    waitForLog,
    exited: server.exited,
    kill: (signal) => signalServer(server.child, signal),
  };
}

/** Options of a form-encoded POST (logins). */
export const form = (fields: Record<string, string>) => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams(fields).toString(),
});

/** Runs `tasks` with at most `width` in flight; results in the tasks' order. */
export async function inParallel<T>(width: number, tasks: Array<() => Promise<T>>): Promise<T[]> {
  const out: T[] = new Array(tasks.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      for (let i = next++; i < tasks.length; i = next++) out[i] = await tasks[i]!();
    }),
  );
  return out;
}

/**
 * A `WORKERS=2` server over `dataDir` (and `env`) with an administrator (`ADMIN_USERNAME`/
 * `ADMIN_PASSWORD` in `admin`), once its primary and both workers run, and JSON request headers
 * carrying the administrator's token. Three processes start, so on a busy machine it is given a
 * minute and a half to answer.
 */
export async function startClusterAsAdmin(
  dataDir: string,
  admin: { ADMIN_USERNAME: string; ADMIN_PASSWORD: string },
  env: Record<string, string> = {},
): Promise<{ server: ServerProcess; asAdmin: Record<string, string> }> {
  const server = await startServer({ DATA_DIR: dataDir, WORKERS: '2', ...admin, ...env }, 900);
  for (let i = 0; i < 300 && workersOf(server).length < 2; i++) await new Promise((r) => setTimeout(r, 100));
  if (workersOf(server).length < 2) throw new Error('the server did not start two workers');
  const login = await requestOnFreshConnection(
    `${server.url}/token`,
    form({ grant_type: 'password', username: admin.ADMIN_USERNAME, password: admin.ADMIN_PASSWORD }),
  );
  return {
    server,
    asAdmin: { authorization: `Bearer ${login.body.access_token}`, 'content-type': 'application/json' },
  };
}
