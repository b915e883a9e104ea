/**
 * How the MongoDB DocumentStore reads records: the indexes of a record collection, projections,
 * the filter sent to the server (patterns PCRE could backtrack on left to the service), and the
 * records that filter matches checked in the service against the whole filter.
 */
import type { ClientSession, Db, Document } from 'mongodb';
import { assertRegexesSupported, compileFilter } from '../filter.ts';
import type { Doc, Filter, Projection } from '../port.ts';
import { INDEXED_PATHS } from '../sqlite/attribute-index.ts';
import { serverFilter } from './pcre-safety.ts';

/** An index a record collection gets: its keys (in order), name and whether it is unique. */
export interface RecordIndexSpec {
  key: Record<string, 1 | -1>;
  name: string;
  unique?: boolean;
}

/**
 * Index specifications every record collection gets: unique `id`, plus two per narrowing
 * attribute, `{path: 1, id: 1}` and `{path: -1, id: 1}`. A page sorted by the path ascending or
 * descending (with `id` ascending breaking ties, as the original and the embedded store order
 * them) is then read off one of them in key order and stops at the page (an index walked
 * backwards reverses every key, `{path: -1, id: -1}`: hence one per direction); either also
 * serves equality and ranges on the path, as its prefix.
 * 1 + 2 x 18 = 37 indexes, under MongoDB's 64 per collection.
 */
export function recordIndexSpecs(): RecordIndexSpec[] {
  return [
    { key: { id: 1 }, name: 'id_1', unique: true },
    ...[...INDEXED_PATHS].flatMap((p) => [
      { key: { [p]: 1 as const, id: 1 as const }, name: `${p}_1_id_1` },
      { key: { [p]: -1 as const, id: 1 as const }, name: `${p}_-1_id_1` },
    ]),
  ];
}

/**
 * Names of the single-field `{path: 1}` indexes earlier versions made for each narrowing
 * attribute, which the compound indexes of `recordIndexSpecs` replace, with their keys.
 */
export function replacedIndexSpecs(): RecordIndexSpec[] {
  return [...INDEXED_PATHS].map((p) => ({ key: { [p]: 1 as const }, name: `${p}_1` }));
}

/** Mongo projection for a list of paths: `_id` out, `id` in, no path colliding with a shorter one. */
export function mongoProjection(projection: Projection): Document {
  if (!projection || projection.length === 0) return { _id: 0 };
  const paths = [...new Set(['id', ...projection.filter((p) => p !== '_id')])].sort();
  const kept = paths.filter((p) => !paths.some((q) => q !== p && p.startsWith(`${q}.`)));
  return { _id: 0, ...Object.fromEntries(kept.map((p) => [p, 1])) };
}

/**
 * The filter sent to MongoDB: the user's, restricted to candidate ids and keyset position.
 * Conditions holding a pattern PCRE could backtrack on are left out (`exact: false`): the
 * server then matches a superset, and the service checks each record against the whole filter.
 */
export function serverQuery(
  filter: Filter,
  candidateIds?: Iterable<string>,
  afterId?: string,
): { q: Filter; exact: boolean } {
  assertRegexesSupported(filter);
  const server = serverFilter(filter);
  const clauses: Filter[] = [];
  if (candidateIds !== undefined) clauses.push({ id: { $in: [...new Set(candidateIds)] } });
  if (afterId !== undefined) clauses.push({ id: { $gt: afterId } });
  const q = server.filter;
  if (clauses.length === 0) return { q, exact: server.exact };
  if (Object.keys(q).length > 0) clauses.push(q);
  return { q: clauses.length === 1 ? clauses[0]! : { $and: clauses }, exact: server.exact };
}

/**
 * Whole records the server filter `q` matches, in `sort` order, that also pass the whole
 * `filter` in the service (for a filter MongoDB may not evaluate entirely).
 */
export async function* checkedInService(
  db: Db,
  maxTimeMS: number,
  collection: string,
  q: Filter,
  filter: Filter,
  options: { sort?: Document; session?: ClientSession; allowDiskUse?: boolean },
): AsyncIterable<Doc> {
  const matches = compileFilter(filter);
  const cursor = db.collection(collection).find(q, {
    projection: { _id: 0 },
    sort: options.sort,
    maxTimeMS,
    batchSize: 1000,
    session: options.session,
    ...(options.allowDiskUse ? { allowDiskUse: true } : {}),
  });
  try {
    for await (const doc of cursor) if (matches(doc as unknown as Doc)) yield doc as unknown as Doc;
  } finally {
    await cursor.close();
  }
}
