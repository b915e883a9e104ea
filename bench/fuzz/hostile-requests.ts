/**
 * Single hostile requests against a real server process: how long each takes, what it answers,
 * how long a `GET /version` sent while it is handled waits, and whether the process survives.
 *
 *   npm run bench:hostile -- [--root <checkout>] [--cap-seconds 60] [--repeat 3]
 *
 * `--root` runs `src/main.ts` of another checkout (an older commit, to compare); the requests and
 * the measurement are this file's. A request still unanswered after `--cap-seconds` counts as
 * frozen: the server is killed and a fresh one started for the next request. Each request is sent
 * `--repeat` times: the first in a process pays one-time costs (code paths compiled, schema facts
 * read), so the best of the others is shown beside it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { form, freePort } from '../../test/reliability/process-faults.ts';

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : fallback;
};
const ROOT = path.resolve(option('--root', path.resolve(import.meta.dirname, '../..')));
const CAP_MS = Number(option('--cap-seconds', '60')) * 1000;
/** Each request is sent this many times; after the first, the best is shown too. */
const REPEAT = Number(option('--repeat', '3'));
const ADMIN = { ADMIN_USERNAME: 'hostile-admin', ADMIN_PASSWORD: 'hostile requests are tried here' };

interface Server {
  url: string;
  port: number;
  dataDir: string;
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function spawnMain(dataDir: string, port: number, env: Record<string, string> = {}): Server {
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      PORT: String(port),
      PUBLIC_URL: url,
      LOG_LEVEL: 'warn',
      ...ADMIN,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += String(d)));
  child.stderr!.on('data', (d: Buffer) => (out += String(d)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { url, port, dataDir, child, output: () => out, exited };
}

async function healthy(server: Server): Promise<Server> {
  for (let i = 0; i < 600; i++) {
    if (server.child.exitCode !== null) throw new Error(`server exited: ${server.output()}`);
    try {
      if ((await fetch(`${server.url}/health`)).ok) return server;
    } catch {
      // not yet listening
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('server did not become healthy');
}

async function stop(server: Server): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  server.child.kill('SIGKILL');
  await server.exited;
}

interface Hostile {
  name: string;
  send: (url: string, token: string, biosampleId: string) => Promise<Response>;
}

const json = (body: string, token?: string): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
  body,
});

function multipart(boundary: string, fileText: string, close: boolean): Buffer {
  const head =
    `--${boundary}\r\nContent-Disposition: form-data; name="uploaded_file"; filename="c.tsv"\r\n` +
    `Content-Type: text/tab-separated-values\r\n\r\n`;
  return Buffer.from(head + fileText + (close ? `\r\n--${boundary}--\r\n` : ''));
}

const changesheet = (boundary: string, text: string, close = true): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
  body: new Uint8Array(multipart(boundary, text, close)),
});

const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const baitText = `${'a'.repeat(30)}!`;

/** An aggregation over one biosample with `stages` after a first `$limit`. */
function aggregation(name: string, stages: unknown[]): Hostile {
  return {
    name: `aggregate, ${name}`,
    send: (url, token) =>
      fetch(
        `${url}/queries:run`,
        json(JSON.stringify({ aggregate: 'biosample_set', pipeline: [{ $limit: 1 }, ...stages] }), token),
      ),
  };
}

const HOSTILE: Hostile[] = [
  {
    name: 'changesheets:validate, multipart ending inside the file part',
    send: (url) => fetch(`${url}/metadata/changesheets:validate`, changesheet('b0undary', 'id\tac', false)),
  },
  {
    name: 'json:validate, geo_loc_name 2,400 x "a"',
    send: (url) =>
      fetch(
        `${url}/metadata/json:validate`,
        json(
          JSON.stringify({
            biosample_set: [
              {
                id: 'nmdc:bsm-11-hostile1',
                type: 'nmdc:Biosample',
                // The slot's pattern applies to a string (a TextValue object skips it).
                geo_loc_name: 'a'.repeat(2400),
              },
            ],
          }),
        ),
      ),
  },
  {
    name: 'changesheets:validate, ph = 80,000 digits then "x"',
    send: (url, _token, id) =>
      fetch(
        `${url}/metadata/changesheets:validate`,
        changesheet('b0undary', `id\taction\tattribute\tvalue\n${id}\tupdate\tph\t${'1'.repeat(80_000)}x\n`),
      ),
  },
  {
    name: 'finds, compact filter depth:>(16,000 digits)x',
    send: (url) => fetch(`${url}/biosamples?filter=depth:>${'1'.repeat(16_000)}x`),
  },
  aggregation('$regex "^(a+)+$" in a $match after the first stage', [
    { $addFields: { x: baitText } },
    { $match: { x: { $regex: '^(a+)+$' } } },
  ]),
  aggregation('$regexMatch "^(a+)+$" in $addFields', [
    { $addFields: { x: { $regexMatch: { input: baitText, regex: '^(a+)+$' } } } },
  ]),
  aggregation('$regexFindAll with an empty match', [
    { $addFields: { x: { $regexFindAll: { input: 'abc', regex: 'x*' } } } },
  ]),
  aggregation('$dateFromString format "%Y(a+)+%m%d"', [
    { $addFields: { x: { $dateFromString: { dateString: `2020${baitText}0101`, format: '%Y(a+)+%m%d' } } } },
  ]),
  {
    name: 'json:validate, body nested 10,000 levels',
    send: (url) =>
      fetch(`${url}/metadata/json:validate`, json(`{"biosample_set":[{"id":"x","a":${nested(10_000)}}]}`)),
  },
  {
    name: 'json:submit, body nested 10,000 levels',
    send: (url, token) =>
      fetch(
        `${url}/metadata/json:submit`,
        json(`{"biosample_set":[{"id":"x","a":${nested(10_000)}}]}`, token),
      ),
  },
  {
    name: 'queries:run, body nested 10,000 levels',
    send: (url, token) =>
      fetch(`${url}/queries:run`, json(`{"find":"biosample_set","filter":${nested(10_000)}}`, token)),
  },
];

async function login(url: string): Promise<string> {
  const res = await fetch(
    `${url}/token`,
    form({ grant_type: 'password', username: ADMIN.ADMIN_USERNAME, password: ADMIN.ADMIN_PASSWORD }),
  );
  return ((await res.json()) as { access_token: string }).access_token;
}

/** `GET /version` again and again while `pending` is unsettled; the longest wait. */
async function probeWhile(url: string, pending: Promise<unknown>): Promise<number> {
  let done = false;
  void pending.finally(() => (done = true)).catch(() => undefined);
  let worst = 0;
  await new Promise((r) => setTimeout(r, 10));
  do {
    const t0 = performance.now();
    try {
      await fetch(`${url}/version`, { signal: AbortSignal.timeout(CAP_MS) });
    } catch {
      // refused or reset: the process is gone
    }
    worst = Math.max(worst, performance.now() - t0);
  } while (!done);
  return worst;
}

async function fresh(): Promise<{ server: Server; token: string; biosampleId: string }> {
  // A folder the server creates itself, so its mode is the server's choice.
  const dataDir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-hostile-')), 'data');
  const server = await healthy(spawnMain(dataDir, await freePort(), { DEMO_DATA: 'true' }));
  const token = await login(server.url);
  const page = (await (await fetch(`${server.url}/biosamples?per_page=1`)).json()) as {
    results: Array<{ id: string }>;
  };
  return { server, token, biosampleId: page.results[0]!.id };
}

const pad = (s: string, n: number) => (s.length >= n ? s : s + ' '.repeat(n - s.length));

async function main(): Promise<void> {
  const head = spawnSync('git', ['-C', ROOT, 'log', '--oneline', '-1'], { encoding: 'utf8' }).stdout.trim();
  process.stdout.write(`server: ${ROOT} (${head})\ncap per request: ${CAP_MS / 1000} s\n\n`);
  process.stdout.write(
    `${pad('request', 66)} ${pad('answer', 34)} ${pad('took', 10)} ${pad('/version waited', 16)} ${pad('again: took / waited', 20)} process\n`,
  );
  let state = await fresh();
  for (const hostile of HOSTILE) {
    const once = async () => {
      const t0 = performance.now();
      const sent = Promise.race([
        hostile.send(state.server.url, state.token, state.biosampleId).then(async (res) => {
          const text = await res.text();
          let detail = text;
          try {
            const body = JSON.parse(text) as { detail?: unknown; result?: unknown };
            detail = JSON.stringify(body.detail ?? body.result ?? body);
          } catch {
            // not JSON
          }
          return `${res.status} ${detail.slice(0, 28)}`;
        }),
        new Promise<string>((resolve) => setTimeout(() => resolve('no answer (capped)'), CAP_MS)),
      ]).catch((err: Error) => `no answer (${(err.cause as Error | undefined)?.message ?? err.message})`);
      const waited = await probeWhile(state.server.url, sent);
      return { answer: await sent, took: performance.now() - t0, waited };
    };
    // The first of its kind in a fresh process pays one-time costs; again, it shows its own.
    const first = await once();
    const again = [];
    for (let i = 1; i < REPEAT && !first.answer.startsWith('no answer'); i++) again.push(await once());
    const warm = again.sort((a, b) => a.waited - b.waited)[0];
    const { answer, took, waited } = first;
    await new Promise((r) => setTimeout(r, 300));
    let alive = state.server.child.exitCode === null;
    if (alive) {
      try {
        alive = (await fetch(`${state.server.url}/health`, { signal: AbortSignal.timeout(2000) })).ok;
      } catch {
        alive = false;
      }
    }
    process.stdout.write(
      `${pad(hostile.name, 66)} ${pad(answer.replace(/\s+/g, ' '), 34)} ${pad(`${(took / 1000).toFixed(2)} s`, 10)} ` +
        `${pad(`${Math.round(waited)} ms`, 16)} ${pad(warm ? `${(warm.took / 1000).toFixed(2)} s / ${Math.round(warm.waited)} ms` : '-', 20)} ${alive ? 'serving' : state.server.child.exitCode !== null ? `exited (${state.server.child.exitCode})` : 'unresponsive'}\n`,
    );
    if (!alive || answer.startsWith('no answer')) {
      await stop(state.server);
      fs.rmSync(path.dirname(state.server.dataDir), { recursive: true, force: true });
      state = await fresh();
    }
  }

  // A second start on a port in use.
  const dataDir2 = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-hostile-'));
  const second = spawnMain(dataDir2, state.server.port, { DEMO_DATA: 'false', LOG_LEVEL: 'info' });
  const code = await Promise.race([
    second.exited,
    new Promise<string>((r) => setTimeout(() => r('still running after 30 s'), 30_000)),
  ]);
  const said =
    second
      .output()
      .split('\n')
      .filter((l) => /Start-up failed|EADDRINUSE|"msg":"listening/.test(l))[0] ?? '';
  process.stdout.write(
    `\nsecond start on port ${state.server.port}: exit ${code}; says: ${said.slice(0, 160)}\n`,
  );
  await stop(second);

  // Modes of the store's files.
  const mode = (p: string) => (fs.existsSync(p) ? (fs.statSync(p).mode & 0o777).toString(8) : 'absent');
  process.stdout.write(
    `DATA_DIR ${mode(state.server.dataDir)}, nmdc.sqlite ${mode(path.join(state.server.dataDir, 'nmdc.sqlite'))}` +
      `, admin-credentials.txt ${mode(path.join(state.server.dataDir, 'admin-credentials.txt'))}\n`,
  );
  await stop(state.server);
  fs.rmSync(path.dirname(state.server.dataDir), { recursive: true, force: true });
  fs.rmSync(dataDir2, { recursive: true, force: true });
}

await main();
