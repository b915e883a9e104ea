/**
 * Differential test of the provenance graph: random graphs (fast-check), and for each, random
 * `linked_instances` and `data_objects/study` questions answered through the edge index must equal
 * a brute-force walk over the records themselves — also after random rewrites and deletes, and
 * with references to records that do not exist (yet).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import type { Doc } from '../../src/store/port.ts';
import { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';
import { SqliteEdgeIndex } from '../../src/provenance/sqlite/edge-index.ts';
import { ProvenanceGraph } from '../../src/provenance/graph.ts';
import { referencesOf } from '../../src/schema/reference-slots.ts';
import { matchingTypes } from '../../src/schema/class-tree.ts';

/** Kinds of record, their collection, id typecode and the reference slots the generator fills. */
const KINDS = [
  { type: 'nmdc:Study', collection: 'study_set', code: 'sty', slots: ['part_of'] },
  { type: 'nmdc:Biosample', collection: 'biosample_set', code: 'bsm', slots: ['associated_studies'] },
  { type: 'nmdc:ProcessedSample', collection: 'processed_sample_set', code: 'procsm', slots: [] },
  {
    type: 'nmdc:Extraction',
    collection: 'material_processing_set',
    code: 'extrp',
    slots: ['has_input', 'has_output'],
  },
  {
    type: 'nmdc:NucleotideSequencing',
    collection: 'data_generation_set',
    code: 'dgns',
    slots: ['has_input', 'has_output', 'associated_studies'],
  },
  {
    type: 'nmdc:ReadQcAnalysis',
    collection: 'workflow_execution_set',
    code: 'wfrqc',
    slots: ['has_input', 'has_output', 'was_informed_by', 'superseded_by'],
  },
  {
    type: 'nmdc:DataObject',
    collection: 'data_object_set',
    code: 'dobj',
    slots: ['was_generated_by', 'in_manifest'],
  },
] as const;
const SINGLE_VALUED = new Set(['was_generated_by', 'superseded_by']);
const TYPE_CHOICES = [
  'nmdc:NamedThing',
  'nmdc:PlannedProcess',
  'nmdc:DataObject',
  'nmdc:Biosample',
  'nmdc:Study',
  'nmdc:MaterialEntity',
];

const idOf = (kind: number, n: number) => `nmdc:${KINDS[kind]!.code}-11-r${n}`;
/** Ids that may be referenced: 4 per kind, of which the generator makes a random subset. */
const ID_SPACE = KINDS.flatMap((_, k) => [0, 1, 2, 3].map((n) => ({ kind: k, id: idOf(k, n) })));

interface Graph {
  records: Map<string, { collection: string; doc: Doc }>;
}

const recordArb = (kind: number, n: number) =>
  fc
    .record({
      refs: fc.array(
        fc.record({
          slot: fc.constantFrom(...(KINDS[kind]!.slots as readonly string[]), 'x'),
          target: fc.nat(ID_SPACE.length + 1),
        }),
        { maxLength: 4 },
      ),
    })
    .map(({ refs }) => {
      const doc: Doc = { id: idOf(kind, n), type: KINDS[kind]!.type };
      for (const { slot, target } of refs) {
        if (slot === 'x') continue;
        // A target past the id space is a record that never exists.
        const id = target < ID_SPACE.length ? ID_SPACE[target]!.id : `nmdc:dobj-11-ghost${target}`;
        if (SINGLE_VALUED.has(slot)) doc[slot] = id;
        else doc[slot] = [...new Set([...((doc[slot] as string[]) ?? []), id])];
      }
      return { collection: KINDS[kind]!.collection, doc };
    });

/** A random subset of the id space, each present record with random references. */
const graphArb = fc
  .tuple(...ID_SPACE.map(({ kind }, i) => fc.option(recordArb(kind, i % 4), { freq: 4, nil: undefined })))
  .map((list) => {
    const records = new Map<string, { collection: string; doc: Doc }>();
    for (const r of list) if (r) records.set(r.doc.id, r);
    return { records } as Graph;
  });

/** Existing neighbours of every record, by direction, straight from the records. */
function neighbours(graph: Graph): Record<'downstream' | 'upstream', Map<string, Set<string>>> {
  const out = { downstream: new Map<string, Set<string>>(), upstream: new Map<string, Set<string>>() };
  const link = (dir: 'downstream' | 'upstream', from: string, to: string) => {
    if (!graph.records.has(from) || !graph.records.has(to)) return;
    let s = out[dir].get(from);
    if (!s) out[dir].set(from, (s = new Set()));
    s.add(to);
  };
  for (const { doc } of graph.records.values()) {
    for (const ref of referencesOf(doc)) {
      if (ref.id === doc.id) continue;
      const [up, down] = ref.direction === 'upstream' ? [ref.id, doc.id] : [doc.id, ref.id];
      link('downstream', up, down);
      link('upstream', down, up);
    }
  }
  return out;
}

/** Brute force: one plain breadth-first walk per start id. */
function expectedLinked(graph: Graph, ids: string[], types: string[]) {
  const n = neighbours(graph);
  const wanted = matchingTypes(types);
  const result = new Map<
    string,
    { id: string; type: string; _downstream_of?: string[]; _upstream_of?: string[] }
  >();
  for (const dir of ['downstream', 'upstream'] as const) {
    const field = dir === 'downstream' ? '_downstream_of' : '_upstream_of';
    for (const start of ids) {
      const seen = new Set<string>();
      const queue = [...(n[dir].get(start) ?? [])];
      while (queue.length > 0) {
        const id = queue.shift()!;
        if (seen.has(id)) continue;
        seen.add(id);
        queue.push(...(n[dir].get(id) ?? []));
      }
      for (const id of seen) {
        const type = graph.records.get(id)!.doc.type as string;
        if (!wanted.has(type)) continue;
        let item = result.get(id);
        if (!item) result.set(id, (item = { id, type }));
        item[field] = [...(item[field] ?? []), start].sort();
      }
    }
  }
  return [...result.values()].sort((a, b) => (a.id < b.id ? -1 : 1));
}

function expectedStudyDataObjects(graph: Graph, study: string) {
  const biosamples = expectedLinked(graph, [study], ['nmdc:Biosample'])
    .filter((r) => r._downstream_of)
    .map((r) => r.id);
  const groups: Array<{ biosample_id: string; data_objects: Doc[] }> = [];
  for (const b of biosamples) {
    const objects = expectedLinked(graph, [b], ['nmdc:DataObject']).filter((r) => r._downstream_of);
    if (objects.length > 0)
      groups.push({ biosample_id: b, data_objects: objects.map((o) => graph.records.get(o.id)!.doc) });
  }
  return groups;
}

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

async function open() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-graph-'));
  dirs.push(dir);
  const store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
  const edges = SqliteEdgeIndex.attachTo(store);
  return { store, edges, graph: new ProvenanceGraph(edges, store, store.state) };
}

async function write(
  store: SqliteDocumentStore,
  graph: Graph,
  docs: Array<{ collection: string; doc: Doc }>,
) {
  for (const { collection, doc } of docs) {
    await store.upsertMany(collection, [doc]);
    graph.records.set(doc.id, { collection, doc });
  }
}

async function check(service: ProvenanceGraph, graph: Graph, rnd: () => number) {
  const present = [...graph.records.keys()].sort();
  if (present.length === 0) return;
  for (let q = 0; q < 4; q++) {
    const ids = present.filter(() => rnd() < 0.25);
    if (ids.length === 0) ids.push(present[Math.floor(rnd() * present.length)]!);
    const types = TYPE_CHOICES.filter(() => rnd() < 0.3);
    const answer = await service.linkedInstances({ ids, types, hydrate: false, max_page_size: 0 });
    expect(answer.resources).toEqual(expectedLinked(graph, ids, types.length ? types : ['nmdc:NamedThing']));
  }
  for (const study of present.filter((id) => id.includes(':sty-'))) {
    const groups = [];
    for await (const g of service.dataObjectsForStudy(study)) groups.push(g);
    expect(groups).toEqual(expectedStudyDataObjects(graph, study));
  }
}

describe('provenance graph against a brute-force walk', () => {
  it('answers as the records say, before and after rewrites and deletes', async () => {
    await fc.assert(
      fc.asyncProperty(
        graphArb,
        fc.array(fc.tuple(fc.nat(ID_SPACE.length - 1), fc.boolean()), { maxLength: 8 }),
        fc.integer(),
        async (initial, changes, seed) => {
          let s = seed >>> 0;
          const rnd = () => ((s = (s * 1103515245 + 12345) >>> 0) / 2 ** 32) % 1;
          const { store, graph: service } = await open();
          try {
            const graph: Graph = { records: new Map() };
            await write(store, graph, [...initial.records.values()]);
            await check(service, graph, rnd);
            for (const [which, remove] of changes) {
              const { kind, id } = ID_SPACE[which]!;
              if (remove) {
                const found = graph.records.get(id);
                if (found) {
                  await store.deleteMany(found.collection, { id });
                  graph.records.delete(id);
                }
              } else {
                const [next] = fc.sample(recordArb(kind, which % 4), { numRuns: 1, seed: seed + which });
                await write(store, graph, [next!]);
              }
            }
            await check(service, graph, rnd);
          } finally {
            await store.close();
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});
