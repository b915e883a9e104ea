/**
 * `npm run generate-data -- --studies N --biosamples N --data-objects N [--seed S]
 *   [--largest-study-biosamples N] [--out FILE]`
 * Writes seeded NMDC Database JSON (gzip when FILE ends in .gz; stdout without --out),
 * streamed so a million data objects never sit in memory. `--largest-study-biosamples` skews
 * study sizes: the largest study holds N biosamples, the others share the rest Zipf-like.
 */
import fs from 'node:fs';
import path from 'node:path';
import { once } from 'node:events';
import { createGzip } from 'node:zlib';
import type { Writable } from 'node:stream';
import {
  biosampleCountsByStudy,
  databaseJsonChunks,
  generateRecords,
  plannedCounts,
  type GenerateOptions,
} from '../data/generator.ts';
import { asksForHelp } from './usage.ts';
import { RecordProgress } from './progress.ts';

const USAGE = `usage: npm run generate-data -- --studies N --biosamples N --data-objects N [--seed S]
         [--largest-study-biosamples N] [--out FILE(.json|.json.gz)]

Writes generated NMDC records (studies, biosamples, their sequencing and workflow pipelines, data
objects) as NMDC Database JSON for npm run load: gzip when FILE ends in .gz, stdout without --out.
The folder of FILE is created when missing. The ids never collide with the demo data's (or with
minted ids), so a file can be loaded into a store that holds the demo.

  --studies N                   studies (default 5)
  --biosamples N                biosamples (default 100)
  --data-objects N              data objects in all, about 30 per sequenced biosample (default 300)
  --seed S                      another seed gives other records and ids (default 1)
  --largest-study-biosamples N  study 0 holds N biosamples, the others share the rest Zipf-like
  --out FILE                    where to write (.json or .json.gz)
  -h, --help                    show this help

Each N and S is digits, at most 100,000,000. Progress goes to stderr: a bar on a terminal, a
line every few seconds otherwise.
`;

/**
 * The most records of a kind one run writes (and the largest seed): 10^8 biosamples is some
 * 140 GB of JSON, beyond any store this service keeps on one machine.
 */
export const MAX_COUNT = 100_000_000;

export function parseGenerateArgs(argv: string[]): GenerateOptions & { out?: string } {
  const values: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(arg);
    if (!m) throw new Error(`unexpected argument "${arg}"\n${USAGE}`);
    const value = m[2] ?? argv[++i];
    if (value === undefined) throw new Error(`--${m[1]} needs a value\n${USAGE}`);
    values[m[1]!] = value;
  }
  const count = (name: string, fallback: number) => {
    const raw = values[name];
    delete values[name];
    if (raw === undefined) return fallback;
    const n = /^\d+$/.test(raw) ? Number(raw) : NaN;
    if (!Number.isInteger(n) || n < 0)
      throw new Error(`--${name} must be a non-negative integer, got "${raw}"`);
    if (n > MAX_COUNT)
      throw new Error(`--${name} may be at most ${MAX_COUNT.toLocaleString('en-US')}, got "${raw}"`);
    return n;
  };
  const largest =
    values['largest-study-biosamples'] === undefined ? undefined : count('largest-study-biosamples', 0);
  const options: GenerateOptions & { out?: string } = {
    idSpace: 'distinct',
    studies: count('studies', 5),
    biosamples: count('biosamples', 100),
    dataObjects: count('data-objects', 300),
    seed: count('seed', 1),
    ...(largest === undefined ? {} : { largestStudyBiosamples: largest }),
    out: values.out,
  };
  delete values.out;
  const unknown = Object.keys(values);
  if (unknown.length > 0) throw new Error(`unknown option --${unknown[0]}\n${USAGE}`);
  // A largest study too small to leave room for every biosample fails here, before any output.
  if (largest !== undefined) biosampleCountsByStudy(options);
  return options;
}

async function write(sink: Writable, options: GenerateOptions, progress: RecordProgress): Promise<void> {
  let done = 0;
  const counted = (function* () {
    for (const record of generateRecords(options)) {
      done++;
      yield record;
    }
  })();
  for (const chunk of databaseJsonChunks(counted)) {
    progress.update(done);
    if (!sink.write(chunk)) await once(sink, 'drain');
  }
  progress.update(done);
  progress.stop();
}

async function main(): Promise<void> {
  if (asksForHelp(process.argv.slice(2))) {
    process.stdout.write(USAGE);
    return;
  }
  const options = parseGenerateArgs(process.argv.slice(2));
  const started = Date.now();
  const counts = plannedCounts(options);
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  // On stderr: a bar on a terminal, a line every few seconds otherwise.
  const progress = new RecordProgress({ label: options.out ?? 'generating', total });
  if (!options.out) {
    await write(process.stdout, options, progress);
    return;
  }
  const folder = path.dirname(path.resolve(options.out));
  if (!fs.existsSync(folder)) {
    fs.mkdirSync(folder, { recursive: true });
    process.stderr.write(`created folder ${path.relative(process.cwd(), folder) || folder}\n`);
  }
  const file = fs.createWriteStream(options.out);
  const sink: Writable = options.out.endsWith('.gz') ? createGzip({ level: 6 }) : file;
  if (sink !== file) sink.pipe(file);
  await write(sink, options, progress);
  sink.end();
  await once(file, 'close');
  const seconds = (Date.now() - started) / 1000;
  process.stderr.write(
    `wrote ${options.out}: ${Object.entries(counts)
      .map(([c, n]) => `${c}=${n}`)
      .join(
        ' ',
      )} (${total} records in ${seconds.toFixed(1)} s, ${Math.round(total / Math.max(seconds, 0.001))} records/s)\n`,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err) => {
    // The reader of stdout stopped reading (`generate-data | head`): it has what it wanted.
    if ((err as { code?: unknown }).code === 'EPIPE') process.exit(0);
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
