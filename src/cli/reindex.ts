/**
 * `npm run reindex [-- COLLECTION...]` rebuilds the search index and the provenance edge index
 * from the source of truth
 * (every non-empty collection when none is named), with progress and a summary line with
 * counts and rate. A collection the search index holds nothing of is built from empty in large
 * transactions (search/sqlite/fts-index.ts); the indexes an interrupted bulk load left unbuilt
 * are built first.
 */
import { openIndexAdapters } from './index-adapters.ts';
import { coveredBy, rebuildEach, reindexCollections } from '../../search/maintenance.ts';
import { finishInterruptedBulkLoad, isBulkLoadable } from '../store/sqlite/bulk-load.ts';
import type { MaintainedIndex } from '../../search/port.ts';
import { collectionArguments } from './usage.ts';

const USAGE = `usage: npm run reindex [-- COLLECTION...]

Rebuilds the search index and the provenance edge index from the records in the configured store
(DATA_DIR, or MONGO_URL and ELASTICSEARCH_URL), collection by collection, with progress on stderr
and a line per collection (records, seconds, rate) on stdout. Without COLLECTION, every collection
that holds records. Entries already right are kept; wrong ones are rewritten and entries of records
no longer stored are removed.

  COLLECTION    a collection of the NMDC schema, e.g. biosample_set (see GET /nmdcschema/collection_names)
  -h, --help    show this help
`;

const PROGRESS_EVERY_MS = 2000;

async function main(named: string[]): Promise<number> {
  const { store, index, edges } = await openIndexAdapters();
  const started = performance.now();
  let total = 0;
  try {
    if (isBulkLoadable(store)) {
      // What a bulk load that died left unbuilt comes first (the rebuild below may name fewer collections).
      const finished = await finishInterruptedBulkLoad(store, rebuildEach(store, [index, edges]));
      if (finished.length > 0)
        process.stderr.write(`built the indexes of an interrupted bulk load: ${finished.join(', ')}\n`);
    }
    const collections = named.length > 0 ? named : await store.nonEmptyCollections();
    const targets: Array<[MaintainedIndex, string, string[]]> = [
      [index, '', coveredBy(index, collections)],
      [edges, 'edges of ', coveredBy(edges, collections)],
    ];
    for (const [target, label, names] of targets) {
      let last = performance.now();
      await reindexCollections(
        store,
        target,
        names,
        (result) => {
          if (!label) total += result.records;
          const rate = result.seconds > 0 ? Math.round(result.records / result.seconds) : result.records;
          process.stdout.write(
            `${label}${result.collection}: ${result.records.toLocaleString('en-US')} records in ${result.seconds.toFixed(1)} s (${rate.toLocaleString('en-US')}/s)\n`,
          );
        },
        ({ collection, done }) => {
          const now = performance.now();
          if (now - last < PROGRESS_EVERY_MS) return;
          last = now;
          process.stderr.write(`${label}${collection}: ${done.toLocaleString('en-US')} records indexed\n`);
        },
      );
    }
    const seconds = (performance.now() - started) / 1000;
    process.stdout.write(
      `reindexed ${total.toLocaleString('en-US')} records in ${collections.length} collections in ${seconds.toFixed(1)} s ` +
        `(${Math.round(total / Math.max(seconds, 1e-3)).toLocaleString('en-US')}/s) on ${index.engine}\n`,
    );
    return 0;
  } finally {
    await edges.close();
    await index.close();
    await store.close();
  }
}

main(collectionArguments(process.argv.slice(2), USAGE)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`reindex failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
