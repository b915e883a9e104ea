/**
 * Loads NMDC records from a stream into the store and the search index: NMDC Database JSON
 * (`{"study_set": [...], ...}`) or JSON lines of one collection. Records are stream-parsed,
 * validated one by one (bad ones are reported with their position and skipped), and upserted
 * by id in batches, each batch one transaction; so a rerun after an interruption converges to
 * exactly the input's records.
 */
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { collectionOfId, ID_PATTERN, isCollectionName } from '../schema/nmdc.ts';
import type { Doc, DocumentStore } from '../store/port.ts';
import { keyedRecord } from '../store/record-keys.ts';
import type { MaintainedIndex, SearchIndex } from '../../search/port.ts';

export type InputFormat = { kind: 'database' } | { kind: 'jsonl'; collection: string };

export interface RejectedRecord {
  source: string;
  /** e.g. `biosample_set[12]` or `line 40`. */
  position: string;
  reason: string;
}

export interface LoadProgress {
  records: number;
  rejected: number;
  bytes: number;
}

export interface LoadOptions {
  store: DocumentStore;
  searchIndex?: Pick<SearchIndex, 'index'>;
  /** The provenance edge index, written here when the store's transaction does not write it. */
  edgeIndex?: Pick<MaintainedIndex, 'index' | 'synchronous'>;
  input: Readable;
  format: InputFormat;
  /** Name used in rejection reports (the file name). */
  source?: string;
  batchSize?: number;
  onProgress?: (progress: LoadProgress) => void;
  onReject?: (rejected: RejectedRecord) => void;
}

export interface LoadSummary {
  /** Records written per collection (inserted + updated). */
  counts: Record<string, number>;
  inserted: number;
  updated: number;
  rejected: RejectedRecord[];
  seconds: number;
}

/** Why a record cannot be stored in a collection, or undefined when it can. */
export function recordProblem(collection: string, record: unknown): string | undefined {
  if (!isCollectionName(collection)) return `"${collection}" is not a collection of the NMDC schema`;
  if (record === null || typeof record !== 'object' || Array.isArray(record)) return 'record is not a JSON object';
  const id = (record as { id?: unknown }).id;
  if (typeof id !== 'string') return 'record has no string id';
  if (!ID_PATTERN.test(id)) return `id "${id}" does not have the form prefix:local_id`;
  const home = collectionOfId(id);
  if (home !== undefined && home !== collection) return `id "${id}" has a typecode of ${home}, not ${collection}`;
  return undefined;
}

interface RawRecord {
  collection: string;
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
async function* databaseRecords(input: AsyncIterable<string>, counter: { bytes: number }): AsyncGenerator<RawRecord> {
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
          yield { collection, position: `${collection}[${index++}]`, text: text.slice(recordStart, i).trim() };
          recordStart = -1;
        }
        depth--;
        if (depth === 2 && collection !== undefined && recordStart >= 0) {
          yield { collection, position: `${collection}[${index++}]`, text: text.slice(recordStart, i + 1) };
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
          yield { collection, position: `${collection}[${index++}]`, text: text.slice(recordStart, i).trim() };
          recordStart = -1;
        }
        continue;
      }
      if (depth === 2 && collection !== undefined && recordStart < 0 && c > 32) recordStart = i;
    }
    // Keep only what an unfinished record or key still needs.
    const cut = Math.min(recordStart >= 0 ? recordStart : text.length, keyStart >= 0 ? keyStart : text.length);
    carry = text.slice(cut);
    if (recordStart >= 0) recordStart -= cut;
    if (keyStart >= 0) keyStart -= cut;
  }
  if (depth !== 0) throw new Error('input ended inside a JSON value (truncated file?)');
}

async function* jsonLineRecords(input: Readable, collection: string, counter: { bytes: number }): AsyncGenerator<RawRecord> {
  let line = 0;
  for await (const text of createInterface({ input, crlfDelay: Infinity })) {
    line++;
    counter.bytes += Buffer.byteLength(text) + 1;
    if (text.trim() === '') continue;
    yield { collection, position: `line ${line}`, text };
  }
}

/** Reads, validates and writes every record of the input; see the module comment. */
export async function loadRecords(options: LoadOptions): Promise<LoadSummary> {
  const { store, searchIndex, edgeIndex, format } = options;
  const source = options.source ?? 'input';
  const batchSize = options.batchSize ?? 1000;
  const started = process.hrtime.bigint();
  const summary: LoadSummary = { counts: {}, inserted: 0, updated: 0, rejected: [], seconds: 0 };
  const counter = { bytes: 0 };
  const batches = new Map<string, Doc[]>();
  let records = 0;
  let previous: string | undefined;

  const flush = async (collection: string) => {
    const batch = batches.get(collection);
    if (!batch || batch.length === 0) return;
    batches.delete(collection);
    const result = await store.upsertMany(collection, batch);
    if (searchIndex) await searchIndex.index(collection, batch);
    if (edgeIndex && !edgeIndex.synchronous) await edgeIndex.index(collection, batch);
    summary.inserted += result.inserted;
    summary.updated += result.updated;
    summary.counts[collection] = (summary.counts[collection] ?? 0) + batch.length;
    records += batch.length;
    options.onProgress?.({ records, rejected: summary.rejected.length, bytes: counter.bytes });
  };

  const reject = (position: string, reason: string) => {
    const rejected = { source, position, reason };
    summary.rejected.push(rejected);
    options.onReject?.(rejected);
  };

  {
    options.input.setEncoding?.('utf8');
    const raw =
      format.kind === 'database'
        ? databaseRecords(options.input as AsyncIterable<string>, counter)
        : jsonLineRecords(options.input, format.collection, counter);
    for await (const { collection, position, text } of raw) {
      let record: unknown;
      try {
        record = JSON.parse(text);
      } catch (err) {
        reject(position, `not valid JSON: ${(err as Error).message}`);
        continue;
      }
      // MongoDB exports carry `_id`; records of collections without ids get a store key.
      if (record !== null && typeof record === 'object' && !Array.isArray(record)) {
        const { _id, ...fields } = record as Record<string, unknown>;
        record = keyedRecord(collection, fields);
      }
      const problem = recordProblem(collection, record);
      if (problem) {
        reject(position, problem);
        continue;
      }
      // Database JSON groups records by collection: write a finished collection's tail now.
      if (previous !== undefined && previous !== collection) await flush(previous);
      previous = collection;
      let batch = batches.get(collection);
      if (!batch) batches.set(collection, (batch = []));
      batch.push(record as Doc);
      if (batch.length >= batchSize) await flush(collection);
    }
  }
  for (const collection of [...batches.keys()]) await flush(collection);
  summary.seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return summary;
}

/** The input format a file name implies: `biosample_set.jsonl[.gz]` is JSON lines of that collection. */
export function formatOfFile(fileName: string): InputFormat {
  const base = fileName.split(/[\\/]/).pop()!.replace(/\.gz$/, '');
  const lines = /^(.+)\.(jsonl|ndjson)$/.exec(base);
  if (lines) return { kind: 'jsonl', collection: lines[1]! };
  return { kind: 'database' };
}
