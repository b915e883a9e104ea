/**
 * The loader's checks of the records it reads: by default as `POST /metadata/json:validate` checks
 * a payload (src/validation: the JSON Schema of its class, then referential integrity against the
 * inputs and the store), always the loader's own rules on ids and collection names; each problem
 * reported with its input and place. `checkInputs` checks inputs it can read twice (files) without
 * writing or holding their records.
 */
import type { Readable } from 'node:stream';
import { collectionOfId, ID_PATTERN, isCollectionName } from '../schema/nmdc.ts';
import type { DocumentStore } from '../store/port.ts';
import { keyedRecord } from '../store/record-keys.ts';
import { DatabaseCheck } from '../validation/index.ts';
import { readRecords, type InputFormat, type ReadRecord } from './record-reader.ts';

export interface RejectedRecord {
  source: string;
  /** e.g. `biosample_set[12]`, or `biosample_set[39] (line 40)` in JSON lines. */
  position: string;
  /** The record's id, when it has one. */
  id?: string;
  reason: string;
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

const idOf = (record: unknown): string | undefined => {
  const id = (record as { id?: unknown } | null)?.id;
  return typeof id === 'string' ? id : undefined;
};

/**
 * Checks one read record: the schema checks (when `check` is given) and the loader's own id
 * rules; the problems found, each reported through `reject`.
 */
export async function checkRecord(
  read: ReadRecord,
  source: string,
  check: DatabaseCheck | undefined,
  reject: (r: RejectedRecord) => void,
): Promise<boolean> {
  const { collection, position } = read;
  if (read.unreadable !== undefined) {
    reject({ source, position, reason: read.unreadable });
    return false;
  }
  const id = idOf(read.record);
  const at = id === undefined ? {} : { id };
  if (check) {
    const messages = isCollectionName(collection)
      ? await check.record(collection, read.index, read.record)
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
export async function checkReferences(
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
    for await (const read of readRecords(inputs[origin]!.open(), format, { bytes: 0 }, source)) {
      records++;
      bySource[source]++;
      await checkRecord(read, source, check, reject);
    }
  }
  // As the original: references are checked once every record passed the schema.
  if (rejected.length === 0) await checkReferences(check, (o) => inputs[o]!.source, reject);
  return { records, bySource, rejected, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
}
