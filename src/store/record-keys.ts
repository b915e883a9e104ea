/**
 * Records of collections without identifiers (see UNIDENTIFIED_COLLECTIONS) are kept under a store
 * key: a digest of the record's content, held in `id` inside the service so paging, the search
 * index and the change log work as for every record, and never shown. Answers drop it, and an
 * aggregation pipeline sees it as the record's `_id`, as MongoDB documents without `id` have only
 * `_id`. Two records with exactly the same content are one record.
 */
import { createHash } from 'node:crypto';
import { UNIDENTIFIED_COLLECTIONS } from '../schema/nmdc.ts';
import type { Doc, RecordKey } from './port.ts';
import { RecordText } from '../json-text.ts';

const KEY_PREFIX = 'key:';

/** The record as the store holds it: unchanged, or with a store key when its collection has no ids. */
export function keyedRecord(collection: string, record: Record<string, unknown>): Record<string, unknown> {
  if (!UNIDENTIFIED_COLLECTIONS.has(collection) || typeof record.id === 'string') return record;
  const digest = createHash('sha256').update(JSON.stringify(record)).digest('hex').slice(0, 32);
  return { id: `${KEY_PREFIX}${digest}`, ...record };
}

/** The record as answers show it: without the store key of a collection that has no ids. */
export function shownRecord(collection: string, doc: Doc): Doc {
  if (!isStoreKey(collection, doc.id)) return doc;
  const { id: _key, ...shown } = doc;
  return shown as Doc;
}

/** As `shownRecord`, for a record that may be its stored text: the text stays unless a store key must go. */
export function shownStored(collection: string, record: Doc | RecordText): Doc | RecordText {
  if (!(record instanceof RecordText)) return shownRecord(collection, record);
  return isStoreKey(collection, record.id) ? shownRecord(collection, JSON.parse(record.text) as Doc) : record;
}

/** Whether answers leave out this `id` (a store key). */
export function isStoreKey(collection: string, id: unknown): boolean {
  return UNIDENTIFIED_COLLECTIONS.has(collection) && String(id).startsWith(KEY_PREFIX);
}

/** Record keys grouped by collection, each id once. */
export function keysByCollection(keys: readonly RecordKey[]): Map<string, string[]> {
  const out = new Map<string, Set<string>>();
  for (const { collection, id } of keys) {
    let ids = out.get(collection);
    if (!ids) out.set(collection, (ids = new Set()));
    ids.add(id);
  }
  return new Map([...out].map(([collection, ids]) => [collection, [...ids]]));
}
