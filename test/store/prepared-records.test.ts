/**
 * Records the writing thread's workers prepare (src/store/sqlite/prepared-records.ts): they hold
 * what parsing the records would give, and written in that form they leave every table as the
 * records themselves would.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { generateDatabase } from '../../src/data/generator.ts';
import { edgesOf, typeOf } from '../../src/provenance/edges.ts';
import { SqliteEdgeIndex } from '../../src/provenance/sqlite/edge-index.ts';
import type { Doc } from '../../src/store/port.ts';
import { indexRecord } from '../../src/store/sqlite/attribute-index.ts';
import {
  prepareRecords,
  recordGraphAt,
  recordIndexAt,
  type PreparedRecords,
} from '../../src/store/sqlite/prepared-records.ts';
import type { ThreadWrite } from '../../src/store/sqlite/records.ts';
import { FtsSearchIndex } from '../../search/sqlite/fts-index.ts';
import { tables } from '../support/store-tables.ts';
import { openTemporaryStore, type TemporaryStore } from '../support/temporary-store.ts';

const DATABASE = generateDatabase({ studies: 2, biosamples: 30, dataObjects: 60, seed: 11 });

/** Records with what makes a record irregular at an indexed path: several values, null beside one, an odd id. */
const ODD: Doc[] = [
  { id: 'nmdc:bsm-11-odd1', type: 'nmdc:Biosample', name: ['first', 'second'], associated_studies: [] },
  { id: 'nmdc:bsm-11-odd2', type: 'nmdc:Biosample', ecosystem_category: [null, 'Terrestrial'] },
  { id: 'nmdc:bsm-11-\u{1F600}', type: 'nmdc:Biosample', name: 'odd id' },
  { id: 'nmdc:bsm-11-odd3', type: 'nmdc:Biosample', name: { nested: true }, file_size_bytes: 12 },
];

const graphOf = (doc: Doc) => ({ type: typeOf(doc), edges: edgesOf(doc) });

function prepared(docs: Doc[], graph = true): PreparedRecords {
  const records = prepareRecords(
    docs.map((d) => JSON.parse(JSON.stringify(d)) as Doc),
    graph ? graphOf : undefined,
  );
  if (!records) throw new Error('not prepared');
  return records;
}

const opened: TemporaryStore[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((t) => t.dispose()));
});

/** A store with the service's write hooks (search index, edges). */
function hooked(): TemporaryStore {
  const t = openTemporaryStore();
  FtsSearchIndex.attachTo(t.store);
  SqliteEdgeIndex.attachTo(t.store);
  opened.push(t);
  return t;
}

/** Writes `writes` in one held write on the store's own connection (the writing thread's side). */
async function write(t: TemporaryStore, writes: ThreadWrite[]): Promise<void> {
  const held = await t.store.beginAtomically();
  held.finish(writes);
}

describe('prepared records', () => {
  it('hold each record’s id, attribute entries, type and edges as parsing the record gives them', () => {
    const docs = [...Object.values(DATABASE).flat(), ...ODD];
    const records = prepared(docs);
    expect(records.ids).toEqual(docs.map((d) => d.id));
    expect(docs.map((_, i) => recordIndexAt(records, i))).toEqual(docs.map((d) => indexRecord(d)));
    expect(docs.map((_, i) => recordGraphAt(records, i))).toEqual(docs.map(graphOf));
    // The cases that matter are there: irregular records, and edges held at either end.
    expect(Object.keys(records.entries.irregular).length).toBeGreaterThanOrEqual(ODD.length);
    const holders = new Set(docs.flatMap((d) => edgesOf(d).map((e) => e.holder)));
    expect(holders).toEqual(new Set(['up', 'down']));
    expect(prepared(docs, false).graph).toBeUndefined();
  });

  it('are none when a text is not a record the store would write as it is', () => {
    for (const odd of [
      [1],
      [null],
      [[{ id: 'a' }]],
      [{ name: 'no id' }],
      [{ id: '' }],
      [{ id: 'x', _id: 'y' }],
    ])
      expect(prepareRecords([{ id: 'nmdc:fine' }, ...odd])).toBeUndefined();
  });

  it('written as they are, leave every table as the records would: inserts, updates, repeats and unchanged records', async () => {
    const biosamples = DATABASE.biosample_set!;
    const first: Array<{ collection: string; docs: Doc[] }> = [
      ...Object.entries(DATABASE).map(([collection, docs]) => ({ collection, docs })),
      { collection: 'biosample_set', docs: ODD },
    ];
    // Then: changed records, one written twice, one unchanged, odd ones changed, new ones.
    const second: Doc[] = [
      ...biosamples
        .slice(0, 10)
        .map((d) => ({ ...d, name: `${String(d.name)} again`, ecosystem_category: 'Aquatic' })),
      { ...biosamples[10]!, name: 'twice, first' },
      biosamples[11]!,
      { ...biosamples[10]!, name: 'twice, last' },
      { ...ODD[0]!, name: 'one value now' },
      { ...ODD[1]!, ecosystem_category: 'Terrestrial' },
      ...generateDatabase({ studies: 1, biosamples: 5, dataObjects: 0, seed: 12 }).biosample_set!.map(
        (d) => ({
          ...d,
          id: `${d.id}-new`,
        }),
      ),
    ];
    const asRecords = hooked();
    const asPrepared = hooked();
    const texted = (collection: string, docs: Doc[]) => ({
      collection,
      texts: docs.map((d) => JSON.stringify(d)),
      prepared: prepared(docs),
    });
    await write(asRecords, first);
    await write(asRecords, [{ collection: 'biosample_set', docs: second }]);
    await write(
      asPrepared,
      first.map(({ collection, docs }) => texted(collection, docs)),
    );
    await write(asPrepared, [texted('biosample_set', second)]);
    const written = tables(asPrepared.file);
    expect(written.graph_edges!.length).toBeGreaterThan(0);
    expect(written.attr_irregular!.length).toBeGreaterThan(0);
    expect(written).toEqual(tables(asRecords.file));
    expect(await asPrepared.store.getById('biosample_set', biosamples[10]!.id)).toMatchObject({
      name: 'twice, last',
    });
  });
});
