import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { createTestApp, type TestApp } from '../support/server.ts';
import type { Doc } from '../../src/store/port.ts';
import { COLLECTION_NAMES } from '../../src/schema/nmdc.ts';

let t: TestApp;

const biosample = (n: number): Doc => ({
  id: `nmdc:bsm-11-n${String(n).padStart(3, '0')}`,
  type: 'nmdc:Biosample',
  name: `Sample ${n}`,
  ecosystem_category: n % 2 ? 'Plants' : 'Aquatic',
  lat_lon: { latitude: 40 + (n % 10), longitude: -120 },
});

beforeAll(async () => {
  t = await createTestApp();
  await t.store.upsertMany(
    'biosample_set',
    Array.from({ length: 45 }, (_, i) => biosample(i)),
  );
  await t.store.upsertMany('study_set', [{ id: 'nmdc:sty-11-only', name: 'Only study' }]);
  await t.store.upsertMany('data_object_set', [
    { id: 'nmdc:dobj-11-d1', name: 'reads.fastq', data_object_type: 'Metagenome Raw Reads' },
  ]);
});
afterAll(async () => t?.close());

describe('schema facts', () => {
  it('reports the schema version as a JSON string', async () => {
    const res = await request(t.app).get('/nmdcschema/version').expect(200);
    expect(typeof res.body).toBe('string');
    expect(res.body).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('lists typecodes with their classes', async () => {
    const res = await request(t.app).get('/nmdcschema/typecodes').expect(200);
    expect(res.body).toContainEqual({ id: 'nmdc:Study_typecode', schema_class: 'nmdc:Study', name: 'sty' });
    expect(res.body).toContainEqual({
      id: 'nmdc:Biosample_typecode',
      schema_class: 'nmdc:Biosample',
      name: 'bsm',
    });
  });

  it('lists the sorted collection names', async () => {
    const res = await request(t.app).get('/nmdcschema/collection_names').expect(200);
    expect(res.body).toEqual([...COLLECTION_NAMES].sort());
    expect(res.body).toHaveLength(19);
  });

  it('reports stats for non-empty collections only', async () => {
    const res = await request(t.app).get('/nmdcschema/collection_stats').expect(200);
    const byNs = Object.fromEntries(res.body.map((s: any) => [s.ns.split('.').pop(), s.storageStats]));
    expect(Object.keys(byNs).sort()).toEqual(['biosample_set', 'data_object_set', 'study_set']);
    expect(byNs.biosample_set.count).toBe(45);
    expect(byNs.biosample_set.size).toBeGreaterThan(0);
    expect(byNs.biosample_set.avgObjSize).toBeGreaterThan(0);
    expect(byNs.biosample_set.scaleFactor).toBe(1);
  });
});

describe('GET /nmdcschema/{collection_name}', () => {
  it('filters with a JSON filter and projects, always including id', async () => {
    const filter = JSON.stringify({ 'lat_lon.latitude': { $gt: 47 }, ecosystem_category: 'Plants' });
    const res = await request(t.app)
      .get('/nmdcschema/biosample_set')
      .query({ filter, projection: 'name', max_page_size: 100 })
      .expect(200);
    // odd n with n % 10 in {9}: 9,19,29,39
    expect(res.body.resources.map((r: Doc) => r.id)).toEqual([
      'nmdc:bsm-11-n009',
      'nmdc:bsm-11-n019',
      'nmdc:bsm-11-n029',
      'nmdc:bsm-11-n039',
    ]);
    for (const r of res.body.resources) expect(Object.keys(r).sort()).toEqual(['id', 'name']);
    expect(res.body).not.toHaveProperty('next_page_token');
  });

  it('pages in id order with page tokens until none is returned', async () => {
    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const res = await request(t.app)
        .get('/nmdcschema/biosample_set')
        .query({ max_page_size: 20, ...(token ? { page_token: token } : {}) })
        .expect(200);
      seen.push(...res.body.resources.map((r: Doc) => r.id));
      token = res.body.next_page_token;
      pages++;
    } while (token);
    expect(pages).toBe(3);
    expect(seen).toEqual([...seen].sort());
    expect(new Set(seen).size).toBe(45);
  });

  it('returns everything on one page when max_page_size is below 1', async () => {
    const res = await request(t.app).get('/nmdcschema/biosample_set?max_page_size=0').expect(200);
    expect(res.body.resources).toHaveLength(45);
    expect(res.body).not.toHaveProperty('next_page_token');
  });

  it('defaults to pages of 20', async () => {
    const res = await request(t.app).get('/nmdcschema/biosample_set').expect(200);
    expect(res.body.resources).toHaveLength(20);
    expect(typeof res.body.next_page_token).toBe('string');
  });

  it('answers 400 for an unknown collection, listing the valid names', async () => {
    const res = await request(t.app).get('/nmdcschema/nope_set').expect(400);
    expect(res.body.detail).toContain('biosample_set');
    expect(res.body.detail).toContain('nope_set');
  });

  it('answers 422 for a filter that is not JSON or not an object, and for a forbidden operator', async () => {
    expect(
      (await request(t.app).get('/nmdcschema/biosample_set').query({ filter: '{bad' }).expect(422)).body
        .detail,
    ).toContain('JSON');
    expect(
      (await request(t.app).get('/nmdcschema/biosample_set').query({ filter: '[1]' }).expect(422)).body
        .detail,
    ).toContain('object');
    const where = await request(t.app)
      .get('/nmdcschema/biosample_set')
      .query({ filter: '{"$where": "sleep(100)"}' })
      .expect(422);
    expect(where.body.detail).toContain('$where');
  });

  it('answers 400 for an unknown page token', async () => {
    const res = await request(t.app).get('/nmdcschema/biosample_set?page_token=doesnotexist').expect(400);
    expect(res.body).toEqual({ detail: '`page_token` not found' });
  });
});

describe('records by id', () => {
  it('finds a record in whichever collection holds it', async () => {
    const res = await request(t.app).get('/nmdcschema/ids/nmdc:dobj-11-d1').expect(200);
    expect(res.body).toEqual({
      id: 'nmdc:dobj-11-d1',
      name: 'reads.fastq',
      data_object_type: 'Metagenome Raw Reads',
    });
    const name = await request(t.app).get('/nmdcschema/ids/nmdc:dobj-11-d1/collection-name').expect(200);
    expect(name.body).toEqual({ id: 'nmdc:dobj-11-d1', collection_name: 'data_object_set' });
    expect((await request(t.app).get('/nmdcschema/ids/nmdc:dobj-11-none').expect(404)).body).toEqual({
      detail: 'Not found',
    });
  });

  it('says why no collection holds an id, as the original does', async () => {
    const why = async (id: string) =>
      (await request(t.app).get(`/nmdcschema/ids/${id}/collection-name`).expect(404)).body;
    expect(await why('nmdc:dobj-11-none')).toEqual({
      detail: 'The specified `id` does not belong to any documents.',
    });
    expect(await why('nmdc:zzz-11-none')).toEqual({
      detail: 'The specified `id` is not compatible with any schema classes.',
    });
    expect(await why('gold:Gs0110115')).toEqual({
      detail: 'The typecode portion of the specified `id` is invalid.',
    });
  });

  it('gets one record of a collection with a projection', async () => {
    const res = await request(t.app)
      .get('/nmdcschema/biosample_set/nmdc:bsm-11-n003?projection=ecosystem_category')
      .expect(200);
    expect(res.body).toEqual({ id: 'nmdc:bsm-11-n003', ecosystem_category: 'Plants' });
    await request(t.app).get('/nmdcschema/study_set/nmdc:bsm-11-n003').expect(404);
  });
});
