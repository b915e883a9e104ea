/**
 * `npm run load -- [--no-validate] FILE...` loads NMDC Database JSON (`.json`, `.json.gz`) or JSON
 * lines of one collection (`biosample_set.jsonl[.gz]`) into the configured store and search index,
 * with progress, a per-collection summary and a rate. By default the files are checked first, all
 * together, against the NMDC schema and for references, and nothing is written unless every record
 * passes (see USAGE).
 */
import fs from 'node:fs';
import { createGunzip } from 'node:zlib';
import { createLogger } from '../logger.ts';
import { loadConfig } from '../config.ts';
import { openAdapters } from '../adapters.ts';
import { loadRecords, type LoadSummary } from '../data/loader.ts';
import { checkInputs, type RejectedRecord } from '../data/record-checks.ts';
import { formatOfFile } from '../data/record-reader.ts';
import { SCHEMA_VERSION } from '../schema/nmdc.ts';
import { RecordProgress, uncompressedSize } from './progress.ts';

const PROGRESS_LINE_EVERY_MS = 5000;

const USAGE = `usage: load [--no-validate] FILE...

Loads NMDC records into the configured store (DATA_DIR, or MONGO_URL) and search index. Each FILE
is NMDC Database JSON ({"study_set": [...], ...}; .json or .json.gz) or JSON lines of the
collection its name says (biosample_set.jsonl[.gz]). Records are upserted by id: a record whose
id is stored replaces it. A Database file must be one JSON object whose values are arrays of
records (or null, or the @type "Database"); anything else stops the load, naming the file and
line. A record of more than 64 MiB of JSON is reported and skipped.

By default the files are first checked, all together, as POST /metadata/json:validate checks a
payload: every record against the NMDC schema ${SCHEMA_VERSION} (the JSON Schema of its class), then
every id a record references must be in one of the files or already stored, in a collection the
schema allows. If any record fails, each problem is reported with its file, collection, index in
the collection and id, and NOTHING is written (exit status 1): fix the files and load them again.

  --no-validate   skip the schema and reference checks; only ids and collection names are
                  checked, and bad records are reported and skipped while the others load.
  --no-bulk       write every batch with its index entries (the transactional path) even
                  when a large load into an empty collection would build the indexes at the end.
  -h, --help      show this help.
`;

const openInput = (file: string) => {
  const raw = fs.createReadStream(file, { highWaterMark: 1 << 20 });
  return file.endsWith('.gz') ? raw.pipe(createGunzip()) : raw;
};

const rejectionLine = (r: RejectedRecord) =>
  `rejected ${r.source} ${r.position}${r.id === undefined ? '' : ` ${r.id}`}: ${r.reason}\n`;

async function main(args: string[]): Promise<number> {
  if (args.includes('-h') || args.includes('--help')) {
    process.stdout.write(USAGE);
    return 0;
  }
  const validate = !args.includes('--no-validate');
  const bulk = !args.includes('--no-bulk');
  const unknown = args.filter((a) => a.startsWith('-') && a !== '--no-validate' && a !== '--no-bulk');
  const files = args.filter((a) => !a.startsWith('-'));
  if (files.length === 0 || unknown.length > 0) {
    if (unknown.length > 0) process.stderr.write(`unknown option: ${unknown.join(' ')}\n`);
    process.stderr.write(USAGE);
    return 2;
  }
  for (const file of files) if (!fs.existsSync(file)) throw new Error(`no such file: ${file}`);
  const config = loadConfig();
  const logger = createLogger(
    { level: process.env.LOG_LEVEL || 'warn', format: config.logFormat },
    process.stderr,
  );
  const { store, searchIndex, edgeIndex } = await openAdapters(config, logger);
  const totals: Record<string, number> = {};
  let rejected = 0;
  let written = 0;
  let counted: Record<string, number> | undefined;
  let lastIndexLine = Date.now();
  const started = Date.now();
  try {
    if (validate) {
      process.stderr.write(`checking ${files.length} file(s) against the NMDC schema ${SCHEMA_VERSION}\n`);
      const check = await checkInputs(
        files.map((file) => ({ source: file, format: formatOfFile(file), open: () => openInput(file) })),
        { store, onReject: (r) => process.stderr.write(rejectionLine(r)) },
      );
      if (check.rejected.length > 0) {
        const bad = new Set(check.rejected.map((r) => `${r.source}\u0000${r.position}`)).size;
        process.stderr.write(
          `nothing was written: ${check.rejected.length} problem(s) in ${bad} of ${check.records} records (listed above). ` +
            'Fix them and load again (--no-validate loads the records that have ids and skips the others).\n',
        );
        return 1;
      }
      process.stderr.write(`checked ${check.records} records in ${check.seconds.toFixed(1)} s: all valid\n`);
      counted = check.bySource;
    }
    for (const file of files) {
      // Records counted by the check pass, else estimated from the share of the bytes read.
      const progress = new RecordProgress({
        label: file,
        total: counted?.[file],
        bytes: uncompressedSize(file),
      });
      const summary: LoadSummary = await loadRecords({
        store,
        searchIndex,
        edgeIndex,
        input: openInput(file),
        format: formatOfFile(file),
        source: file,
        // Checked above, all files together (references may cross files).
        validate: false,
        bulk,
        onReject: (r) => progress.note(rejectionLine(r)),
        onIndexProgress: ({ collection, done }) => {
          if (Date.now() - lastIndexLine < PROGRESS_LINE_EVERY_MS) return;
          lastIndexLine = Date.now();
          progress.stop();
          process.stderr.write(`${file}: building the indexes of ${collection}: ${done} records\n`);
        },
        onProgress: (p) => progress.update(p.records + p.rejected, p.bytes),
      });
      progress.update(summary.inserted + summary.updated + summary.rejected.length);
      progress.stop();
      for (const [c, n] of Object.entries(summary.counts)) totals[c] = (totals[c] ?? 0) + n;
      rejected += summary.rejected.length;
      written += summary.inserted + summary.updated;
      const bulkNote =
        summary.bulk.length > 0 ? ` (bulk, indexes built at the end: ${summary.bulk.join(', ')})` : '';
      process.stderr.write(
        `${file}: ${summary.inserted} inserted, ${summary.updated} updated, ${summary.rejected.length} rejected in ${summary.seconds.toFixed(1)} s${bulkNote}\n`,
      );
    }
  } finally {
    await edgeIndex.close();
    await searchIndex.close();
    await store.close();
  }
  const seconds = (Date.now() - started) / 1000;
  const lines = Object.entries(totals)
    .sort()
    .map(([c, n]) => `  ${c}: ${n}`);
  process.stdout.write(
    `loaded ${written} records (${rejected} rejected) in ${seconds.toFixed(1)} s, ${Math.round(written / Math.max(seconds, 0.001))} records/s\n${lines.join('\n')}\n`,
  );
  return rejected > 0 ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`load failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
