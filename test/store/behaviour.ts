/**
 * The DocumentStore behaviour suite, written once against the port and run against every
 * adapter that can run here (`sqlite.test.ts` always, `mongo.test.ts` when MONGO_URL is set).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { statusOf } from '../../src/http/error-handler.ts';
import { DomainError, UnsupportedQuery } from '../../src/errors.ts';
import type { Doc, DocumentStore, Filter } from '../../src/store/port.ts';

export type StoreFactory = () => Promise<{ store: DocumentStore; dispose: () => Promise<void> }>;

const C = 'biosample_set';

const SAMPLES: Doc[] = [
  {
    id: 'nmdc:bsm-11-a1',
    type: 'nmdc:Biosample',
    name: 'Soil core from maize field',
    ecosystem_category: 'Terrestrial',
    associated_studies: ['nmdc:sty-11-s1'],
    depth: { has_numeric_value: 0.5 },
    lat_lon: { latitude: 42.1, longitude: -85.3 },
    tags: ['soil', 'maize'],
    scores: [3, 9],
    env_broad_scale: { term: { id: 'ENVO:00000446', name: 'terrestrial biome' } },
    samples: [
      { kind: 'core', mass: 10 },
      { kind: 'slurry', mass: 2 },
    ],
    description: 'first line\nsecond LINE',
  },
  {
    id: 'nmdc:bsm-11-a2',
    type: 'nmdc:Biosample',
    name: 'Leaf surface swab',
    ecosystem_category: 'Plants',
    associated_studies: ['nmdc:sty-11-s1', 'nmdc:sty-11-s2'],
    depth: { has_numeric_value: 2 },
    lat_lon: { latitude: -12.5, longitude: 130.8 },
    tags: ['leaf'],
    scores: [5],
    samples: [{ kind: 'swab', mass: 1 }],
  },
  {
    id: 'nmdc:bsm-11-a3',
    type: 'nmdc:Biosample',
    name: 'Rhizosphere soil',
    ecosystem_category: 'Plants',
    associated_studies: ['nmdc:sty-11-s2'],
    depth: { has_numeric_value: '10 cm' },
    tags: [],
    scores: 7,
  },
  {
    id: 'nmdc:bsm-11-a4',
    type: 'nmdc:Biosample',
    name: 'Lake sediment',
    ecosystem_category: 'Aquatic',
    depth: { has_numeric_value: null },
    scores: [[1, 2]],
  },
  { id: 'nmdc:bsm-11-a5', type: 'nmdc:Biosample', ecosystem_category: 'Aquatic', name: 42 },
];

const ids = (docs: Doc[]) => docs.map((d) => d.id);
const short = (docs: Doc[]) => docs.map((d) => d.id.replace('nmdc:bsm-11-', ''));

async function rejection(promise: Promise<unknown>): Promise<DomainError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof DomainError) return err;
    throw err;
  }
  throw new Error('expected the operation to fail');
}

export function describeDocumentStore(name: string, makeStore: StoreFactory): void {
  describe(`DocumentStore behaviour: ${name}`, () => {
    let store: DocumentStore;
    let dispose: () => Promise<void>;

    beforeEach(async () => {
      ({ store, dispose } = await makeStore());
      await store.upsertMany(C, SAMPLES);
    });
    afterEach(async () => {
      await dispose();
    });

    const match = async (filter: Filter) => short(await store.find(C, filter));

    describe('writes', () => {
      it('reads back an upserted record by id exactly, without _id', async () => {
        expect(await store.getById(C, 'nmdc:bsm-11-a1')).toEqual(SAMPLES[0]);
        expect(await store.getById(C, 'nmdc:bsm-11-missing')).toBeNull();
        expect(await store.getById('study_set', 'nmdc:bsm-11-a1')).toBeNull();
      });

      it('reports inserted and updated counts, and upserting the same records again changes nothing', async () => {
        const again = await store.upsertMany(C, SAMPLES);
        expect(again).toEqual({ inserted: 0, updated: SAMPLES.length });
        expect(await store.count(C, {})).toBe(SAMPLES.length);
        expect(await store.find(C, {})).toEqual(SAMPLES);
        const mixed = await store.upsertMany(C, [
          { id: 'nmdc:bsm-11-a1', type: 'nmdc:Biosample', name: 'renamed' },
          { id: 'nmdc:bsm-11-a9', type: 'nmdc:Biosample' },
        ]);
        expect(mixed).toEqual({ inserted: 1, updated: 1 });
        expect(await store.getById(C, 'nmdc:bsm-11-a1')).toEqual({
          id: 'nmdc:bsm-11-a1',
          type: 'nmdc:Biosample',
          name: 'renamed',
        });
      });

      it('replaces the indexed attributes of an updated record', async () => {
        await store.upsertMany(C, [{ id: 'nmdc:bsm-11-a2', ecosystem_category: 'Aquatic' }]);
        expect(await match({ ecosystem_category: 'Plants' })).toEqual(['a3']);
        expect(await store.count(C, { ecosystem_category: 'Aquatic' })).toBe(3);
      });

      it('drops _id from records it is given', async () => {
        await store.upsertMany(C, [{ id: 'nmdc:bsm-11-x', _id: 'abc', name: 'with _id' } as Doc]);
        expect(await store.getById(C, 'nmdc:bsm-11-x')).toEqual({ id: 'nmdc:bsm-11-x', name: 'with _id' });
      });

      it('writes all or nothing: a batch with one invalid record leaves the store unchanged', async () => {
        const bad = [{ id: 'nmdc:bsm-11-new1', name: 'ok' }, { name: 'no id' } as unknown as Doc];
        await expect(store.upsertMany(C, bad)).rejects.toThrow();
        expect(await store.getById(C, 'nmdc:bsm-11-new1')).toBeNull();
        expect(await store.count(C, {})).toBe(SAMPLES.length);
      });

      it('inserts a record only when its id is absent, and exactly once under concurrent attempts', async () => {
        const fresh = { id: 'nmdc:bsm-11-once', name: 'first' };
        expect(await store.insertIfAbsent(C, fresh)).toBe(true);
        expect(await store.insertIfAbsent(C, { id: 'nmdc:bsm-11-once', name: 'second' })).toBe(false);
        expect(await store.getById(C, 'nmdc:bsm-11-once')).toEqual(fresh);
        const attempts = await Promise.all(
          Array.from({ length: 8 }, (_, i) => store.insertIfAbsent(C, { id: 'nmdc:bsm-11-race', n: i })),
        );
        expect(attempts.filter(Boolean)).toHaveLength(1);
        const winner = attempts.indexOf(true);
        expect(await store.getById(C, 'nmdc:bsm-11-race')).toEqual({ id: 'nmdc:bsm-11-race', n: winner });
        const logged = (await store.changesSince(0)).changes.filter((c) => c.id === 'nmdc:bsm-11-race');
        expect(logged).toEqual([{ collection: C, id: 'nmdc:bsm-11-race', deleted: false }]);
      });

      it('reads, decides and writes in one step: concurrent read-modify-writes of one record lose nothing', async () => {
        await store.upsertMany('jobs', [{ id: 'sys-job-1', claims: [] }]);
        const claims = await Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            store.readModifyWrite([{ collection: 'jobs', id: 'sys-job-1' }], ([job]) => {
              const held = (job!.claims as Array<{ site: string }>).some((c) => c.site === `site-${i % 3}`);
              if (held) return { writes: [], value: false };
              const next = {
                ...job!,
                claims: [...(job!.claims as unknown[]), { site: `site-${i % 3}`, op: i }],
              };
              return {
                writes: [
                  { collection: 'jobs', docs: [next] },
                  { collection: 'ops', docs: [{ id: `op-${i}` }] },
                ],
                value: true,
              };
            }),
          ),
        );
        // Three sites, each claiming four times: exactly one claim per site, each with its operation.
        expect(claims.filter(Boolean)).toHaveLength(3);
        const job = await store.getById('jobs', 'sys-job-1');
        const held = job!.claims as Array<{ site: string; op: number }>;
        expect(held.map((c) => c.site).sort()).toEqual(['site-0', 'site-1', 'site-2']);
        const ops = await store.find('ops', {});
        expect(ops.map((o) => o.id).sort()).toEqual(held.map((c) => `op-${c.op}`).sort());
      });

      it('hands absent records to the decision as null, and writes nothing when the decision throws', async () => {
        const seen: Array<Array<Doc | null>> = [];
        const value = await store.readModifyWrite(
          [
            { collection: 'jobs', id: 'sys-absent' },
            { collection: C, id: 'nmdc:bsm-11-a1' },
          ],
          (current) => {
            seen.push(current);
            return {
              writes: [{ collection: 'jobs', docs: [{ id: 'sys-absent', made: true }] }],
              value: 'made',
            };
          },
        );
        expect(value).toBe('made');
        expect(seen[0]![0]).toBeNull();
        expect(seen[0]![1]!.id).toBe('nmdc:bsm-11-a1');
        expect(await store.getById('jobs', 'sys-absent')).toEqual({ id: 'sys-absent', made: true });
        await expect(
          store.readModifyWrite([{ collection: 'jobs', id: 'sys-absent' }], () => {
            throw new Error('refused');
          }),
        ).rejects.toThrow('refused');
        await expect(
          store.readModifyWrite([{ collection: 'jobs', id: 'sys-absent' }], () => ({
            writes: [
              { collection: 'jobs', docs: [{ id: 'sys-absent', made: false }] },
              { collection: 'jobs', docs: [{ name: 'no id' } as unknown as Doc] },
            ],
            value: null,
          })),
        ).rejects.toThrow(/no string id/);
        expect(await store.getById('jobs', 'sys-absent')).toEqual({ id: 'sys-absent', made: true });
      });

      it('deletes the records a decision names in the same transaction, before its writes', async () => {
        await store.upsertMany(C, [
          { id: 'nmdc:bsm-11-old', name: 'old id' },
          { id: 'nmdc:bsm-11-kept', name: 'kept' },
        ]);
        const since = await store.latestSeq();
        const value = await store.readModifyWrite([{ collection: C, id: 'nmdc:bsm-11-old' }], ([old]) => ({
          // A change of id: the record under its new id, the old one gone; an absent key is skipped.
          writes: [{ collection: C, docs: [{ ...old!, id: 'nmdc:bsm-11-new' }] }],
          deletes: [
            { collection: C, id: 'nmdc:bsm-11-old' },
            { collection: C, id: 'nmdc:bsm-11-absent' },
          ],
          value: old!.name,
        }));
        expect(value).toBe('old id');
        expect(await store.getById(C, 'nmdc:bsm-11-old')).toBeNull();
        expect(await store.getById(C, 'nmdc:bsm-11-new')).toEqual({ id: 'nmdc:bsm-11-new', name: 'old id' });
        expect(await store.count(C, { name: 'old id' })).toBe(1);
        const changes = (await store.changesSince(since)).changes;
        expect(changes).toEqual([
          { collection: C, id: 'nmdc:bsm-11-old', deleted: true },
          { collection: C, id: 'nmdc:bsm-11-new', deleted: false },
        ]);
        // A decision that throws deletes nothing either.
        await expect(
          store.readModifyWrite([{ collection: C, id: 'nmdc:bsm-11-kept' }], () => {
            throw new Error('refused');
          }),
        ).rejects.toThrow('refused');
        await expect(
          store.readModifyWrite([], () => ({
            writes: [{ collection: C, docs: [{ name: 'no id' } as unknown as Doc] }],
            deletes: [{ collection: C, id: 'nmdc:bsm-11-kept' }],
            value: null,
          })),
        ).rejects.toThrow(/no string id/);
        expect(await store.getById(C, 'nmdc:bsm-11-kept')).toEqual({ id: 'nmdc:bsm-11-kept', name: 'kept' });
      });

      it('upserts into several collections at once, all or nothing', async () => {
        const result = await store.upsertAtomically([
          { collection: 'study_set', docs: [{ id: 'nmdc:sty-11-t1', name: 'study' }] },
          { collection: C, docs: [{ id: 'nmdc:bsm-11-a1', name: 'replaced' }, { id: 'nmdc:bsm-11-t2' }] },
        ]);
        expect(result).toEqual({ inserted: 2, updated: 1 });
        expect(await store.getById('study_set', 'nmdc:sty-11-t1')).toEqual({
          id: 'nmdc:sty-11-t1',
          name: 'study',
        });
        expect(await store.getById(C, 'nmdc:bsm-11-a1')).toEqual({ id: 'nmdc:bsm-11-a1', name: 'replaced' });
        await expect(
          store.upsertAtomically([
            { collection: 'study_set', docs: [{ id: 'nmdc:sty-11-t3' }] },
            { collection: C, docs: [{ id: 'nmdc:bsm-11-t4' }, { name: 'no id' } as unknown as Doc] },
          ]),
        ).rejects.toThrow(/no string id/);
        expect(await store.getById('study_set', 'nmdc:sty-11-t3')).toBeNull();
        expect(await store.getById(C, 'nmdc:bsm-11-t4')).toBeNull();
      });

      it('deletes matching records, honouring the limit, and returns their ids', async () => {
        expect(await store.deleteMany(C, { ecosystem_category: 'Aquatic' }, 1)).toEqual(['nmdc:bsm-11-a4']);
        expect(await store.deleteMany(C, { ecosystem_category: { $in: ['Aquatic', 'Plants'] } })).toEqual([
          'nmdc:bsm-11-a2',
          'nmdc:bsm-11-a3',
          'nmdc:bsm-11-a5',
        ]);
        expect(await match({})).toEqual(['a1']);
        expect(await store.count(C, { ecosystem_category: 'Plants' })).toBe(0);
        expect(await store.deleteMany(C, { ecosystem_category: 'Plants' })).toEqual([]);
      });

      it('keeps any collection name apart from the others', async () => {
        await store.upsertMany('users', [{ id: 'alice', site_admin: ['s1'] }]);
        expect(await store.find('users', {})).toEqual([{ id: 'alice', site_admin: ['s1'] }]);
        expect(await store.count(C, { id: 'alice' })).toBe(0);
        expect((await store.nonEmptyCollections()).sort()).toEqual([C, 'users']);
      });
    });

    describe('filters follow MongoDB semantics', () => {
      it('matches equality on scalars, inside arrays and through dotted paths over arrays of objects', async () => {
        expect(await match({ ecosystem_category: 'Plants' })).toEqual(['a2', 'a3']);
        expect(await match({ associated_studies: 'nmdc:sty-11-s2' })).toEqual(['a2', 'a3']);
        expect(await match({ 'samples.kind': 'slurry' })).toEqual(['a1']);
        expect(await match({ 'env_broad_scale.term.name': 'terrestrial biome' })).toEqual(['a1']);
        expect(await match({ 'lat_lon.latitude': 42.1 })).toEqual(['a1']);
        expect(await match({ id: 'nmdc:bsm-11-a4' })).toEqual(['a4']);
        expect(await match({ tags: [] })).toEqual(['a3']);
        expect(await match({ scores: [1, 2] })).toEqual(['a4']);
        expect(await match({ scores: 1 })).toEqual([]);
        expect(await match({ name: 42 })).toEqual(['a5']);
        expect(await match({ name: '42' })).toEqual([]);
      });

      it('treats null as equal to missing and $ne as matching missing fields', async () => {
        expect(await match({ 'depth.has_numeric_value': null })).toEqual(['a4', 'a5']);
        expect(await match({ lat_lon: { $ne: null } })).toEqual(['a1', 'a2']);
        expect(await match({ ecosystem_category: { $ne: 'Plants' } })).toEqual(['a1', 'a4', 'a5']);
        expect(await match({ tags: { $ne: 'soil' } })).toEqual(['a2', 'a3', 'a4', 'a5']);
      });

      it('compares only within a type bracket for $gt $gte $lt $lte', async () => {
        expect(await match({ 'depth.has_numeric_value': { $gt: 1 } })).toEqual(['a2']);
        expect(await match({ 'depth.has_numeric_value': { $gte: 0.5, $lte: 2 } })).toEqual(['a1', 'a2']);
        expect(await match({ 'depth.has_numeric_value': { $lt: 100 } })).toEqual(['a1', 'a2']);
        expect(await match({ 'depth.has_numeric_value': { $gt: '' } })).toEqual(['a3']);
        expect(await match({ name: { $gte: 'M' } })).toEqual(['a1', 'a3']);
        expect(await match({ name: { $lt: 'M' } })).toEqual(['a2', 'a4']);
        expect(await match({ 'lat_lon.latitude': { $lt: 0 } })).toEqual(['a2']);
      });

      it('applies each range operator to any array element on its own', async () => {
        // [3, 9] has an element > 8 and an element < 4, though none is between them.
        expect(await match({ scores: { $gt: 8, $lt: 4 } })).toEqual(['a1']);
        expect(await match({ scores: { $elemMatch: { $gt: 8, $lt: 4 } } })).toEqual([]);
        expect(await match({ scores: { $elemMatch: { $gt: 4, $lt: 6 } } })).toEqual(['a2']);
      });

      it('supports $in, $nin and $exists', async () => {
        expect(await match({ ecosystem_category: { $in: ['Plants', 'Aquatic'] } })).toEqual([
          'a2',
          'a3',
          'a4',
          'a5',
        ]);
        expect(await match({ tags: { $in: ['maize', 'leaf'] } })).toEqual(['a1', 'a2']);
        expect(await match({ lat_lon: { $in: [null] } })).toEqual(['a3', 'a4', 'a5']);
        expect(await match({ ecosystem_category: { $nin: ['Plants', 'Aquatic'] } })).toEqual(['a1']);
        expect(await match({ lat_lon: { $exists: true } })).toEqual(['a1', 'a2']);
        expect(await match({ 'depth.has_numeric_value': { $exists: false } })).toEqual(['a5']);
        expect(await match({ 'samples.mass': { $exists: true } })).toEqual(['a1', 'a2']);
      });

      it('evaluates $regex with the i, m, s and x options on strings and string arrays', async () => {
        expect(await match({ name: { $regex: 'soil' } })).toEqual(['a3']);
        expect(await match({ name: { $regex: 'soil', $options: 'i' } })).toEqual(['a1', 'a3']);
        expect(await match({ tags: { $regex: '^ma' } })).toEqual(['a1']);
        expect(await match({ description: { $regex: '^second' } })).toEqual([]);
        expect(await match({ description: { $regex: '^second', $options: 'm' } })).toEqual(['a1']);
        expect(await match({ description: { $regex: 'line.second' } })).toEqual([]);
        expect(await match({ description: { $regex: 'line.second', $options: 's' } })).toEqual(['a1']);
        expect(await match({ name: { $regex: ' l e a f # a comment\n', $options: 'xi' } })).toEqual(['a2']);
        expect(await match({ name: { $regex: 'Leaf[ ]surface', $options: 'x' } })).toEqual(['a2']);
        expect(await match({ name: { $regex: '4' } })).toEqual([]);
      });

      it('reads a backslash before any character that is not an ASCII letter or digit as that character', async () => {
        // Clients escape every non-word character of a value they search for, as PCRE allows.
        await store.upsertMany(C, [{ id: 'nmdc:bsm-11-t1', name: 'Incubated at 25 °C – it’s warm' }]);
        expect(await match({ name: { $regex: '25\\ \\°C\\ \\–\\ it\\’s', $options: 'i' } })).toEqual(['t1']);
        expect(await match({ name: { $regex: '[\\°]C' } })).toEqual(['t1']);
        expect(await match({ name: { $regex: '\\\\°' } })).toEqual([]);
      });

      it('evaluates $regex under $not, $elemMatch, $and, $or and $nor', async () => {
        expect(await match({ name: { $not: { $regex: 'soil', $options: 'i' } } })).toEqual([
          'a2',
          'a4',
          'a5',
        ]);
        expect(await match({ samples: { $elemMatch: { kind: { $regex: '^sw' } } } })).toEqual(['a2']);
        expect(await match({ $or: [{ name: { $regex: '^Lake' } }, { tags: { $regex: 'lea' } }] })).toEqual([
          'a2',
          'a4',
        ]);
        expect(await match({ $and: [{ name: { $regex: 'o' } }, { name: { $regex: 'i' } }] })).toEqual([
          'a1',
          'a3',
        ]);
        expect(await match({ $nor: [{ name: { $regex: 'o' } }] })).toEqual(['a2', 'a4', 'a5']);
      });

      it('rejects a regex the linear-time engine cannot run with 422 and the reason', async () => {
        for (const pattern of ['(?=soil)', '(a)\\1', '(?<!x)y']) {
          const err = await rejection(store.find(C, { name: { $regex: pattern } }));
          expect(err).toBeInstanceOf(UnsupportedQuery);
          expect(statusOf(err)).toBe(422);
          expect(String(err.detail)).toContain('not supported');
          expect(String(err.detail)).toContain(JSON.stringify(pattern));
        }
        const err = await rejection(store.count(C, { name: { $regex: 'a', $options: 'q' } }));
        expect(err).toBeInstanceOf(UnsupportedQuery);
      });

      it('combines clauses with $and, $or and $nor', async () => {
        expect(await match({ $and: [{ ecosystem_category: 'Plants' }, { tags: 'leaf' }] })).toEqual(['a2']);
        expect(await match({ $or: [{ ecosystem_category: 'Terrestrial' }, { name: 42 }] })).toEqual([
          'a1',
          'a5',
        ]);
        expect(
          await match({ $nor: [{ ecosystem_category: 'Plants' }, { ecosystem_category: 'Aquatic' }] }),
        ).toEqual(['a1']);
        expect(await match({ ecosystem_category: 'Plants', $or: [{ scores: 7 }, { scores: 9 }] })).toEqual([
          'a3',
        ]);
      });

      it('supports $not, $elemMatch on objects, $all and $size', async () => {
        expect(await match({ 'depth.has_numeric_value': { $not: { $gt: 1 } } })).toEqual([
          'a1',
          'a3',
          'a4',
          'a5',
        ]);
        expect(await match({ samples: { $elemMatch: { kind: 'core', mass: { $gte: 10 } } } })).toEqual([
          'a1',
        ]);
        expect(await match({ samples: { $elemMatch: { kind: 'slurry', mass: { $gte: 10 } } } })).toEqual([]);
        expect(await match({ associated_studies: { $all: ['nmdc:sty-11-s2', 'nmdc:sty-11-s1'] } })).toEqual([
          'a2',
        ]);
        expect(await match({ tags: { $size: 0 } })).toEqual(['a3']);
        expect(await match({ associated_studies: { $size: 1 } })).toEqual(['a1', 'a3']);
      });

      it('counts exactly what find returns', async () => {
        const filters: Filter[] = [
          {},
          { ecosystem_category: 'Plants' },
          { ecosystem_category: { $in: ['Plants', 'Aquatic'] } },
          { 'depth.has_numeric_value': { $gte: 0 } },
          { ecosystem_category: 'Plants', 'depth.has_numeric_value': { $gte: 0 } },
          { scores: { $gt: 8, $lt: 4 } },
          { name: { $regex: 'o' } },
          { type: 'nmdc:Biosample', associated_studies: 'nmdc:sty-11-s1' },
        ];
        for (const filter of filters) {
          expect(await store.count(C, filter), JSON.stringify(filter)).toBe(
            (await store.find(C, filter)).length,
          );
        }
      });
    });

    describe('sort, projection and paging', () => {
      it('sorts by type bracket, arrays by their smallest element ascending and largest descending, id breaking ties', async () => {
        expect(short(await store.find(C, {}, { sort: [['scores', 1]] }))).toEqual([
          'a5',
          'a1',
          'a2',
          'a3',
          'a4',
        ]);
        expect(short(await store.find(C, {}, { sort: [['scores', -1]] }))).toEqual([
          'a4',
          'a1',
          'a3',
          'a2',
          'a5',
        ]);
        expect(short(await store.find(C, {}, { sort: [['depth.has_numeric_value', 1]] }))).toEqual([
          'a4',
          'a5',
          'a1',
          'a2',
          'a3',
        ]);
        expect(short(await store.find(C, {}, { sort: [['ecosystem_category', -1]] }))).toEqual([
          'a1',
          'a2',
          'a3',
          'a4',
          'a5',
        ]);
        expect(short(await store.find(C, {}, { sort: [['name', 1]] }))).toEqual([
          'a5',
          'a4',
          'a2',
          'a3',
          'a1',
        ]);
        expect(short(await store.find(C, {}, { sort: [['id', -1]] }))).toEqual([
          'a5',
          'a4',
          'a3',
          'a2',
          'a1',
        ]);
      });

      it('sorts only the matches, then applies skip and limit', async () => {
        const page = await store.find(
          C,
          { type: 'nmdc:Biosample' },
          { sort: [['name', -1]], skip: 1, limit: 2 },
        );
        expect(short(page)).toEqual(['a3', 'a2']);
        expect(short(await store.find(C, {}, { skip: 3 }))).toEqual(['a4', 'a5']);
        expect(short(await store.find(C, {}, { skip: 1, limit: 2 }))).toEqual(['a2', 'a3']);
      });

      it('sorts candidate-restricted and indexed matches, including keys that reach arrays and objects', async () => {
        const candidateIds = ['nmdc:bsm-11-a1', 'nmdc:bsm-11-a3', 'nmdc:bsm-11-a4'];
        expect(short(await store.find(C, {}, { sort: [['scores', -1]], candidateIds }))).toEqual([
          'a4',
          'a1',
          'a3',
        ]);
        expect(
          short(
            await store.find(
              C,
              { ecosystem_category: 'Plants' },
              { sort: [['scores', -1]], limit: 1, candidateIds },
            ),
          ),
        ).toEqual(['a3']);
        expect(
          short(await store.find(C, { type: 'nmdc:Biosample' }, { sort: [['samples.mass', 1]] })),
        ).toEqual(['a3', 'a4', 'a5', 'a2', 'a1']);
        expect(
          short(
            await store.find(
              C,
              { type: 'nmdc:Biosample' },
              {
                sort: [
                  ['lat_lon', -1],
                  ['name', 1],
                ],
                limit: 3,
              },
            ),
          ),
        ).toEqual(['a1', 'a2', 'a5']);
      });

      it('projects dotted paths, always includes id and never _id', async () => {
        const [doc] = await store.find(
          C,
          { id: 'nmdc:bsm-11-a1' },
          { projection: ['name', 'lat_lon.latitude', 'samples.kind'] },
        );
        expect(doc).toEqual({
          id: 'nmdc:bsm-11-a1',
          name: 'Soil core from maize field',
          lat_lon: { latitude: 42.1 },
          samples: [{ kind: 'core' }, { kind: 'slurry' }],
        });
        expect(await store.getById(C, 'nmdc:bsm-11-a3', ['ecosystem_category', '_id'])).toEqual({
          id: 'nmdc:bsm-11-a3',
          ecosystem_category: 'Plants',
        });
        expect(await store.find(C, { id: 'nmdc:bsm-11-a5' }, { projection: ['lat_lon'] })).toEqual([
          { id: 'nmdc:bsm-11-a5' },
        ]);
      });

      it('restricts to candidate ids and still applies the whole filter', async () => {
        const candidateIds = ['nmdc:bsm-11-a3', 'nmdc:bsm-11-a1', 'nmdc:bsm-11-a2', 'nmdc:bsm-11-nope'];
        expect(short(await store.find(C, { ecosystem_category: 'Plants' }, { candidateIds }))).toEqual([
          'a2',
          'a3',
        ]);
        expect(short(await store.find(C, {}, { candidateIds }))).toEqual(['a1', 'a2', 'a3']);
        expect(await store.count(C, { ecosystem_category: 'Plants' }, candidateIds)).toBe(2);
        expect(await store.count(C, { name: { $regex: 'soil', $options: 'i' } }, candidateIds)).toBe(2);
        expect(await store.count(C, {}, candidateIds)).toBe(3);
        expect(await store.find(C, {}, { candidateIds: [] })).toEqual([]);
      });

      it('pages with afterId to the end without duplicates or gaps', async () => {
        const many: Doc[] = [];
        for (let i = 0; i < 57; i++) {
          many.push({
            id: `nmdc:dobj-11-${String(i).padStart(3, '0')}`,
            data_object_type: i % 3 === 0 ? 'QC Statistics' : 'Other',
            n: i,
          });
        }
        await store.upsertMany('data_object_set', many);
        for (const filter of [{}, { data_object_type: 'QC Statistics' }, { n: { $gte: 10 } }] as Filter[]) {
          const expected = ids(await store.find('data_object_set', filter));
          const seen: string[] = [];
          let afterId: string | undefined;
          for (;;) {
            const page = await store.find('data_object_set', filter, { afterId, limit: 10 });
            if (page.length === 0) break;
            seen.push(...ids(page));
            afterId = page[page.length - 1]!.id;
          }
          expect(seen).toEqual(expected);
          expect(new Set(seen).size).toBe(seen.length);
        }
        const pages = await store.find(
          'data_object_set',
          { data_object_type: 'QC Statistics' },
          { afterId: 'nmdc:dobj-11-050', limit: 5 },
        );
        expect(ids(pages)).toEqual(['nmdc:dobj-11-051', 'nmdc:dobj-11-054']);
      });

      it('scans a collection in id order, in batches', async () => {
        const batches: string[][] = [];
        for await (const batch of store.scan(C, 2)) batches.push(short(batch));
        expect(batches).toEqual([['a1', 'a2'], ['a3', 'a4'], ['a5']]);
      });
    });

    describe('collections and changes', () => {
      it('lists non-empty collections and reports their stats', async () => {
        await store.upsertMany('study_set', [{ id: 'nmdc:sty-11-s1', name: 'Maize study' }]);
        await store.upsertMany('data_object_set', [{ id: 'nmdc:dobj-11-gone' }]);
        await store.deleteMany('data_object_set', {});
        expect((await store.nonEmptyCollections()).sort()).toEqual([C, 'study_set']);
        const stats = await store.collectionStats();
        const bsm = stats.find((s) => s.collection === C)!;
        expect(bsm.count).toBe(SAMPLES.length);
        expect(bsm.size).toBeGreaterThan(JSON.stringify(SAMPLES).length * 0.5);
        expect(bsm.avgObjSize).toBeCloseTo(bsm.size / bsm.count, -1);
        expect(bsm.totalSize).toBeGreaterThanOrEqual(bsm.storageSize);
        expect(stats.find((s) => s.collection === 'study_set')!.count).toBe(1);
        expect(stats.find((s) => s.collection === 'data_object_set')?.count ?? 0).toBe(0);
      });

      it('reports changes since a sequence, including deletions, and nothing after catching up', async () => {
        const start = await store.changesSince(0);
        expect(start.changes).toEqual(
          expect.arrayContaining(SAMPLES.map((d) => ({ collection: C, id: d.id, deleted: false }))),
        );
        await store.upsertMany(C, [{ id: 'nmdc:bsm-11-a9' }]);
        await store.deleteMany(C, { id: 'nmdc:bsm-11-a1' });
        const next = await store.changesSince(start.seq);
        expect(next.changes).toEqual([
          { collection: C, id: 'nmdc:bsm-11-a9', deleted: false },
          { collection: C, id: 'nmdc:bsm-11-a1', deleted: true },
        ]);
        expect(next.seq).toBeGreaterThan(start.seq);
        expect((await store.changesSince(next.seq)).changes).toEqual([]);
        expect(await store.latestSeq()).toBe(next.seq);
        await store.upsertMany(C, [{ id: 'nmdc:bsm-11-a8' }]);
        const latest = await store.latestSeq();
        expect(latest).toBeGreaterThan(next.seq);
        expect((await store.changesSince(next.seq)).seq).toBe(latest);
        // A limit reads that many changes, says more follow, and the next page starts after them.
        const first = await store.changesSince(start.seq, 2);
        expect(first).toEqual({ changes: next.changes, seq: first.seq, more: true });
        const rest = await store.changesSince(first.seq, 2);
        expect(rest.changes).toEqual([{ collection: C, id: 'nmdc:bsm-11-a8', deleted: false }]);
        expect(rest.more).toBeUndefined();
        expect(rest.seq).toBe(latest);
      });
    });

    describe('state store', () => {
      it('puts, gets, overwrites and deletes values by kind and key', async () => {
        await store.state.put('page-token', 't1', { offset: 20 });
        await store.state.put('cursor', 't1', 'other kind');
        expect(await store.state.get('page-token', 't1')).toEqual({ offset: 20 });
        await store.state.put('page-token', 't1', { offset: 40 });
        expect(await store.state.get('page-token', 't1')).toEqual({ offset: 40 });
        await store.state.delete('page-token', 't1');
        expect(await store.state.get('page-token', 't1')).toBeUndefined();
        expect(await store.state.get('cursor', 't1')).toBe('other kind');
      });

      it('stops returning a value once it expires', async () => {
        await store.state.put('page-token', 'short', { n: 1 }, 0.05);
        await store.state.put('page-token', 'long', { n: 2 }, 60);
        expect(await store.state.get('page-token', 'short')).toEqual({ n: 1 });
        await new Promise((r) => setTimeout(r, 120));
        expect(await store.state.get('page-token', 'short')).toBeUndefined();
        expect(await store.state.get('page-token', 'long')).toEqual({ n: 2 });
        expect(await store.state.findBy('page-token', 'n', '1')).toEqual([]);
      });

      it('finds and deletes values by a field of the stored value', async () => {
        await store.state.put('AccessToken', 'a', { grantId: 'g1', uid: 'u1' });
        await store.state.put('RefreshToken', 'b', { grantId: 'g1' });
        await store.state.put('AccessToken', 'c', { grantId: 'g2' });
        expect(await store.state.findBy('AccessToken', 'grantId', 'g1')).toEqual([
          { key: 'a', value: { grantId: 'g1', uid: 'u1' } },
        ]);
        expect(await store.state.findBy('AccessToken', 'uid', 'u1')).toEqual([
          { key: 'a', value: { grantId: 'g1', uid: 'u1' } },
        ]);
        expect(await store.state.deleteBy('AccessToken', 'grantId', 'g1')).toBe(1);
        expect(await store.state.get('AccessToken', 'a')).toBeUndefined();
        expect(await store.state.get('RefreshToken', 'b')).toEqual({ grantId: 'g1' });
        expect(await store.state.get('AccessToken', 'c')).toEqual({ grantId: 'g2' });
      });

      it('increments a counter from 1, separately per kind and key, readable with get', async () => {
        expect(await store.state.increment('login-failures', 'alice', 60)).toBe(1);
        expect(await store.state.increment('login-failures', 'alice', 60)).toBe(2);
        expect(await store.state.increment('login-failures', 'bob', 60)).toBe(1);
        expect(await store.state.increment('login-attempts', 'alice', 60)).toBe(1);
        expect(await store.state.increment('login-failures', 'alice', 60)).toBe(3);
        expect(await store.state.get('login-failures', 'alice')).toBe(3);
        await store.state.delete('login-failures', 'alice');
        expect(await store.state.increment('login-failures', 'alice', 60)).toBe(1);
      });

      it('never loses a count when many increments of one counter run at once', async () => {
        const counts = await Promise.all(
          Array.from({ length: 40 }, () => store.state.increment('login-attempts', 'shared', 60)),
        );
        expect([...counts].sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
        expect(await store.state.get('login-attempts', 'shared')).toBe(40);
      });

      it('starts an expired counter again at 1, and keeps a live counter in its first window', async () => {
        await store.state.increment('login-failures', 'short', 0.05);
        expect(await store.state.increment('login-failures', 'short', 0.05)).toBe(2);
        // A live counter keeps the expiry of its first increment, however long later ones ask for.
        expect(await store.state.increment('login-failures', 'short', 60)).toBe(3);
        await new Promise((r) => setTimeout(r, 120));
        expect(await store.state.get('login-failures', 'short')).toBeUndefined();
        expect(await store.state.increment('login-failures', 'short', 60)).toBe(1);
        expect(await store.state.increment('login-failures', 'short', 60)).toBe(2);
      });
    });
  });
}
