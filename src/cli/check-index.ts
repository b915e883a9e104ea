/**
 * `npm run check-index [-- COLLECTION...]` compares the search index and the provenance edge
 * index with the source of truth and reports records missing from, stale in (fingerprint
 * differs) and extra in each.
 * Exits 1 on any drift (fix with `npm run reindex`), 0 when the index is exact.
 */
import { openIndexAdapters } from './index-adapters.ts';
import { checkCollection, coveredBy, hasDrift } from '../../search/maintenance.ts';
import { collectionArguments } from './usage.ts';

const USAGE = `usage: npm run check-index [-- COLLECTION...]

Compares the search index and the provenance edge index with the records in the configured store
(DATA_DIR, or MONGO_URL and ELASTICSEARCH_URL) and reports, per collection, records missing from,
stale in and extra in each index, with a few example ids. Exits 1 when anything drifted (mend it
with npm run reindex), 0 when every index is exact. Without COLLECTION, every collection that holds
records.

  COLLECTION    a collection of the NMDC schema, e.g. biosample_set (see GET /nmdcschema/collection_names)
  -h, --help    show this help
`;

const SHOWN = 10;

async function main(named: string[]): Promise<number> {
  const { store, index, edges } = await openIndexAdapters();
  let drifted = 0;
  let checked = 0;
  try {
    const collections = named.length > 0 ? named : await store.nonEmptyCollections();
    const checks = [
      ...coveredBy(index, collections).map((collection) => ({ collection, index, label: '' })),
      ...coveredBy(edges, collections).map((collection) => ({
        collection,
        index: edges,
        label: 'edges of ',
      })),
    ];
    // Records the search index's engine refused for good: drift with a reason.
    const refusals = (await index.refusals?.()) ?? [];
    const engine = index.engine;
    for (const { collection, index, label } of checks) {
      const report = await checkCollection(store, index, collection);
      if (!label) checked += report.checked;
      const { missing, stale, extra } = report.counts;
      const state = hasDrift(report) ? 'DRIFT' : 'ok';
      process.stdout.write(
        `${label}${collection}: ${state} — ${report.checked.toLocaleString('en-US')} records checked, ${missing} missing, ${stale} stale, ${extra} extra\n`,
      );
      for (const [kind, ids] of [
        ['missing', report.missing],
        ['stale', report.stale],
        ['extra', report.extra],
      ] as const) {
        if (ids.length > 0)
          process.stdout.write(
            `  ${kind}: ${ids.slice(0, SHOWN).join(', ')}${ids.length > SHOWN ? ', ...' : ''}\n`,
          );
      }
      if (!label) {
        const refused = refusals.filter((r) => r.collection === collection);
        for (const r of refused.slice(0, SHOWN))
          process.stdout.write(`  refused by ${engine}: ${r.id} (${r.status} ${r.type}: ${r.reason})\n`);
        if (refused.length > SHOWN) process.stdout.write(`  ... ${refused.length - SHOWN} more refused\n`);
      }
      if (hasDrift(report)) drifted++;
    }
    process.stdout.write(
      drifted === 0
        ? `index is exact: ${checked.toLocaleString('en-US')} records in ${collections.length} collections\n`
        : `index drift in ${drifted} of ${checks.length} checks; run \`npm run reindex\`\n`,
    );
    return drifted === 0 ? 0 : 1;
  } finally {
    await edges.close();
    await index.close();
    await store.close();
  }
}

main(collectionArguments(process.argv.slice(2), USAGE)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`check-index failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(2);
  },
);
