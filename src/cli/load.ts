/**
 * `npm run load -- FILE...` loads NMDC Database JSON (`.json`, `.json.gz`) or JSON lines of one
 * collection (`biosample_set.jsonl[.gz]`) into the configured store and search index, with
 * progress, a per-collection summary and a rate. Bad records are reported and skipped.
 */
import fs from 'node:fs';
import { createGunzip } from 'node:zlib';
import { SingleBar, Presets } from 'cli-progress';
import { pino } from 'pino';
import { loadConfig } from '../config.ts';
import { openStore } from '../store/index.ts';
import { openSearchIndex } from '../../search/index.ts';
import { openEdgeIndex } from '../provenance/index.ts';
import { formatOfFile, loadRecords, type LoadSummary } from '../data/loader.ts';

const PROGRESS_LINE_EVERY_MS = 5000;

async function main(files: string[]): Promise<number> {
  if (files.length === 0) {
    process.stderr.write('usage: load FILE... (NMDC Database JSON, .json.gz, or <collection>.jsonl[.gz])\n');
    return 2;
  }
  for (const file of files) if (!fs.existsSync(file)) throw new Error(`no such file: ${file}`);
  const config = loadConfig();
  const logger = pino({ level: process.env.LOG_LEVEL || 'warn' }, pino.destination(2));
  const store = await openStore(config, logger);
  const searchIndex = await openSearchIndex(config, store, logger);
  const edgeIndex = await openEdgeIndex(config, store, logger);
  const totals: Record<string, number> = {};
  let rejected = 0;
  let written = 0;
  const started = Date.now();
  try {
    for (const file of files) {
      const size = fs.statSync(file).size;
      const tty = process.stderr.isTTY;
      const bar = tty
        ? new SingleBar(
            {
              format: `${file} [{bar}] {percentage}% | {records} records | {eta_formatted}`,
              stream: process.stderr,
            },
            Presets.shades_classic,
          )
        : undefined;
      bar?.start(size, 0, { records: 0 });
      let lastLine = Date.now();
      const raw = fs.createReadStream(file, { highWaterMark: 1 << 20 });
      let compressedBytes = 0;
      raw.on('data', (chunk) => (compressedBytes += chunk.length));
      const input = file.endsWith('.gz') ? raw.pipe(createGunzip()) : raw;
      const summary: LoadSummary = await loadRecords({
        store,
        searchIndex,
        edgeIndex,
        input,
        format: formatOfFile(file),
        source: file,
        onReject: (r) => {
          const line = `rejected ${r.source} ${r.position}: ${r.reason}\n`;
          if (bar) bar.stop();
          process.stderr.write(line);
          if (bar) bar.start(size, compressedBytes, { records: written });
        },
        onProgress: (p) => {
          bar?.update(compressedBytes, { records: p.records });
          if (!bar && Date.now() - lastLine > PROGRESS_LINE_EVERY_MS) {
            lastLine = Date.now();
            process.stderr.write(
              `${file}: ${p.records} records, ${Math.round((100 * compressedBytes) / Math.max(size, 1))}%\n`,
            );
          }
        },
      });
      bar?.update(size);
      bar?.stop();
      for (const [c, n] of Object.entries(summary.counts)) totals[c] = (totals[c] ?? 0) + n;
      rejected += summary.rejected.length;
      written += summary.inserted + summary.updated;
      process.stderr.write(
        `${file}: ${summary.inserted} inserted, ${summary.updated} updated, ${summary.rejected.length} rejected in ${summary.seconds.toFixed(1)} s\n`,
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
