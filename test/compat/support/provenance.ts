/**
 * The provenance graph worked out by brute force from the records in the store, to check
 * `/nmdcschema/linked_instances` and `/data_objects/study/{id}` against: every record of every
 * collection with ids is read, each directed reference (`referencesOf`: an upstream slot such as
 * `has_input` or `associated_studies` points at a record upstream of the holder, a downstream slot
 * such as `has_output` at one downstream of it) becomes an edge between two records that exist, and
 * each start id is walked on its own, one direction at a time. Slow and obvious on purpose.
 */
import { COLLECTION_NAMES, UNIDENTIFIED_COLLECTIONS } from '../../../src/schema/nmdc.ts';
import { classAndDescendants, NAMED_THING } from '../../../src/schema/class-tree.ts';
import { referencesOf, type Direction } from '../../../src/schema/reference-slots.ts';
import type { Doc } from '../../../src/store/port.ts';
import { expect } from 'vitest';
import type { LinkedRead } from './nmdc-api-utilities-client.ts';
import type { CompatServer } from './server.ts';

export interface Lineage {
  records: Map<string, Doc>;
  /** For each record, the records one step in each direction. */
  next: Record<Direction, Map<string, Set<string>>>;
}

export interface LinkedRecord {
  id: string;
  type: string;
  _downstream_of?: string[];
  _upstream_of?: string[];
  [field: string]: unknown;
}

const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** Every record of the store and the references between them, read now. */
export async function readLineage(server: CompatServer): Promise<Lineage> {
  const records = new Map<string, Doc>();
  for (const collection of COLLECTION_NAMES) {
    if (UNIDENTIFIED_COLLECTIONS.has(collection)) continue;
    for (const doc of await server.store.find(collection, {})) records.set(doc.id, doc);
  }
  const next: Lineage['next'] = { upstream: new Map(), downstream: new Map() };
  const link = (up: string, down: string) => {
    if (up === down || !records.has(up) || !records.has(down)) return;
    if (!next.downstream.has(up)) next.downstream.set(up, new Set());
    if (!next.upstream.has(down)) next.upstream.set(down, new Set());
    next.downstream.get(up)!.add(down);
    next.upstream.get(down)!.add(up);
  };
  for (const doc of records.values()) {
    for (const ref of referencesOf(doc)) {
      if (ref.direction === 'upstream') link(ref.id, doc.id);
      else link(doc.id, ref.id);
    }
  }
  return { records, next };
}

/** The records reachable from `start` in one or more steps along `direction` (itself only through a cycle). */
export function reach(lineage: Lineage, start: string, direction: Direction): Set<string> {
  const seen = new Set<string>();
  let frontier = [start];
  while (frontier.length > 0) {
    const following: string[] = [];
    for (const id of frontier) {
      for (const to of lineage.next[direction].get(id) ?? []) {
        if (seen.has(to)) continue;
        seen.add(to);
        following.push(to);
      }
    }
    frontier = following;
  }
  return seen;
}

const typeOf = (doc: Doc | undefined): string => (typeof doc?.type === 'string' ? doc.type : '');

/** The classes `types` match: each with its subclasses; no types means every named thing. */
export function typesMatching(types: readonly string[] | null): Set<string> {
  const out = new Set<string>();
  for (const t of types && types.length > 0 ? types : [NAMED_THING]) {
    for (const c of classAndDescendants(t)) out.add(c);
  }
  return out;
}

/**
 * What `linked_instances` should answer for `ids` and `types` over all its pages: every record of
 * a matching type downstream or upstream of one of `ids`, with the start ids it is linked to each
 * way (sorted), in id order. `hydrate`: the whole record with those fields added.
 */
export function linkedInstances(
  lineage: Lineage,
  ids: readonly string[],
  types: readonly string[] | null,
  hydrate = false,
): LinkedRecord[] {
  const wanted = typesMatching(types);
  const found = new Map<string, LinkedRecord>();
  for (const [direction, field] of [
    ['downstream', '_downstream_of'],
    ['upstream', '_upstream_of'],
  ] as const) {
    for (const start of new Set(ids)) {
      for (const id of reach(lineage, start, direction)) {
        const type = typeOf(lineage.records.get(id));
        if (!wanted.has(type)) continue;
        if (!found.has(id)) found.set(id, { id, type });
        const item = found.get(id)!;
        (item[field] ??= []).push(start);
      }
    }
  }
  return [...found.values()].sort(byId).map((item) => {
    for (const field of ['_downstream_of', '_upstream_of'] as const) item[field]?.sort();
    return hydrate ? { ...lineage.records.get(item.id)!, ...item } : item;
  });
}

export interface BiosampleDataObjects {
  biosample_id: string;
  data_objects: Doc[];
}

/**
 * What `/data_objects/study/{id}` should answer: for every biosample downstream of the study
 * that has data objects downstream of it, those data objects (whole records), biosamples and data
 * objects in id order. A data object descending from several biosamples is under each.
 */
export function dataObjectsForStudy(lineage: Lineage, studyId: string): BiosampleDataObjects[] {
  const biosampleTypes = classAndDescendants('nmdc:Biosample');
  const dataObjectTypes = classAndDescendants('nmdc:DataObject');
  const ofType = (ids: Iterable<string>, types: ReadonlySet<string>) =>
    [...ids]
      .map((id) => lineage.records.get(id)!)
      .filter((doc) => types.has(typeOf(doc)))
      .sort(byId);
  return ofType(reach(lineage, studyId, 'downstream'), biosampleTypes)
    .map((biosample) => ({
      biosample_id: biosample.id,
      data_objects: ofType(reach(lineage, biosample.id, 'downstream'), dataObjectTypes),
    }))
    .filter((group) => group.data_objects.length > 0);
}

/** The data objects of a study's answer, each biosample's rows in turn, as the notebooks flatten it. */
export function flatten(groups: BiosampleDataObjects[]): Array<Doc & { biosample_id: string }> {
  return groups.flatMap((g) => g.data_objects.map((d) => ({ ...d, biosample_id: g.biosample_id })));
}

/**
 * Whether every field of the flattened rows holds the same JSON kind wherever it appears (jsonlite
 * binds the data objects into one data frame per biosample and tidyr's `unnest` binds those: a
 * field that is a list here and a string there stops it). Answers the fields that do not.
 */
export function mixedKinds(rows: Doc[]): string[] {
  const kinds = new Map<string, Set<string>>();
  for (const row of rows) {
    for (const [field, value] of Object.entries(row)) {
      const kind = Array.isArray(value) ? 'array' : value === null ? 'null' : typeof value;
      if (!kinds.has(field)) kinds.set(field, new Set());
      kinds.get(field)!.add(kind);
    }
  }
  return [...kinds].filter(([, k]) => k.size > 1).map(([field]) => field);
}

/**
 * What the client relies on in every batch of a read: a 200 on every page, `resources` (and a
 * `next_page_token` exactly while more remain), the first page at most `maxPageSize` long and the
 * later ones at most 20 (the client does not send `max_page_size` again, so the default applies),
 * and the batch's pages together what the brute-force walk finds for the batch's ids, each once.
 * Answers the records the walk expects, batch after batch.
 */
export function expectLinkedBatches(
  lineage: Lineage,
  read: LinkedRead,
  types: string[] | null,
  { hydrate = false, maxPageSize = 500 } = {},
): Doc[] {
  expect(read.failed?.text).toBeUndefined();
  const all: Doc[] = [];
  for (const batch of read.batches) {
    const expected = linkedInstances(lineage, batch.ids, types, false);
    const whole = linkedInstances(lineage, batch.ids, types, true);
    const sizes = batch.pages.map((page, i) => {
      expect(page.status, `${batch.targets[i]}: ${page.text}`).toBe(200);
      expect(page.headers['content-type']).toMatch(/^application\/json/);
      const last = i === batch.pages.length - 1;
      expect(Object.keys(page.json).sort()).toEqual(last ? ['resources'] : ['next_page_token', 'resources']);
      return page.json.resources.length as number;
    });
    const firstSize = Math.min(maxPageSize, expected.length);
    const laterSizes: number[] = [];
    for (let left = expected.length - firstSize; left > 0; left -= 20) laterSizes.push(Math.min(20, left));
    expect(sizes).toEqual([firstSize, ...laterSizes]);
    // hydrate=True reaches the first page only; later pages are as slim as the default.
    const got = batch.pages.flatMap((p) => p.json.resources as Doc[]);
    expect(got).toEqual([...(hydrate ? whole : expected).slice(0, firstSize), ...expected.slice(firstSize)]);
    all.push(...got);
  }
  expect(read.records).toEqual(all);
  return all;
}
