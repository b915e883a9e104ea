/**
 * The metadata read workload of `npm run bench:load`, shared with benchmarks that measure other
 * traffic beside it: generated NMDC records loaded into a fresh data folder, and the rotating
 * read paths (by-id, schema by-id, compact finds, schema finds, text searches) over real ids.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import autocannon from 'autocannon';
import { root, tsxNode } from './server-process.ts';

export interface LoadedData {
  dataDir: string;
  /** Seconds spent generating and loading. */
  seconds: number;
}

function run(args: string[], env: NodeJS.ProcessEnv): void {
  const r = spawnSync(process.execPath, [...tsxNode, ...args], {
    cwd: root,
    env,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}`);
}

/** `biosamples` generated biosamples (with studies and data objects) loaded into a new data folder. */
export function loadReadData(biosamples: number, prefix = 'nmdc-load-'): LoadedData {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const env = { ...process.env, DATA_DIR: dataDir, DEMO_DATA: 'false', LOG_LEVEL: 'warn' };
  const file = path.join(dataDir, 'records.json.gz');
  const t0 = performance.now();
  const studies = Math.max(1, Math.round(biosamples / 1000));
  run(
    [
      'src/cli/generate-data.ts',
      '--studies',
      String(studies),
      '--biosamples',
      String(biosamples),
      '--data-objects',
      String(biosamples / 5),
      '--seed',
      '11',
      '--out',
      file,
    ],
    env,
  );
  run(['src/cli/load.ts', file], env);
  return { dataDir, seconds: (performance.now() - t0) / 1000 };
}

/** The rotating read paths, built from real ids and studies of the running service at `url`. */
export async function readPaths(url: string): Promise<string[]> {
  const sample = (await (
    await fetch(`${url}/biosamples?per_page=200&fields=id,name,associated_studies`)
  ).json()) as {
    results: Array<{ id: string; name?: string; associated_studies?: string[] }>;
  };
  const ids = sample.results.map((r) => r.id);
  const names = sample.results.map((r) => r.name ?? 'soil');
  const studyIds = [...new Set(sample.results.flatMap((r) => r.associated_studies ?? []))];
  const paths: string[] = [];
  for (let i = 0; i < 200; i++) {
    const id = encodeURIComponent(ids[i % ids.length]!);
    const study = encodeURIComponent(studyIds[i % studyIds.length]!);
    paths.push(
      `/biosamples/${id}`,
      `/nmdcschema/ids/${id}`,
      `/biosamples?filter=associated_studies:${study}&per_page=25`,
      `/biosamples?filter=ecosystem_category:Terrestrial,depth.has_numeric_value:>${i % 10}&per_page=10`,
      `/nmdcschema/biosample_set?filter=${encodeURIComponent(JSON.stringify({ associated_studies: studyIds[i % studyIds.length] }))}&max_page_size=10`,
      `/studies?filter=name.search:soil&per_page=5`,
      // Selective text searches (a sample's name); broad terms are measured in docs/RELIABILITY.md.
      `/biosamples?filter=name.search:${encodeURIComponent(names[i % names.length]!.replace(/,/g, ' '))}&per_page=10`,
    );
  }
  return paths;
}

export interface ReadRun {
  result: autocannon.Result;
  /** Responses by status code. */
  statuses: Map<number, number>;
  /** Requests per second achieved. */
  achieved: number;
  /** Each response: when it came (ms since the run started) and how long it took (ms). */
  responses?: Array<{ at: number; ms: number }>;
}

/** Sends the rotating `paths` at `rate` requests per second for `seconds`, counting statuses. */
export async function runReads(
  url: string,
  paths: string[],
  options: { rate: number; seconds: number; connections: number },
): Promise<ReadRun> {
  let i = 0;
  const statuses = new Map<number, number>();
  const responses: NonNullable<ReadRun['responses']> = [];
  const started = performance.now();
  const instance = autocannon({
    url,
    connections: options.connections,
    overallRate: options.rate,
    duration: options.seconds,
    timeout: 10,
    requests: [{ setupRequest: (r: any) => ({ ...r, path: paths[i++ % paths.length] }) }],
  });
  (instance as unknown as NodeJS.EventEmitter).on(
    'response',
    (_c: unknown, status: number, _bytes: number, ms: number) => {
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      responses.push({ at: performance.now() - started, ms });
    },
  );
  const result = await instance;
  return { result, statuses, achieved: result.requests.total / options.seconds, responses };
}

/** Every path twice, so page caches, prepared statements and cached counts exist before a reading. */
export async function warmReads(url: string, paths: string[]): Promise<void> {
  let w = 0;
  await autocannon({
    url,
    connections: 8,
    amount: paths.length * 2,
    requests: [{ setupRequest: (r: any) => ({ ...r, path: paths[w++ % paths.length] }) }],
  });
}
