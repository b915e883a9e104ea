/**
 * Loads NMDC records from streams into the store and the search index: NMDC Database JSON
 * (`{"study_set": [...], ...}`) or JSON lines of one collection. Records are stream-parsed and
 * upserted by id in batches, each batch one transaction; so a rerun after an interruption
 * converges to exactly the input's records.
 *
 * By default every record is first checked as `POST /metadata/json:validate` checks a payload
 * (src/validation: the JSON Schema of its class, then referential integrity against the input and
 * the store), and nothing is written unless every record passes: a load is all or nothing, each bad
 * record reported with its place. `checkInputs` does that check on inputs it can read twice (files:
 * check, then write, never holding the records); `loadRecords` on a single stream holds the
 * records while it checks them. Without validation, only ids and collection names are checked
 * and bad records are reported and skipped.
 *
 * On the embedded store a large load into an empty (or much smaller) collection takes the bulk
 * path (src/store/sqlite/bulk-load.ts, `prefersBulkLoad`): records are written first and the
 * search and edge indexes are built from them in one pass at the end. Smaller loads keep the
 * transactional upsert, each batch with its index entries.
 *
 * Reading the inputs is src/data/record-reader.ts; the checks, `checkInputs` included,
 * src/data/record-checks.ts.
 */
import type { Readable } from 'node:stream';
import type { Doc, DocumentStore } from '../store/port.ts';
import { keyedRecord } from '../store/record-keys.ts';
import { DatabaseCheck } from '../validation/index.ts';
import type { MaintainedIndex, SearchIndex } from '../../search/port.ts';
import { rebuildEach } from '../../search/maintenance.ts';
import {
  BULK_BATCH,
  BULK_MIN_RECORDS,
  finishInterruptedBulkLoad,
  isBulkLoadable,
  prefersBulkLoad,
  SqliteBulkLoad,
  storedCount,
} from '../store/sqlite/bulk-load.ts';
import { readRecords, type InputFormat } from './record-reader.ts';
import { checkReferences, checkRecord, type RejectedRecord } from './record-checks.ts';

export interface LoadProgress {
  records: number;
  rejected: number;
  bytes: number;
}

export interface LoadOptions {
  store: DocumentStore;
  searchIndex?: Pick<SearchIndex, 'index'> | MaintainedIndex;
  /** The provenance edge index, written here when the store's transaction does not write it. */
  edgeIndex?: Pick<MaintainedIndex, 'index' | 'synchronous'> | MaintainedIndex;
  /**
   * Whether large loads into empty or much smaller collections of the embedded store take the
   * bulk path (default true; it needs the indexes given to be full MaintainedIndexes).
   */
  bulk?: boolean;
  input: Readable;
  format: InputFormat;
  /** Name used in rejection reports (the file name). */
  source?: string;
  batchSize?: number;
  /**
   * Check every record against the NMDC schema and the references first, and write nothing
   * unless all pass (default). `false`: only ids and collection names; bad records are skipped.
   */
  validate?: boolean;
  onProgress?: (progress: LoadProgress) => void;
  /** Progress of the index build a bulk load ends with: records of a collection indexed so far. */
  onIndexProgress?: (progress: { collection: string; done: number }) => void;
  onReject?: (rejected: RejectedRecord) => void;
}

export interface LoadSummary {
  /** Records written per collection (inserted + updated). */
  counts: Record<string, number>;
  inserted: number;
  updated: number;
  /** Problems found; with validation, any of them means nothing was written. */
  rejected: RejectedRecord[];
  seconds: number;
  /** Collections written on the bulk path (their indexes built at the end). */
  bulk: string[];
}

/** Reads, checks and writes every record of the input; see the module comment. */
export async function loadRecords(options: LoadOptions): Promise<LoadSummary> {
  const { store, searchIndex, edgeIndex, format } = options;
  const source = options.source ?? 'input';
  const batchSize = options.batchSize ?? 1000;
  const validate = options.validate ?? true;
  const started = process.hrtime.bigint();
  const summary: LoadSummary = { counts: {}, inserted: 0, updated: 0, rejected: [], seconds: 0, bulk: [] };
  const counter = { bytes: 0 };
  const batches = new Map<string, Doc[]>();
  let records = 0;
  let previous: string | undefined;
  const indexes = [searchIndex, edgeIndex].filter((i) => i !== undefined);
  const bulkable = (options.bulk ?? true) && isBulkLoadable(store) && indexes.every(isMaintained);
  /** The path each collection takes, decided once BULK_MIN_RECORDS of its records are at hand (or all are). */
  const paths = new Map<string, 'bulk' | 'transactional'>();
  let bulk: SqliteBulkLoad | undefined;
  if (bulkable) {
    // A bulk load that died leaves indexes to build: built before anything else is written.
    await finishInterruptedBulkLoad(store, rebuildEach(store, indexes as MaintainedIndex[]));
  }

  const pathOf = (collection: string, atHand: number, last: boolean) => {
    let path = paths.get(collection);
    if (path === undefined && (last || !bulkable || atHand >= BULK_MIN_RECORDS)) {
      path =
        bulkable && prefersBulkLoad(storedCount(store.db, collection), atHand) ? 'bulk' : 'transactional';
      paths.set(collection, path);
      if (path === 'bulk') summary.bulk.push(collection);
    }
    return path;
  };

  const flush = async (collection: string, last = true) => {
    const batch = batches.get(collection);
    if (!batch || batch.length === 0) return;
    const path = pathOf(collection, batch.length, last);
    if (path === undefined) return;
    batches.delete(collection);
    let result;
    if (path === 'bulk' && isBulkLoadable(store)) {
      bulk ??= new SqliteBulkLoad(store);
      result = bulk.write(collection, batch);
    } else {
      result = await store.upsertMany(collection, batch);
      if (searchIndex) await searchIndex.index(collection, batch);
      if (edgeIndex && !edgeIndex.synchronous) await edgeIndex.index(collection, batch);
    }
    summary.inserted += result.inserted;
    summary.updated += result.updated;
    summary.counts[collection] = (summary.counts[collection] ?? 0) + batch.length;
    records += batch.length;
    options.onProgress?.({ records, rejected: summary.rejected.length, bytes: counter.bytes });
  };

  const write = async (collection: string, record: Record<string, unknown>) => {
    // Database JSON groups records by collection: write a finished collection's tail now.
    if (previous !== undefined && previous !== collection) await flush(previous);
    previous = collection;
    let batch = batches.get(collection);
    if (!batch) batches.set(collection, (batch = []));
    batch.push(keyedRecord(collection, record) as Doc);
    const size = paths.get(collection) === 'bulk' ? Math.max(batchSize, BULK_BATCH) : batchSize;
    if (batch.length >= size) await flush(collection, false);
  };

  const reject = (rejected: RejectedRecord) => {
    summary.rejected.push(rejected);
    options.onReject?.(rejected);
  };

  const read = readRecords(options.input, format, counter, source);
  if (validate) {
    // One stream, read once: hold the records that pass until every record and reference has.
    const check = new DatabaseCheck(store);
    const held: Array<{ collection: string; record: Record<string, unknown> }> = [];
    for await (const r of read)
      if ((await checkRecord(r, source, check, reject)) && summary.rejected.length === 0)
        held.push({ collection: r.collection, record: r.record as Record<string, unknown> });
    if (summary.rejected.length === 0) await checkReferences(check, () => source, reject);
    if (summary.rejected.length === 0)
      for (const { collection, record } of held) await write(collection, record);
  } else {
    for await (const r of read)
      if (await checkRecord(r, source, undefined, reject))
        await write(r.collection, r.record as Record<string, unknown>);
  }
  for (const collection of [...batches.keys()]) await flush(collection);
  // Every index of the bulk-loaded collections, built in one pass from the records.
  await bulk?.finish(rebuildEach(store, indexes as MaintainedIndex[], options.onIndexProgress));
  summary.seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return summary;
}

function isMaintained(index: object): index is MaintainedIndex {
  const i = index as Partial<MaintainedIndex>;
  return typeof i.clear === 'function' && typeof i.fingerprints === 'function';
}
