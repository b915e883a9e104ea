/**
 * `npm start` as a user runs it, as real processes: a malformed upload does not end the process;
 * a server process that dies anyway is replaced, with the cause logged at error level, whatever
 * WORKERS says; a port in use stops start-up with a non-zero exit naming the port; the store is
 * private to its owner; SIGTERM and SIGINT sent to `npm start` stop every process.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  freePort,
  forkedServers,
  processTree,
  ROOT,
  signalServer,
  spawnServer,
  startLoggingServer,
  type LoggingServer,
} from './process-faults.ts';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-start-up-'));
/** Created by the server itself, so its mode is the server's choice. */
const dataDir = path.join(root, 'data');
let server: LoggingServer;
let primary: number;

async function waitFor(check: () => boolean, what: string, ms = 60_000): Promise<void> {
  for (const until = Date.now() + ms; !check();) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The JSON log lines with this message. */
const logLines = (message: string) =>
  server
    .logs()
    .split('\n')
    .filter((l) => l.startsWith('{') && l.includes(message))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

beforeAll(async () => {
  server = await startLoggingServer({ DATA_DIR: dataDir, DEMO_DATA: 'true' });
}, 120_000);
afterAll(async () => {
  server?.kill('SIGKILL');
  await server?.exited;
  fs.rmSync(root, { recursive: true, force: true });
});

describe('npm start', () => {
  it('answers 400 to a multipart body that ends inside the file part, and keeps serving', async () => {
    const boundary = 'X-BOUNDARY';
    const body =
      `--${boundary}\r\nContent-Disposition: form-data; name="uploaded_file"; filename="sheet.tsv"\r\n` +
      `Content-Type: text/tab-separated-values\r\n\r\nid\taction\tattrib`;
    expect(Buffer.byteLength(body)).toBe(149);
    const res = await fetch(`${server.url}/metadata/changesheets:validate`, {
      method: 'POST',
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
      body,
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      detail: 'The body is not valid multipart/form-data: Unexpected end of form',
    });
    const health = await fetch(`${server.url}/health`);
    expect(health.status).toBe(200);
    expect(logLines('server process died')).toEqual([]);
  });

  it('runs its server under a primary that replaces one that dies, logging the cause at error level', async () => {
    primary = Number(logLines('listening; docs at')[0]?.pid);
    expect(Number.isInteger(primary)).toBe(true);
    const [worker] = forkedServers(primary);
    expect(worker).toBeDefined();
    process.kill(worker!, 'SIGKILL');
    await waitFor(() => logLines('server process died').length === 1, 'the death to be logged');
    const [died] = logLines('server process died');
    expect(died).toMatchObject({ level: 50, worker, signal: 'SIGKILL', cause: 'killed by SIGKILL' });
    await waitFor(
      () => forkedServers(primary).length === 1 && !forkedServers(primary).includes(worker!),
      'a new worker',
    );
    await waitFor(() => logLines('server process listening').length === 2, 'the new worker to listen');
    const res = await fetch(`${server.url}/studies?per_page=1`);
    expect(res.status).toBe(200);
    expect((await res.json()).meta.count).toBeGreaterThan(0);
  }, 90_000);

  it('reads its store file into the OS cache in the background once it serves, and says so', async () => {
    await server.waitForLog('store file read into the OS cache', 20_000);
    const [starting] = logLines('reading the store file into the OS cache');
    const [read] = logLines('store file read into the OS cache');
    const file = path.join(dataDir, 'nmdc.sqlite');
    const mb = Math.round(fs.statSync(file).size / 2 ** 20);
    expect(starting).toMatchObject({ level: 30, file, mb });
    expect(read).toMatchObject({ level: 30, file, mb, ms: expect.any(Number) });
    // By the primary, once: server processes replaced later do not read it again.
    expect(read!.pid).toBe(Number(logLines('listening; docs at')[0]?.pid));
    expect(logLines('into the OS cache')).toHaveLength(2);
  });

  it('keeps the store private: DATA_DIR 0700, its database and credentials files 0600', () => {
    const mode = (p: string) => (fs.statSync(p).mode & 0o777).toString(8);
    expect(mode(dataDir)).toBe('700');
    const files = fs.readdirSync(dataDir);
    expect(files).toEqual(expect.arrayContaining(['nmdc.sqlite', 'admin-credentials.txt']));
    for (const file of files) expect(`${file} ${mode(path.join(dataDir, file))}`).toBe(`${file} 600`);
  });

  it('fails with a non-zero exit and a message naming the port when the port is in use', async () => {
    const taken = net.createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => taken.listen(port, '127.0.0.1', resolve));
    try {
      const second = spawnServer({ DATA_DIR: path.join(root, 'second'), WORKERS: '1' }, port);
      const code = await second.exited;
      expect(code).toBe(1);
      expect(second.stderr()).toContain(`Start-up failed: port ${port} on 127.0.0.1 is already in use`);
    } finally {
      taken.close();
    }
  }, 90_000);

  /**
   * `npm start` on a free port, once it answers /health. Another test may take the port between
   * freePort and the bind: a start-up that fails for that reason is tried again on another port.
   * Every wait is bounded and a failure carries npm's output.
   */
  async function npmStart(
    dir: string,
  ): Promise<{ npm: ChildProcess; exit: () => number | null | undefined }> {
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      const npm = spawn('npm', ['start', '--silent'], {
        cwd: ROOT,
        env: {
          ...process.env,
          DATA_DIR: dir,
          DEMO_DATA: 'false',
          HOST: '127.0.0.1',
          PORT: String(port),
          PUBLIC_URL: `http://127.0.0.1:${port}`,
          LOG_LEVEL: 'warn',
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      npm.stderr!.on('data', (d: Buffer) => (stderr += String(d)));
      let code: number | null | undefined;
      npm.once('exit', (c) => (code = c));
      for (const until = Date.now() + 60_000; code === undefined;) {
        const healthy = await fetch(`http://127.0.0.1:${port}/health`, {
          signal: AbortSignal.timeout(2_000),
        }).then(
          (r) => r.ok,
          () => false,
        );
        if (healthy && code === undefined) return { npm, exit: () => code };
        if (Date.now() > until) {
          signalServer(npm, 'SIGKILL');
          throw new Error(`npm start did not answer /health within 60 s: ${stderr.slice(-2000)}`);
        }
        await new Promise((r) => setTimeout(r, 200));
      }
      if (!stderr.includes('is already in use') || attempt === 3)
        throw new Error(`npm start exited (${code}): ${stderr.slice(-2000)}`);
    }
  }

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`stops every process when ${signal} is sent to npm start`, async () => {
      const { npm, exit } = await npmStart(path.join(root, `npm-${signal}`));
      const tree = processTree(npm.pid!);
      expect(tree.length).toBeGreaterThanOrEqual(3); // npm, the primary and its server process
      npm.kill(signal);
      try {
        await waitFor(() => exit() !== undefined, `npm start to exit on ${signal}`, 30_000);
        await waitFor(
          () => tree.every((pid) => !fs.existsSync(`/proc/${pid}`)),
          'every process to end',
          20_000,
        );
      } finally {
        // Not left running behind a failure.
        for (const pid of tree) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // already gone
          }
        }
      }
    }, 120_000);
  }
});
