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
 */
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { collectionOfId, ID_PATTERN, isCollectionName } from '../schema/nmdc.ts';
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

export type InputFormat = { kind: 'database' } | { kind: 'jsonl'; collection: string };

export interface RejectedRecord {
  source: string;
  /** e.g. `biosample_set[12]`, or `biosample_set[39] (line 40)` in JSON lines. */
  position: string;
  /** The record's id, when it has one. */
  id?: string;
  reason: string;
}

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

/** An input `checkInputs` can read: opened once to check it (and again by the caller to load it). */
export interface CheckedInput {
  source: string;
  format: InputFormat;
  open(): Readable;
}

export interface CheckSummary {
  /** Records read. */
  records: number;
  /** Records read from each input, by its `source`. */
  bySource: Record<string, number>;
  rejected: RejectedRecord[];
  seconds: number;
}

/** Why a record cannot be stored in a collection, or undefined when it can. */
export function recordProblem(collection: string, record: unknown): string | undefined {
  if (!isCollectionName(collection)) return `"${collection}" is not a collection of the NMDC schema`;
  if (record === null || typeof record !== 'object' || Array.isArray(record))
    return 'record is not a JSON object';
  const id = (record as { id?: unknown }).id;
  if (typeof id !== 'string') return 'record has no string id';
  if (!ID_PATTERN.test(id)) return `id "${id}" does not have the form prefix:local_id`;
  const home = collectionOfId(id);
  if (home !== undefined && home !== collection)
    return `id "${id}" has a typecode of ${home}, not ${collection}`;
  return undefined;
}

interface RawRecord {
  collection: string;
  /** The record's index in its collection (its array in Database JSON; its record number in JSON lines). */
  index: number;
  position: string;
  text: string;
}

const OPEN_BRACE = 123;
const CLOSE_BRACE = 125;
const OPEN_BRACKET = 91;
const CLOSE_BRACKET = 93;
const QUOTE = 34;
const BACKSLASH = 92;
const COLON = 58;

/**
 * Cuts an NMDC Database JSON stream into the raw text of each record without building the
 * whole document: it tracks nesting and strings, and hands back each element of the
 * top-level arrays. Values of other top-level keys are skipped.
 */
async function* databaseRecords(
  input: AsyncIterable<string>,
  counter: { bytes: number },
): AsyncGenerator<RawRecord> {
  let depth = 0;
  let inString = false;
  let escaped = false;
  let key = '';
  let keyStart = -1; // start of a top-level key string within the carry text
  let lastKey: string | undefined;
  let collection: string | undefined; // set while inside a top-level array
  let index = 0;
  let recordStart = -1;
  let carry = '';
  for await (const chunk of input) {
    counter.bytes += Buffer.byteLength(chunk);
    const text = carry + chunk;
    const base = carry.length;
    for (let i = base; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (inString) {
        if (escaped) escaped = false;
        else if (c === BACKSLASH) escaped = true;
        else if (c === QUOTE) {
          inString = false;
          if (depth === 1 && keyStart >= 0) {
            key = JSON.parse(text.slice(keyStart, i + 1)) as string;
            keyStart = -1;
          }
        }
        continue;
      }
      if (c === QUOTE) {
        inString = true;
        if (depth === 1 && collection === undefined && lastKey === undefined) keyStart = i;
        else if (depth === 2 && collection !== undefined && recordStart < 0) recordStart = i;
        continue;
      }
      if (c === COLON && depth === 1) {
        lastKey = key;
        continue;
      }
      if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        if (depth === 1 && lastKey !== undefined && c === OPEN_BRACKET) {
          collection = lastKey;
          index = 0;
        } else if (depth === 2 && collection !== undefined && recordStart < 0) recordStart = i;
        depth++;
        continue;
      }
      if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
        if (depth === 2 && collection !== undefined && recordStart >= 0) {
          yield {
            collection,
            index,
            position: `${collection}[${index++}]`,
            text: text.slice(recordStart, i).trim(),
          };
          recordStart = -1;
        }
        depth--;
        if (depth === 2 && collection !== undefined && recordStart >= 0) {
          yield {
            collection,
            index,
            position: `${collection}[${index++}]`,
            text: text.slice(recordStart, i + 1),
          };
          recordStart = -1;
        } else if (depth === 1) {
          collection = undefined;
          lastKey = undefined;
        }
        continue;
      }
      if (c === 44 /* , */) {
        if (depth === 1) lastKey = undefined;
        else if (depth === 2 && collection !== undefined && recordStart >= 0) {
          // A scalar element (not an object): hand it on so it is reported, not lost.
          yield {
            collection,
            index,
            position: `${collection}[${index++}]`,
            text: text.slice(recordStart, i).trim(),
          };
          recordStart = -1;
        }
        continue;
      }
      if (depth === 2 && collection !== undefined && recordStart < 0 && c > 32) recordStart = i;
    }
    // Keep only what an unfinished record or key still needs.
    const cut = Math.min(
      recordStart >= 0 ? recordStart : text.length,
      keyStart >= 0 ? keyStart : text.length,
    );
    carry = text.slice(cut);
    if (recordStart >= 0) recordStart -= cut;
    if (keyStart >= 0) keyStart -= cut;
  }
  if (depth !== 0) throw new Error('input ended inside a JSON value (truncated file?)');
}

async function* jsonLineRecords(
  input: Readable,
  collection: string,
  counter: { bytes: number },
): AsyncGenerator<RawRecord> {
  let line = 0;
  let index = 0;
  for await (const text of createInterface({ input, crlfDelay: Infinity })) {
    line++;
    counter.bytes += Buffer.byteLength(text) + 1;
    if (text.trim() === '') continue;
    yield { collection, index, position: `${collection}[${index}] (line ${line})`, text };
    index++;
  }
}

/** One record read from an input: parsed (without a MongoDB `_id`), or why it could not be. */
interface ReadRecord {
  collection: string;
  index: number;
  position: string;
  record?: Record<string, unknown> | unknown;
  unreadable?: string;
}

async function* readRecords(
  input: Readable,
  format: InputFormat,
  counter: { bytes: number },
): AsyncGenerator<ReadRecord> {
  input.setEncoding?.('utf8');
  const raw =
    format.kind === 'database'
      ? databaseRecords(input as AsyncIterable<string>, counter)
      : jsonLineRecords(input, format.collection, counter);
  for await (const { collection, index, position, text } of raw) {
    let record: unknown;
    try {
      record = JSON.parse(text);
    } catch (err) {
      yield { collection, index, position, unreadable: `not valid JSON: ${(err as Error).message}` };
      continue;
    }
    // MongoDB exports carry `_id`, which is no part of an NMDC record.
    if (record !== null && typeof record === 'object' && !Array.isArray(record)) {
      const { _id, ...fields } = record as Record<string, unknown>;
      record = fields;
    }
    yield { collection, index, position, record };
  }
}

const idOf = (record: unknown): string | undefined => {
  const id = (record as { id?: unknown } | null)?.id;
  return typeof id === 'string' ? id : undefined;
};

/**
 * Checks one read record: the schema checks (when `check` is given) and the loader's own id
 * rules; the problems found, each reported through `reject`.
 */
function checkRecord(
  read: ReadRecord,
  source: string,
  check: DatabaseCheck | undefined,
  reject: (r: RejectedRecord) => void,
): boolean {
  const { collection, position } = read;
  if (read.unreadable !== undefined) {
    reject({ source, position, reason: read.unreadable });
    return false;
  }
  const id = idOf(read.record);
  const at = id === undefined ? {} : { id };
  if (check) {
    const messages = isCollectionName(collection)
      ? check.record(collection, read.index, read.record)
      : [`'${collection}' is not a known schema collection name`];
    for (const reason of messages) reject({ source, position, ...at, reason });
    if (messages.length > 0) return false;
  }
  const record =
    read.record !== null && typeof read.record === 'object' && !Array.isArray(read.record)
      ? keyedRecord(collection, read.record as Record<string, unknown>)
      : read.record;
  const problem = recordProblem(collection, record);
  if (problem) reject({ source, position, ...at, reason: problem });
  return problem === undefined;
}

/** Reports the broken references `check` found, placed in their inputs. */
async function checkReferences(
  check: DatabaseCheck,
  sourceOf: (origin: number) => string,
  reject: (r: RejectedRecord) => void,
): Promise<void> {
  for (const p of await check.references())
    reject({
      source: sourceOf(p.origin ?? 0),
      position: `${p.collection}[${p.index}]`,
      ...(p.id === undefined ? {} : { id: p.id }),
      reason: p.message,
    });
}

/**
 * Checks every record of the inputs as `POST /metadata/json:validate` would check them all in
 * one payload (references may point into any of the inputs or the store), writing nothing and
 * holding no records: the inputs are read once each, streamed.
 */
export async function checkInputs(
  inputs: CheckedInput[],
  options: { store: Pick<DocumentStore, 'find'>; onReject?: (rejected: RejectedRecord) => void },
): Promise<CheckSummary> {
  const started = process.hrtime.bigint();
  const check = new DatabaseCheck(options.store);
  const rejected: RejectedRecord[] = [];
  const reject = (r: RejectedRecord) => {
    rejected.push(r);
    options.onReject?.(r);
  };
  let records = 0;
  const bySource: Record<string, number> = {};
  for (let origin = 0; origin < inputs.length; origin++) {
    const { source, format } = inputs[origin]!;
    check.origin = origin;
    bySource[source] ??= 0;
    for await (const read of readRecords(inputs[origin]!.open(), format, { bytes: 0 })) {
      records++;
      bySource[source]++;
      checkRecord(read, source, check, reject);
    }
  }
  // As the original: references are checked once every record passed the schema.
  if (rejected.length === 0) await checkReferences(check, (o) => inputs[o]!.source, reject);
  return { records, bySource, rejected, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
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

  const read = readRecords(options.input, format, counter);
  if (validate) {
    // One stream, read once: hold the records that pass until every record and reference has.
    const check = new DatabaseCheck(store);
    const held: Array<{ collection: string; record: Record<string, unknown> }> = [];
    for await (const r of read)
      if (checkRecord(r, source, check, reject) && summary.rejected.length === 0)
        held.push({ collection: r.collection, record: r.record as Record<string, unknown> });
    if (summary.rejected.length === 0) await checkReferences(check, () => source, reject);
    if (summary.rejected.length === 0)
      for (const { collection, record } of held) await write(collection, record);
  } else {
    for await (const r of read)
      if (checkRecord(r, source, undefined, reject))
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

/** The input format a file name implies: `biosample_set.jsonl[.gz]` is JSON lines of that collection. */
export function formatOfFile(fileName: string): InputFormat {
  const base = fileName.split(/[\\/]/).pop()!.replace(/\.gz$/, '');
  const lines = /^(.+)\.(jsonl|ndjson)$/.exec(base);
  if (lines) return { kind: 'jsonl', collection: lines[1]! };
  return { kind: 'database' };
}
