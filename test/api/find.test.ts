import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { createTestApp, type TestApp } from '../support/server.ts';
import type { Doc } from '../../src/store/port.ts';

let t: TestApp;

const study = (n: number): Doc => ({
  id: `nmdc:sty-11-s${String(n).padStart(4, '0')}`,
  type: 'nmdc:Study',
  name: n % 2 ? `Soil microbiome study ${n}` : `Rhizosphere survey ${n}`,
  ecosystem_category: n % 3 ? 'Terrestrial' : 'Plants',
});

const biosample = (n: number): Doc => ({
  id: `nmdc:bsm-11-b${String(n).padStart(4, '0')}`,
  type: 'nmdc:Biosample',
  name: `Sample ${n}`,
  associated_studies: [`nmdc:sty-11-s${String(n % 4).padStart(4, '0')}`],
  ecosystem_category: n % 5 === 0 ? 'Plants' : 'Terrestrial',
  depth: { has_numeric_value: n % 10, has_unit: 'm' },
  geo_loc_name: { has_raw_value: n % 2 ? 'USA: Oregon' : 'USA: Colorado' },
});

beforeAll(async () => {
  t = await createTestApp();
  await t.store.upsertMany(
    'study_set',
    Array.from({ length: 6 }, (_, i) => study(i)),
  );
  await t.store.upsertMany(
    'biosample_set',
    Array.from({ length: 120 }, (_, i) => biosample(i)),
  );
  await t.store.upsertMany('data_generation_set', [
    {
      id: 'nmdc:dgns-11-p0001',
      type: 'nmdc:NucleotideSequencing',
      name: 'Sequencing A',
      has_input: ['nmdc:bsm-11-b0001'],
    },
    {
      id: 'nmdc:dgns-11-p0003',
      type: 'nmdc:NucleotideSequencing',
      name: 'Sequencing B',
      has_input: ['nmdc:bsm-11-b0002'],
    },
  ]);
  await t.store.upsertMany('workflow_execution_set', [
    {
      id: 'nmdc:wfmgas-11-p0002',
      type: 'nmdc:MetagenomeAssembly',
      name: 'Assembly A',
      has_input: ['nmdc:dobj-11-x'],
    },
  ]);
  for (const c of ['study_set', 'biosample_set', 'data_generation_set', 'workflow_execution_set']) {
    const docs = await t.store.find(c, {});
    await t.searchIndex.index(c, docs);
  }
});
afterAll(async () => t?.close());

describe('GET /biosamples', () => {
  it('returns the first page with the total count and the filter echoed', async () => {
    const res = await request(t.app)
      .get('/biosamples?filter=ecosystem_category:Plants&per_page=5')
      .expect(200);
    expect(res.body.meta).toMatchObject({
      mongo_filter_dict: { ecosystem_category: 'Plants' },
      mongo_sort_list: null,
      count: 24,
      page: 1,
      per_page: 5,
    });
    expect(res.body.results).toHaveLength(5);
    expect(res.body.results.every((r: Doc) => r.ecosystem_category === 'Plants')).toBe(true);
    expect(res.body.group_by).toEqual([]);
    expect(res.body.results[0]).not.toHaveProperty('_id');
  });

  it('pages with page and per_page without overlap', async () => {
    const p1 = await request(t.app).get('/biosamples?per_page=50&page=1').expect(200);
    const p3 = await request(t.app).get('/biosamples?per_page=50&page=3').expect(200);
    expect(p1.body.meta.count).toBe(120);
    expect(p3.body.results).toHaveLength(20);
    const ids = new Set(p1.body.results.map((r: Doc) => r.id));
    expect(p3.body.results.some((r: Doc) => ids.has(r.id))).toBe(false);
  });

  it('filters with comparisons coerced to numbers and a text search', async () => {
    const res = await request(t.app)
      .get('/biosamples')
      .query({
        filter: 'depth.has_numeric_value:>=8,geo_loc_name.has_raw_value.search:oregon',
        per_page: 100,
      })
      .expect(200);
    expect(res.body.meta.mongo_filter_dict).toEqual({
      'depth.has_numeric_value': { $gte: 8 },
      'geo_loc_name.has_raw_value': { $regex: 'oregon', $options: 'i' },
    });
    // odd n with n % 10 in {9}: 12 of 120
    expect(res.body.meta.count).toBe(12);
    expect(res.body.results.every((r: any) => r.depth.has_numeric_value === 9)).toBe(true);
  });

  it('sorts descending with id as tie-breaker and echoes the sort list', async () => {
    const res = await request(t.app)
      .get('/biosamples?sort=depth.has_numeric_value:desc&per_page=15')
      .expect(200);
    expect(res.body.meta.mongo_sort_list).toEqual([['depth.has_numeric_value', -1]]);
    const depths = res.body.results.map((r: any) => r.depth.has_numeric_value);
    expect(depths.slice(0, 12)).toEqual(Array(12).fill(9));
    const nines = res.body.results.slice(0, 12).map((r: Doc) => r.id);
    expect([...nines].sort()).toEqual(nines);
  });

  it('projects fields, always with id, and echoes fields', async () => {
    const res = await request(t.app).get('/biosamples?fields=name&per_page=3').expect(200);
    expect(res.body.meta.fields).toBe('name');
    for (const r of res.body.results) expect(Object.keys(r).sort()).toEqual(['id', 'name']);
  });

  it('walks a cursor to the last page with no duplicates or gaps', async () => {
    const seen: string[] = [];
    let cursor = '*';
    let pages = 0;
    for (;;) {
      const res = await request(t.app)
        .get('/biosamples')
        .query({ cursor, per_page: 25, filter: 'ecosystem_category:Terrestrial' })
        .expect(200);
      expect(res.body.meta.page).toBeNull();
      expect(res.body.meta.count).toBe(96);
      seen.push(...res.body.results.map((r: Doc) => r.id));
      pages++;
      if (res.body.meta.next_cursor === null) break;
      cursor = res.body.meta.next_cursor;
    }
    expect(pages).toBe(4);
    expect(new Set(seen).size).toBe(96);
    const all = (await t.store.find('biosample_set', { ecosystem_category: 'Terrestrial' }))
      .map((d) => d.id)
      .sort();
    expect(seen).toEqual(all);
  });

  it('walks a sorted cursor in sort order', async () => {
    const seen: Array<{ id: string; d: number }> = [];
    let cursor = '*';
    for (;;) {
      const res = await request(t.app)
        .get('/biosamples')
        .query({ cursor, per_page: 40, sort: 'depth.has_numeric_value', fields: 'depth' })
        .expect(200);
      seen.push(...res.body.results.map((r: any) => ({ id: r.id, d: r.depth.has_numeric_value })));
      if (!res.body.meta.next_cursor) break;
      cursor = res.body.meta.next_cursor;
    }
    expect(seen).toHaveLength(120);
    const sorted = [...seen].sort((a, b) => a.d - b.d || (a.id < b.id ? -1 : 1));
    expect(seen).toEqual(sorted);
  });

  it('answers 400 for a malformed filter, sort or cursor', async () => {
    expect((await request(t.app).get('/biosamples?filter=ecosystem_category').expect(400)).body).toEqual({
      detail: 'Filter must be of form: attribute:spec[,attribute:spec]*',
    });
    expect((await request(t.app).get('/biosamples?sort=name:sideways').expect(400)).body.detail).toContain(
      'Sort must be of form',
    );
    expect((await request(t.app).get('/biosamples?cursor=nonsense').expect(400)).body).toEqual({
      detail: 'Bad cursor value',
    });
  });

  it('answers 422 when page and cursor are both given', async () => {
    const res = await request(t.app).get('/biosamples?cursor=*&page=2').expect(422);
    expect(res.body.detail).toContain('page or cursor');
  });

  it('answers 400 for page access beyond 10,000 records', async () => {
    const res = await request(t.app).get('/biosamples?page=12&per_page=1000').expect(400);
    expect(res.body.detail).toContain('cursor');
  });

  it('answers 422 naming per_page when it is out of range', async () => {
    for (const value of ['0', '5000']) {
      const res = await request(t.app).get(`/biosamples?per_page=${value}`).expect(422);
      expect(res.body.detail).toContain('per_page');
    }
  });

  it('refuses a cursor issued for another collection', async () => {
    const first = await request(t.app).get('/biosamples?cursor=*&per_page=10').expect(200);
    const res = await request(t.app).get(`/studies?cursor=${first.body.meta.next_cursor}`).expect(400);
    expect(res.body.detail).toBe('Bad cursor value');
  });
});

describe('by-id finds', () => {
  it('returns a study by id and 404 with Not found otherwise', async () => {
    const res = await request(t.app).get('/studies/nmdc:sty-11-s0001').expect(200);
    expect(res.body).toMatchObject({ id: 'nmdc:sty-11-s0001', name: 'Soil microbiome study 1' });
    expect((await request(t.app).get('/studies/nmdc:sty-11-nope').expect(404)).body).toEqual({
      detail: 'Not found',
    });
  });

  it('finds planned processes across their collections, also under /activities', async () => {
    const list = await request(t.app).get('/planned_processes?per_page=2').expect(200);
    expect(list.body.meta.count).toBe(3);
    expect(list.body.results.map((r: Doc) => r.id)).toEqual(['nmdc:dgns-11-p0001', 'nmdc:dgns-11-p0003']);
    const cursor1 = await request(t.app).get('/planned_processes?cursor=*&per_page=2').expect(200);
    const cursor2 = await request(t.app)
      .get(`/planned_processes?cursor=${cursor1.body.meta.next_cursor}&per_page=2`)
      .expect(200);
    expect(cursor2.body.results.map((r: Doc) => r.id)).toEqual(['nmdc:wfmgas-11-p0002']);
    expect(cursor2.body.meta.next_cursor).toBeNull();
    const one = await request(t.app).get('/planned_processes/nmdc:wfmgas-11-p0002').expect(200);
    expect(one.body.name).toBe('Assembly A');
    const legacy = await request(t.app).get('/activities?sort=name:desc').expect(200);
    expect(legacy.body.results.map((r: Doc) => r.name)).toEqual([
      'Sequencing B',
      'Sequencing A',
      'Assembly A',
    ]);
    const projected = await request(t.app).get('/planned_processes?sort=name&fields=name').expect(200);
    expect(projected.body.results).toEqual([
      { id: 'nmdc:wfmgas-11-p0002', name: 'Assembly A' },
      { id: 'nmdc:dgns-11-p0001', name: 'Sequencing A' },
      { id: 'nmdc:dgns-11-p0003', name: 'Sequencing B' },
    ]);
  });
});
