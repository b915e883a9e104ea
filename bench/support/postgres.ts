/**
 * PostgreSQL as the benchmarks' peer: a private cluster in a temporary folder, listening on
 * 127.0.0.1 only (its unix socket in that folder), loaded with COPY and queried through the wire
 * protocol with the `pg` client, then stopped and removed (also when the run fails or is
 * interrupted). `findPostgres()` answers undefined when no PostgreSQL with pg_trgm is installed,
 * and the benchmarks then measure our side only.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import pg from 'pg';
import { timedRuns } from './embedded.ts';

export interface PostgresInstallation {
  /** Folder of initdb, pg_ctl and postgres. */
  binDir: string;
  /** `postgres --version`, e.g. "postgres (PostgreSQL) 15.14 (Debian 15.14-0+deb12u1)". */
  version: string;
}

function executable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Binary folders to try: PG_BINDIR, Debian's versioned folders (15 first), then pg_config's. */
function candidateBinDirs(): string[] {
  const dirs: string[] = [];
  if (process.env.PG_BINDIR) dirs.push(process.env.PG_BINDIR);
  const debian = '/usr/lib/postgresql';
  if (fs.existsSync(debian)) {
    const versions = fs
      .readdirSync(debian)
      .filter((v) => /^\d+$/.test(v))
      .sort((a, b) => (a === '15' ? -1 : b === '15' ? 1 : Number(b) - Number(a)));
    dirs.push(...versions.map((v) => path.join(debian, v, 'bin')));
  }
  try {
    dirs.push(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim());
  } catch {
    // no pg_config on PATH
  }
  return dirs;
}

/** The installed PostgreSQL whose pg_trgm extension is present too, or undefined. */
export function findPostgres(): PostgresInstallation | undefined {
  for (const binDir of candidateBinDirs()) {
    if (!['initdb', 'pg_ctl', 'postgres'].every((b) => executable(path.join(binDir, b)))) continue;
    try {
      // Without pg_config the extension's presence is left for CREATE EXTENSION to tell.
      if (executable(path.join(binDir, 'pg_config'))) {
        const shareDir = execFileSync(path.join(binDir, 'pg_config'), ['--sharedir'], {
          encoding: 'utf8',
        }).trim();
        if (!fs.existsSync(path.join(shareDir, 'extension', 'pg_trgm.control'))) continue;
      }
      const version = execFileSync(path.join(binDir, 'postgres'), ['--version'], { encoding: 'utf8' }).trim();
      return { binDir, version };
    } catch {
      continue;
    }
  }
  return undefined;
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export interface PostgresCluster {
  install: PostgresInstallation;
  port: number;
  /** A connected client (database `postgres`, user `bench`, pg_trgm created). */
  client: pg.Client;
  /** Server settings that shape the figures, for the report. */
  settings: Record<string, string>;
  /** Stops the server and removes its folder; safe to call twice. */
  stop(): Promise<void>;
}

/**
 * initdb refuses to run as root, so as root every server command runs as the `postgres` user
 * (owner of the temporary folder); otherwise as ourselves.
 */
function serverCommand(binDir: string, program: string, args: string[]): [string, string[]] {
  const file = path.join(binDir, program);
  return process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', file, ...args]] : [file, args];
}

/**
 * A shell outside our process group that stops the cluster and removes its folder once this
 * process is gone, however it went: tsx answers a Ctrl-C that lands while the event loop is busy
 * (a load batch) with SIGKILL after 60 ms, before any handler of ours can run.
 */
function startWatchdog(binDir: string, folder: string, dataDir: string): ChildProcess {
  const [file, args] = serverCommand(binDir, 'pg_ctl', ['stop', '-D', dataDir, '-m', 'fast', '-w']);
  const script = [
    'while kill -0 "$1" 2>/dev/null; do sleep 1; done',
    'shift; folder="$1"; shift',
    '[ -f "$folder/data/postmaster.pid" ] && "$@" >/dev/null 2>&1',
    'rm -rf "$folder"',
  ].join('\n');
  const child = spawn(
    'sh',
    ['-c', script, 'nmdc-bench-pg-watchdog', String(process.pid), folder, file, ...args],
    {
      detached: true,
      stdio: 'ignore',
    },
  );
  child.unref();
  return child;
}

/** Creates, starts and connects to a private cluster; `stop()` (or process exit) removes it. */
export async function startPostgres(install: PostgresInstallation): Promise<PostgresCluster> {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-bench-pg-'));
  const dataDir = path.join(folder, 'data');
  const run = (program: string, args: string[]) => {
    const [file, argv] = serverCommand(install.binDir, program, args);
    return execFileSync(file, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  };
  let running = false;
  let removed = false;
  // Synchronous, so it also runs from the 'exit' event and the signal handlers.
  const removeSync = () => {
    if (removed) return;
    removed = true;
    if (running) {
      try {
        run('pg_ctl', ['stop', '-D', dataDir, '-m', 'fast', '-w', '-t', '60']);
      } catch {
        try {
          run('pg_ctl', ['stop', '-D', dataDir, '-m', 'immediate', '-w', '-t', '30']);
        } catch {
          // already gone (an interrupt reaches the whole process group)
        }
      }
      running = false;
    }
    fs.rmSync(folder, { recursive: true, force: true });
  };
  // Deferred a moment: under tsx the event loop must first pass the signal on to the parent
  // process, which otherwise kills this one before the cluster is stopped.
  const onSignal = (signal: NodeJS.Signals) => {
    console.error(`\n${signal}: stopping PostgreSQL and removing ${folder}`);
    setTimeout(() => {
      removeSync();
      process.exit(signal === 'SIGINT' ? 130 : 143);
    }, 100);
  };
  process.on('exit', removeSync);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const watchdog = startWatchdog(install.binDir, folder, dataDir);
  const detach = () => {
    process.off('exit', removeSync);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    watchdog.kill();
  };

  try {
    // Other users of the machine reach 127.0.0.1 too: TCP logins need a password made for this run.
    const password = randomBytes(18).toString('base64url');
    const passwordFile = path.join(folder, 'password');
    fs.writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
    if (process.getuid?.() === 0) {
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }));
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }));
      fs.chownSync(folder, uid, gid);
      fs.chownSync(passwordFile, uid, gid);
    }
    // C locale: text sorts byte-wise, as our ids do.
    run('initdb', [
      '-D',
      dataDir,
      '-U',
      'bench',
      `--pwfile=${passwordFile}`,
      '--auth-local=trust',
      '--auth-host=scram-sha-256',
      '--encoding=UTF8',
      '--locale=C',
      '--no-sync',
    ]);
    fs.rmSync(passwordFile);
    const port = await freePort();
    fs.appendFileSync(
      path.join(dataDir, 'postgresql.conf'),
      [
        '',
        '# nmdc bench: private, loopback only',
        "listen_addresses = '127.0.0.1'",
        `port = ${port}`,
        `unix_socket_directories = '${folder}'`,
        '',
      ].join('\n'),
    );
    run('pg_ctl', ['start', '-D', dataDir, '-l', path.join(folder, 'server.log'), '-w', '-t', '60']);
    running = true;
    const client = new pg.Client({ host: '127.0.0.1', port, user: 'bench', password, database: 'postgres' });
    await client.connect();
    await client.query('CREATE EXTENSION pg_trgm');
    const settings: Record<string, string> = {};
    const shown = await client.query<{ name: string; setting: string }>(
      `SELECT name, current_setting(name) AS setting FROM pg_settings
        WHERE name IN ('shared_buffers', 'work_mem', 'maintenance_work_mem', 'max_parallel_workers_per_gather',
                       'max_parallel_maintenance_workers', 'synchronous_commit', 'fsync')`,
    );
    for (const r of shown.rows) settings[r.name] = r.setting;
    return {
      install,
      port,
      client,
      settings,
      stop: async () => {
        await client.end().catch(() => undefined);
        removeSync();
        detach();
      },
    };
  } catch (err) {
    const log = path.join(folder, 'server.log');
    if (fs.existsSync(log)) console.error(fs.readFileSync(log, 'utf8').slice(-2000));
    removeSync();
    detach();
    throw err;
  }
}

/** What `pg` does with a query object: the parts of its connection COPY FROM STDIN needs. */
interface CopyConnection {
  query(text: string): void;
  sendCopyFromChunk(chunk: Buffer): void;
  endCopyFrom(): void;
  sendCopyFail(message: string): void;
  stream: NodeJS.WritableStream & { writableNeedDrain?: boolean };
}

/** COPY's text format: backslash, tab, newline and carriage return escaped. */
export function copyField(value: string): string {
  return value.replace(/[\\\t\n\r]/g, (c) =>
    c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r',
  );
}

/**
 * `COPY ... FROM STDIN` fed from `lines` (each a row in COPY text format, ending in a newline),
 * in chunks of about 256 KiB, waiting for the socket to drain. Resolves with the rows copied.
 */
export function copyFrom(client: pg.Client, sql: string, lines: Iterable<string>): Promise<number> {
  return new Promise((resolve, reject) => {
    let rows = 0;
    let failure: Error | undefined;
    const pump = async (connection: CopyConnection) => {
      try {
        let chunk: string[] = [];
        let length = 0;
        for (const line of lines) {
          chunk.push(line);
          length += line.length;
          if (length >= 256 * 1024) {
            connection.sendCopyFromChunk(Buffer.from(chunk.join('')));
            chunk = [];
            length = 0;
            if (connection.stream.writableNeedDrain) await once(connection.stream, 'drain');
          }
        }
        if (chunk.length) connection.sendCopyFromChunk(Buffer.from(chunk.join('')));
        connection.endCopyFrom();
      } catch (err) {
        failure = err as Error;
        connection.sendCopyFail(String(failure.message));
      }
    };
    const submittable = {
      submit: (connection: CopyConnection) => connection.query(sql),
      handleCopyInResponse: (connection: CopyConnection) => void pump(connection),
      handleCommandComplete: (msg: { text: string }) => {
        rows = Number(/(\d+)$/.exec(msg.text)?.[1] ?? 0);
      },
      handleError: (err: Error) => {
        failure ??= err;
      },
      handleReadyForQuery: () => (failure ? reject(failure) : resolve(rows)),
      handleCopyData: () => undefined,
      handleRowDescription: () => undefined,
      handleDataRow: () => undefined,
      handleEmptyQuery: () => undefined,
      handlePortalSuspended: () => undefined,
    };
    client.query(submittable as unknown as pg.Submittable);
  });
}

/** Every column as the text PostgreSQL sent, so timings leave out client-side JSON parsing. */
const rawText = { getTypeParser: () => (value: string) => value } as unknown as pg.CustomTypesConfig;

/**
 * Sequential timings (ms) of one prepared statement with `values`: `count` runs, or as many as
 * fit in `seconds` (at least 10), so a slow shape does not hold the run for minutes.
 */
export async function timePrepared(
  client: pg.Client,
  name: string,
  text: string,
  values: unknown[],
  count: number,
  seconds = Infinity,
): Promise<number[]> {
  return timedRuns(count, seconds, async () => {
    await client.query({ name, text, values, types: rawText });
  });
}
