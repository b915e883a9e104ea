/**
 * Load rate of the embedded store with every index (attribute, FTS5 search, provenance edges):
 * the bulk path (records first, indexes built in one pass) beside the transactional one, on
 * generated biosamples; and the rate of a search index build into an empty file.
 *
 *   npx tsx bench/load/bulk.ts [--biosamples 100000] [--paths bulk,transactional]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { flag, startBenchServer, table } from '../support/embedded.ts';
import { reindexCollection } from '../../search/maintenance.ts';
import { FtsSearchIndex } from '../../search/sqlite/fts-index.ts';

const biosamples = flag('biosamples', 100_000);
const pathsAt = process.argv.indexOf('--paths');
const paths = (pathsAt >= 0 ? process.argv[pathsAt + 1]! : 'bulk,transactional').split(',') as Array<
  'bulk' | 'transactional'
>;

const rows: Array<Record<string, string | number>> = [];
for (const load of paths) {
  process.stderr.write(`loading ${biosamples.toLocaleString('en-US')} biosamples (${load}) ...\n`);
  const bench = await startBenchServer({ studies: 10, biosamples, dataObjects: 0, seed: 7 }, { load });
  try {
    const row: Record<string, string | number> = {
      path: load,
      records: bench.records.toLocaleString('en-US'),
      'load s': bench.loadSeconds.toFixed(1),
      'load rec/s': Math.round(bench.records / bench.loadSeconds).toLocaleString('en-US'),
    };
    if (load === 'bulk') {
      // The search index of the loaded collection built again into an empty file of its own.
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-bench-index-'));
      const db = new Database(path.join(dir, 'index.sqlite'));
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      db.pragma('cache_size = -65536');
      const index = new FtsSearchIndex(db, { hooked: false, ownsDatabase: true });
      try {
        const built = await reindexCollection(bench.store, index, 'biosample_set');
        row['index build from empty rec/s'] = Math.round(built.records / built.seconds).toLocaleString(
          'en-US',
        );
      } finally {
        await index.close();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    }
    rows.push(row);
  } finally {
    await bench.close();
  }
}
console.log(table(rows));
