/**
 * `npm run bench:export -- [--biosamples 1000000] [--formats ndjson,json,csv,tsv] [--no-peer]`
 *
 * Streams `GET /export/biosample_set` from a server process over generated biosamples, once per
 * format, and prints for each the bytes, MB/s and the server's resident memory: before, peak and
 * along the way (flat memory means the peak stays near the start whatever the size). Beside it,
 * what the machine and a peer do with the same records: reading the NDJSON from a file (the raw
 * read rate; the first run's bytes, saved), and, when PostgreSQL is installed, `COPY (SELECT doc
 * ...) TO STDOUT` of the same records held as jsonb in a private cluster (bench/support/postgres.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { flag, startBenchServer } from '../support/embedded.ts';
import { copyField, copyFrom, findPostgres, startPostgres } from '../support/postgres.ts';
import { generateRecords } from '../../src/data/generator.ts';
import { EXPORT_FORMATS, type ExportFormat } from '../../src/metadata/export.ts';

const biosamples = flag('biosamples', 1_000_000);
const formatsArg = process.argv.indexOf('--formats');
const formats = (
  formatsArg >= 0 ? process.argv[formatsArg + 1]!.split(',') : [...EXPORT_FORMATS]
) as ExportFormat[];
const withPeer = !process.argv.includes('--no-peer');
const options = { studies: Math.max(1, Math.round(biosamples / 1000)), biosamples, dataObjects: 0, seed: 7 };

const MB = 1e6;
const mib = (n: number) => `${n.toFixed(0)} MiB`;

interface Run {
  label: string;
  bytes: number;
  seconds: number;
  rssBefore?: number;
  rssPeak?: number;
  /** RSS at 10 %, 50 % and 90 % of the bytes. */
  rssAlong?: number[];
}

function line(run: Run): string {
  const rate = run.bytes / MB / run.seconds;
  const memory =
    run.rssPeak === undefined
      ? ''
      : `  server RSS ${mib(run.rssBefore!)} -> peak ${mib(run.rssPeak)} (at 10/50/90 %: ${run.rssAlong!.map(mib).join(', ')})`;
  return `${run.label.padEnd(34)} ${(run.bytes / MB).toFixed(0).padStart(6)} MB in ${run.seconds.toFixed(1).padStart(5)} s = ${rate.toFixed(0).padStart(4)} MB/s${memory}`;
}

/** Streams one export, reading as fast as the socket delivers, sampling the server's memory. */
async function exportOnce(
  url: string,
  format: ExportFormat,
  memory: () => { rss: number },
  save?: string,
): Promise<Run> {
  const rssBefore = memory().rss;
  let rssPeak = rssBefore;
  const marks: number[] = [];
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, memory().rss)), 100);
  const out = save ? fs.createWriteStream(save) : undefined;
  const started = performance.now();
  let bytes = 0;
  try {
    const res = await fetch(`${url}/export/biosample_set?format=${format}`);
    if (!res.ok) throw new Error(`export ${format}: ${res.status} ${await res.text()}`);
    const expected = biosamples * 1300;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      bytes += chunk.length;
      if (out && !out.write(chunk)) await new Promise<void>((r) => out.once('drain', () => r()));
      while (marks.length < 3 && bytes >= expected * [0.1, 0.5, 0.9][marks.length]!) marks.push(memory().rss);
    }
  } finally {
    clearInterval(sampler);
    if (out) await new Promise<void>((r) => out.end(() => r()));
  }
  const seconds = (performance.now() - started) / 1000;
  return { label: `ours: GET /export ${format}`, bytes, seconds, rssBefore, rssPeak, rssAlong: marks };
}

/** Reads a file as fast as Node can: the machine's raw read rate for those bytes. */
async function readFile(file: string): Promise<Run> {
  const started = performance.now();
  let bytes = 0;
  for await (const chunk of fs.createReadStream(file, { highWaterMark: 1 << 20 }))
    bytes += (chunk as Buffer).length;
  return { label: 'raw: read the NDJSON file', bytes, seconds: (performance.now() - started) / 1000 };
}

/** `COPY ... TO STDOUT`, counting the bytes PostgreSQL sends. */
function copyTo(client: pg.Client, sql: string): Promise<number> {
  return new Promise((resolve, reject) => {
    let bytes = 0;
    let failure: Error | undefined;
    const submittable = {
      submit: (connection: { query(text: string): void }) => connection.query(sql),
      handleCopyOutResponse: () => undefined,
      handleCopyData: (msg: { chunk: Buffer }) => void (bytes += msg.chunk.length),
      handleCommandComplete: () => undefined,
      handleError: (err: Error) => void (failure ??= err),
      handleReadyForQuery: () => (failure ? reject(failure) : resolve(bytes)),
      handleRowDescription: () => undefined,
      handleDataRow: () => undefined,
      handleEmptyQuery: () => undefined,
      handlePortalSuspended: () => undefined,
    };
    client.query(submittable as unknown as pg.Submittable);
  });
}

async function peer(): Promise<Run[]> {
  const install = findPostgres();
  if (!install) {
    console.log('PostgreSQL not found (Debian package `postgresql`, or PG_BINDIR): peer skipped');
    return [];
  }
  const cluster = await startPostgres(install);
  try {
    const { client } = cluster;
    await client.query('CREATE UNLOGGED TABLE biosample_set (id text PRIMARY KEY, doc jsonb NOT NULL)');
    const loadStarted = performance.now();
    function* rows(): Generator<string> {
      for (const { collection, doc } of generateRecords(options))
        if (collection === 'biosample_set') yield `${copyField(doc.id)}\t${copyField(JSON.stringify(doc))}\n`;
    }
    const copied = await copyFrom(client, 'COPY biosample_set (id, doc) FROM STDIN', rows());
    await client.query('VACUUM ANALYZE biosample_set');
    console.log(
      `peer: ${install.version}: ${copied} rows copied in ${((performance.now() - loadStarted) / 1000).toFixed(1)} s`,
    );
    const runs: Run[] = [];
    for (const [label, sql] of [
      ['peer: COPY jsonb TO STDOUT (text)', 'COPY (SELECT doc FROM biosample_set ORDER BY id) TO STDOUT'],
      [
        'peer: COPY jsonb TO STDOUT (csv)',
        'COPY (SELECT doc FROM biosample_set ORDER BY id) TO STDOUT WITH (FORMAT csv)',
      ],
    ] as const) {
      const started = performance.now();
      const bytes = await copyTo(client, sql);
      runs.push({ label, bytes, seconds: (performance.now() - started) / 1000 });
    }
    return runs;
  } finally {
    await cluster.stop();
  }
}

async function main(): Promise<void> {
  console.log(
    `bench:export: ${biosamples.toLocaleString('en-US')} biosamples, formats ${formats.join(', ')}; ` +
      `${os.cpus().length} cores, Node ${process.version}`,
  );
  const server = await startBenchServer(options, { workers: 1 });
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-bench-export-'));
  const ndjsonFile = path.join(scratch, 'biosample_set.ndjson');
  const runs: Run[] = [];
  try {
    console.log(
      `loaded ${server.records.toLocaleString('en-US')} records in ${server.loadSeconds.toFixed(1)} s`,
    );
    const memory = server.memory!;
    for (const format of formats) {
      const run = await exportOnce(server.url, format, memory, format === 'ndjson' ? ndjsonFile : undefined);
      console.log(line(run));
      runs.push(run);
    }
    if (fs.existsSync(ndjsonFile)) {
      const raw = await readFile(ndjsonFile);
      console.log(line(raw));
      runs.push(raw);
    }
  } finally {
    await server.close();
    fs.rmSync(scratch, { recursive: true, force: true });
  }
  if (withPeer) for (const run of await peer()) console.log(line(run));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
