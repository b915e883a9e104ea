/**
 * Start-up data preparation: the indexes a bulk load left unbuilt when its process died are
 * built before anything is served; on first start of an empty store, a small seeded demo data
 * set (with records matching the documentation's examples) so the service answers real queries.
 */
import { Readable } from 'node:stream';
import type { Config } from './config.ts';
import type { Logger } from 'pino';
import type { DocumentStore } from './store/port.ts';
import type { SearchIndex } from '../search/port.ts';
import type { EdgeIndex } from './provenance/port.ts';
import { COLLECTION_NAMES } from './schema/nmdc.ts';
import { databaseJsonChunks, generateRecords, type GenerateOptions } from './data/generator.ts';
import { loadRecords } from './data/loader.ts';
import { finishInterruptedBulkLoad, isBulkLoadable } from './store/sqlite/bulk-load.ts';
import { rebuildEach } from '../search/maintenance.ts';

/**
 * Big enough to page through and filter on, small enough to load in well under a second: every
 * biosample has its sequencing run and complete workflow pipeline (60 x 29.75 data objects on
 * average), so `linked_instances` of a biosample returns tens of records; about 2,200 in all.
 */
export const DEMO_DATA_SET: GenerateOptions = { studies: 5, biosamples: 60, dataObjects: 1785, seed: 1 };

/** Loads the demo set when demo data is enabled and no schema collection holds a record. */
export async function prepareData(deps: {
  config: Config;
  store: DocumentStore;
  searchIndex: SearchIndex;
  edgeIndex?: EdgeIndex;
  logger: Logger;
}): Promise<void> {
  const { config, store, searchIndex, edgeIndex, logger } = deps;
  if (isBulkLoadable(store)) {
    const started = performance.now();
    const rebuilt = await finishInterruptedBulkLoad(store, rebuildEach(store, [searchIndex, edgeIndex]));
    if (rebuilt.length > 0)
      logger.warn(
        { collections: rebuilt, seconds: Number(((performance.now() - started) / 1000).toFixed(1)) },
        'a bulk load did not finish: built the indexes of its collections from the records',
      );
  }
  if (!config.demoData) return;
  const nonEmpty = await store.nonEmptyCollections();
  if (nonEmpty.some((c) => (COLLECTION_NAMES as readonly string[]).includes(c))) return;
  const input = Readable.from(databaseJsonChunks(generateRecords(DEMO_DATA_SET)));
  const summary = await loadRecords({
    store,
    searchIndex,
    edgeIndex,
    input,
    format: { kind: 'database' },
    source: 'demo data',
  });
  logger.info(
    { counts: summary.counts, seconds: Number(summary.seconds.toFixed(2)) },
    'empty store: loaded the demo data set (set DEMO_DATA=false to start empty)',
  );
}
