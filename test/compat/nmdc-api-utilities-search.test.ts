/**
 * nmdc_api_utilities (the NMDC Python client): nmdc_search.py (collection names, records by id
 * across collections, the schema version), lat_long_filters.py (the lat/long and proximity filters
 * of BiosampleSearch) and functional_search.py (functional annotation aggregates). Every request
 * is the one the client sends; expected answers come from the store or the seeded records.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Doc } from '../../src/store/port.ts';
import { SCHEMA_VERSION } from '../../src/schema/nmdc.ts';
import { startCompatServer, type CompatServer } from './support/server.ts';
import { send } from './support/wire.ts';
import { jsonDumps, requestsQuery } from './support/python.ts';
import {
  CLIENT_RECORDS,
  FAIRBANKS,
  FUNCTIONAL_ANNOTATION_AGG,
  LUQUILLO_STUDY_ID,
  LUQUILLO_STUDY_NAME,
} from './support/nmdc-api-utilities-records.ts';
import {
  READ_HEADERS,
  collectionQuery,
  expectFirstPage,
  expectPagedExactly,
  getAllPages,
  idsOf,
  project,
  pyFloat,
  setOrder,
} from './support/nmdc-api-utilities-client.ts';

let server: CompatServer;

beforeAll(async () => {
  server = await startCompatServer(CLIENT_RECORDS);
});
afterAll(async () => server?.close());

const get = (target: string) => send(server.url, { method: 'GET', target, headers: READ_HEADERS });

async function storeWhere(
  collection: string,
  keep: (d: Doc) => boolean = () => true,
  fields = '',
): Promise<Doc[]> {
  return (await server.store.find(collection, {})).filter(keep).map((d) => project(d, fields));
}

describe('nmdc_search.py', () => {
  it('NMDCSearch.get_collection_name_from_id("nmdc:sty-11-8fb6t785"): the raw id in the path', async () => {
    const res = await get('/nmdcschema/ids/nmdc:sty-11-8fb6t785/collection-name');
    expect(res.status, res.text).toBe(200);
    expect(await server.store.getById('study_set', LUQUILLO_STUDY_ID)).not.toBeNull();
    expect(res.json).toEqual({ id: LUQUILLO_STUDY_ID, collection_name: 'study_set' });
  });

  it.each([
    'biosample_set',
    'calibration_set',
    'collecting_biosamples_from_site_set',
    'configuration_set',
    'data_generation_set',
    'data_object_set',
    'instrument_set',
    'manifest_set',
    'material_processing_set',
    'processed_sample_set',
    'storage_process_set',
    'study_set',
    'workflow_execution_set',
  ])('NMDCSearch.get_collection_name_from_id of a record of %s', async (collection) => {
    const records = await server.store.find(collection, {});
    expect(records.length).toBeGreaterThan(0);
    for (const { id } of [records[0]!, records.at(-1)!]) {
      const res = await get(`/nmdcschema/ids/${id}/collection-name`);
      expect(res.status, `${id}: ${res.text}`).toBe(200);
      expect(res.json).toEqual({ id, collection_name: collection });
    }
  });

  it('NMDCSearch.get_collection_name_from_id of an id no collection holds: 404, which the client raises on', async () => {
    const res = await get('/nmdcschema/ids/nmdc:sty-11-00000000/collection-name');
    expect(res.status).toBe(404);
    expect(res.json).toEqual({ detail: expect.any(String) });
  });

  /**
   * The requests of get_records_by_id: ids sorted and grouped by the text before their first `-`;
   * per group, the collection name of its first id, then get_batch_records on "id" (one chunk,
   * max_page_size = its size, followed to its last page).
   */
  async function getRecordsById(
    ids: string[],
    fields: string,
  ): Promise<{ targets: string[]; records: Doc[] }> {
    const groups = new Map<string, string[]>();
    for (const id of [...ids].sort()) {
      const key = id.split('-')[0]!;
      groups.set(key, [...(groups.get(key) ?? []), id]);
    }
    const targets: string[] = [];
    const records: Doc[] = [];
    for (const group of groups.values()) {
      const nameTarget = `/nmdcschema/ids/${group[0]}/collection-name`;
      targets.push(nameTarget);
      const named = await get(nameTarget);
      expect(named.status, named.text).toBe(200);
      const collection = named.json.collection_name as string;
      const filter = `{"id": {"$in": ${jsonDumps(setOrder(group))}}}`;
      const paged = await getAllPages(server.url, `/nmdcschema/${collection}`, filter, group.length, fields);
      targets.push(...paged.targets);
      expectPagedExactly(
        paged,
        await storeWhere(collection, (d) => group.includes(d.id), fields),
        group.length,
      );
      records.push(...paged.resources);
    }
    return { targets, records };
  }

  it('NMDCSearch.get_records_by_id("nmdc:sty-11-8fb6t785"): collection name, then one $in request', async () => {
    const { targets, records } = await getRecordsById([LUQUILLO_STUDY_ID], '');
    expect(targets).toEqual([
      '/nmdcschema/ids/nmdc:sty-11-8fb6t785/collection-name',
      '/nmdcschema/study_set?filter=%7B%22id%22%3A+%7B%22%24in%22%3A+%5B%22nmdc%3Asty-11-8fb6t785%22%5D%7D%7D&max_page_size=1&projection=',
    ]);
    expect(records).toEqual([await server.store.getById('study_set', LUQUILLO_STUDY_ID)]);
  });

  it('NMDCSearch.get_records_by_id(<a study, three biosamples, two data objects>, fields="id,name"): six records', async () => {
    const ids = [
      'nmdc:sty-11-8fb6t785',
      'nmdc:bsm-11-002vgm56',
      'nmdc:bsm-11-006pnx90',
      'nmdc:bsm-11-00dkyf35',
      'nmdc:dobj-11-0001ab10',
      'nmdc:dobj-11-00095294',
    ];
    const { targets, records } = await getRecordsById(ids, 'id,name');
    expect(targets.filter((t) => t.endsWith('/collection-name'))).toEqual([
      '/nmdcschema/ids/nmdc:bsm-11-002vgm56/collection-name',
      '/nmdcschema/ids/nmdc:dobj-11-0001ab10/collection-name',
      '/nmdcschema/ids/nmdc:sty-11-8fb6t785/collection-name',
    ]);
    expect(records).toHaveLength(6);
    expect(idsOf(records).sort()).toEqual([...ids].sort());
    for (const record of records) expect(Object.keys(record).sort()).toEqual(['id', 'name']);
  });

  it('NMDCSearch.get_schema_version: GET /version, the client reads "nmdc-schema"', async () => {
    const res = await get('/version');
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual({
      'nmdc-runtime': expect.any(String),
      'nmdc-schema': SCHEMA_VERSION,
      api: expect.any(String),
    });
    const schemaVersion = await get('/nmdcschema/version');
    expect(schemaVersion.json).toBe(res.json['nmdc-schema']);
  });

  it('NMDCSearch.get_record_from_id("nmdc:sty-11-8fb6t785"): collection name, then the record with filter=&projection=', async () => {
    const named = await get('/nmdcschema/ids/nmdc:sty-11-8fb6t785/collection-name');
    expect(named.json.collection_name).toBe('study_set');
    const res = await get('/nmdcschema/study_set/nmdc:sty-11-8fb6t785?filter=&projection=');
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual(await server.store.getById('study_set', LUQUILLO_STUDY_ID));
  });

  it('NMDCSearch.get_record_from_id("nmdc:sty-11-8fb6t785", fields="id,name")', async () => {
    const res = await get('/nmdcschema/study_set/nmdc:sty-11-8fb6t785?filter=&projection=id%2Cname');
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual({ id: LUQUILLO_STUDY_ID, name: LUQUILLO_STUDY_NAME });
  });

  it('NMDCSearch.get_record_from_id with a non-empty filter: ignored by the by-id endpoint, as on the original', async () => {
    const target = `/nmdcschema/study_set/nmdc:sty-11-8fb6t785?${requestsQuery([
      ['filter', '{"name": "something else"}'],
      ['projection', ''],
    ])}`;
    const res = await get(target);
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual(await server.store.getById('study_set', LUQUILLO_STUDY_ID));
  });
});

describe('lat_long_filters.py', () => {
  const latitude = (d: Doc) => (d.lat_lon as { latitude?: unknown } | undefined)?.latitude;
  const longitude = (d: Doc) => (d.lat_lon as { longitude?: unknown } | undefined)?.longitude;
  const hasNumber = (v: unknown): v is number => typeof v === 'number';

  it('LatLongFilters.get_record_by_latitude("gt", 45.0) (BiosampleSearch): the first 25 in id order and a token', async () => {
    const res = await get(
      '/nmdcschema/biosample_set?filter=%7B%22lat_lon.latitude%22%3A+%7B%22%24gt%22%3A+45.0%7D%7D&max_page_size=25&projection=',
    );
    const north = await storeWhere(
      'biosample_set',
      (d) => hasNumber(latitude(d)) && (latitude(d) as number) > 45,
    );
    expect(north.length).toBeGreaterThan(25);
    expectFirstPage(res, north, 25);
  });

  it('LatLongFilters.get_record_by_latitude("gt", 45.0, all_pages=True): every record north of 45° once', async () => {
    const filter = `{"lat_lon.latitude": {"$gt": ${pyFloat(45)}}}`;
    const paged = await getAllPages(server.url, '/nmdcschema/biosample_set', filter, 25, '');
    const north = await storeWhere(
      'biosample_set',
      (d) => hasNumber(latitude(d)) && (latitude(d) as number) > 45,
    );
    expectPagedExactly(paged, north, 25);
  });

  it('LatLongFilters.get_record_by_latitude("eq", 63.875088): the Fairbanks record', async () => {
    const filter = `{"lat_lon.latitude": {"$eq": ${pyFloat(FAIRBANKS.latitude)}}}`;
    expect(filter).toBe('{"lat_lon.latitude": {"$eq": 63.875088}}');
    const res = await get(`/nmdcschema/biosample_set?${collectionQuery(filter, 25, '')}`);
    expectFirstPage(res, await storeWhere('biosample_set', (d) => latitude(d) === FAIRBANKS.latitude), 25);
    expect(idsOf(res.json.resources)).toEqual([FAIRBANKS.id]);
  });

  it('LatLongFilters.get_record_by_longitude("lt", 45.0) (BiosampleSearch)', async () => {
    const res = await get(
      '/nmdcschema/biosample_set?filter=%7B%22lat_lon.longitude%22%3A+%7B%22%24lt%22%3A+45.0%7D%7D&max_page_size=25&projection=',
    );
    const west = await storeWhere(
      'biosample_set',
      (d) => hasNumber(longitude(d)) && (longitude(d) as number) < 45,
    );
    expect(west.length).toBeGreaterThan(25);
    expectFirstPage(res, west, 25);
  });

  it('LatLongFilters.get_record_by_lat_long("gt", "lt", 45.0, 45.0) (BiosampleSearch)', async () => {
    const res = await get(
      '/nmdcschema/biosample_set?filter=%7B%22lat_lon.latitude%22%3A+%7B%22%24gt%22%3A+45.0%7D%2C+%22lat_lon.longitude%22%3A+%7B%22%24lt%22%3A+45.0%7D%7D&max_page_size=25&projection=',
    );
    const expected = await storeWhere(
      'biosample_set',
      (d) =>
        hasNumber(latitude(d)) &&
        (latitude(d) as number) > 45 &&
        hasNumber(longitude(d)) &&
        (longitude(d) as number) < 45,
    );
    expectFirstPage(res, expected, 25);
  });

  it('LatLongFilters.get_record_by_lat_long("gte", "lte", 45, -120.5, page_size=100, fields="id,lat_lon"): bounds included', async () => {
    const res = await get(
      '/nmdcschema/biosample_set?filter=%7B%22lat_lon.latitude%22%3A+%7B%22%24gte%22%3A+45%7D%2C+%22lat_lon.longitude%22%3A+%7B%22%24lte%22%3A+-120.5%7D%7D&max_page_size=100&projection=id%2Clat_lon',
    );
    const expected = await storeWhere(
      'biosample_set',
      (d) =>
        hasNumber(latitude(d)) &&
        (latitude(d) as number) >= 45 &&
        hasNumber(longitude(d)) &&
        (longitude(d) as number) <= -120.5,
      'id,lat_lon',
    );
    expect(idsOf(expected)).toContain('nmdc:bsm-11-b0rder45');
    expectFirstPage(res, expected, 100);
  });

  /** Great-circle distance in metres on the client's sphere (R = 6378137 m). */
  function distanceM(lat1: number, lon1: number, lat2: number, lon2: number): number {
    const rad = Math.PI / 180;
    const a =
      Math.sin(((lat2 - lat1) * rad) / 2) ** 2 +
      Math.cos(lat1 * rad) * Math.cos(lat2 * rad) * Math.sin(((lon2 - lon1) * rad) / 2) ** 2;
    return 6378137 * 2 * Math.atan2(Math.sqrt(a), Math.sqrt(1 - a));
  }

  /** The bounding-box filter of get_record_by_proximity: note `},"` without a space in the middle. */
  const boxFilter = ([minLat, maxLat, minLon, maxLon]: number[]) =>
    `{"lat_lon.latitude": {"$gte": ${pyFloat(minLat!)}, "$lte": ${pyFloat(maxLat!)}},"lat_lon.longitude": {"$gte": ${pyFloat(minLon!)}, "$lte": ${pyFloat(maxLon!)}}}`;
  const inBox =
    ([minLat, maxLat, minLon, maxLon]: number[]) =>
    (d: Doc) => {
      const lat = latitude(d);
      const lon = longitude(d);
      return (
        hasNumber(lat) &&
        hasNumber(lon) &&
        lat >= minLat! &&
        lat <= maxLat! &&
        lon >= minLon! &&
        lon <= maxLon!
      );
    };

  it('LatLongFilters.get_record_by_proximity(radius_km=1, record_id="nmdc:bsm-11-7bk7nf04"): the record\'s lat_lon, then its 1 km box', async () => {
    const first = await get(
      '/nmdcschema/biosample_set?filter=%7B%22id%22%3A+%22nmdc%3Absm-11-7bk7nf04%22%7D&max_page_size=1&projection=lat_lon',
    );
    const stored = (await server.store.getById('biosample_set', FAIRBANKS.id))!;
    expectFirstPage(first, [{ id: stored.id, lat_lon: stored.lat_lon }], 1);
    expect(first.json.resources[0].lat_lon).toMatchObject({
      latitude: FAIRBANKS.latitude,
      longitude: FAIRBANKS.longitude,
    });

    // The box the client computes around 63.875088, -149.210438 for 1000 m.
    const box = [63.8661048471588, 63.884071152841194, -149.2308389752025, -149.19003702479753];
    const target = `/nmdcschema/biosample_set?${collectionQuery(boxFilter(box), 25, '')}`;
    expect(target).toBe(
      '/nmdcschema/biosample_set?filter=%7B%22lat_lon.latitude%22%3A+%7B%22%24gte%22%3A+63.8661048471588%2C+%22%24lte%22%3A+63.884071152841194%7D%2C%22lat_lon.longitude%22%3A+%7B%22%24gte%22%3A+-149.2308389752025%2C+%22%24lte%22%3A+-149.19003702479753%7D%7D&max_page_size=25&projection=',
    );
    const res = await get(target);
    const expected = await storeWhere('biosample_set', inBox(box));
    expectFirstPage(res, expected, 25);
    // What the client keeps after its own distance check: more than five, as its test expects.
    const near = (res.json.resources as Doc[]).filter(
      (d) =>
        distanceM(FAIRBANKS.latitude, FAIRBANKS.longitude, latitude(d) as number, longitude(d) as number) <=
        1000,
    );
    expect(near.length).toBeGreaterThan(5);
    expect(near.length).toBeLessThan(expected.length);
  });

  it('LatLongFilters.get_record_by_proximity(radius_km=2180, query_lat=65.42577, query_lon=-150.416496, all_pages=True): longitudes below -180', async () => {
    const box = [45.84249680619443, 85.00904319380557, -204.11968119734007, -96.71331080265993];
    const paged = await getAllPages(server.url, '/nmdcschema/biosample_set', boxFilter(box), 25, '');
    expect(paged.targets[0]).toBe(
      '/nmdcschema/biosample_set?filter=%7B%22lat_lon.latitude%22%3A+%7B%22%24gte%22%3A+45.84249680619443%2C+%22%24lte%22%3A+85.00904319380557%7D%2C%22lat_lon.longitude%22%3A+%7B%22%24gte%22%3A+-204.11968119734007%2C+%22%24lte%22%3A+-96.71331080265993%7D%7D&max_page_size=25&projection=',
    );
    const expected = await storeWhere('biosample_set', inBox(box));
    expect(expected.length).toBeGreaterThan(25);
    expectPagedExactly(paged, expected, 25);
  });

  it('LatLongFilters.get_record_by_proximity(radius_km=0.0001, query_lat=0.0, query_lon=0.0): bounds in exponent notation', async () => {
    const box = [-8.983152841195214e-7, 8.983152841195214e-7, -8.983152841195214e-7, 8.983152841195214e-7];
    const target = `/nmdcschema/biosample_set?${collectionQuery(boxFilter(box), 25, '')}`;
    expect(target).toBe(
      '/nmdcschema/biosample_set?filter=%7B%22lat_lon.latitude%22%3A+%7B%22%24gte%22%3A+-8.983152841195214e-07%2C+%22%24lte%22%3A+8.983152841195214e-07%7D%2C%22lat_lon.longitude%22%3A+%7B%22%24gte%22%3A+-8.983152841195214e-07%2C+%22%24lte%22%3A+8.983152841195214e-07%7D%7D&max_page_size=25&projection=',
    );
    const res = await get(target);
    expectFirstPage(res, await storeWhere('biosample_set', inBox(box)), 25);
    expect(idsOf(res.json.resources)).toEqual(['nmdc:bsm-11-n0000000']);
  });
});

describe('functional_search.py', () => {
  // The aggregates as production holds them: no `id` (the schema's FunctionalAnnotationAggMember
  // has none). The original pages them by MongoDB's `_id` (insertion order); ours by a store key
  // (a digest of the content). The client collects members whatever their order, so the checks
  // compare members in a fixed order of their own.
  const inOrder = (docs: Array<Record<string, unknown>>) =>
    [...docs].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  let seeding: unknown;
  beforeAll(async () => {
    try {
      await server.add('functional_annotation_agg', FUNCTIONAL_ANNOTATION_AGG as Doc[]);
    } catch (error) {
      seeding = error;
    }
  });

  const members = (geneFunctionId: string, fields = '') =>
    FUNCTIONAL_ANNOTATION_AGG.filter((m) => m.gene_function_id === geneFunctionId).map((m) =>
      fields ? Object.fromEntries(fields.split(',').map((f) => [f, m[f]])) : m,
    );

  it('FunctionalAnnotationAggSearch.get_functional_annotations("K01426", "KEGG"): KEGG.ORTHOLOGY:K01426', async () => {
    expect(seeding, 'the store holds functional_annotation_agg members').toBeUndefined();
    const res = await get(
      '/nmdcschema/functional_annotation_agg?filter=%7B%22gene_function_id%22%3A+%22KEGG.ORTHOLOGY%3AK01426%22%7D&max_page_size=25&projection=',
    );
    expect(res.status, res.text).toBe(200);
    expect(Object.keys(res.json)).toEqual(['resources']);
    expect(inOrder(res.json.resources)).toEqual(inOrder(members('KEGG.ORTHOLOGY:K01426')));
    expect(res.json.resources[0].gene_function_id).toBe('KEGG.ORTHOLOGY:K01426');
  });

  it('FunctionalSearch.get_functional_annotations("COG0001", "COG", page_size=5, fields="was_generated_by,count")', async () => {
    expect(seeding, 'the store holds functional_annotation_agg members').toBeUndefined();
    const res = await get(
      '/nmdcschema/functional_annotation_agg?filter=%7B%22gene_function_id%22%3A+%22COG%3ACOG0001%22%7D&max_page_size=5&projection=was_generated_by%2Ccount',
    );
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual({ resources: members('COG:COG0001', 'was_generated_by,count') });
  });

  it('FunctionalSearch.get_functional_annotations("PF00001", "PFAM")', async () => {
    expect(seeding, 'the store holds functional_annotation_agg members').toBeUndefined();
    const res = await get(
      '/nmdcschema/functional_annotation_agg?filter=%7B%22gene_function_id%22%3A+%22PFAM%3APF00001%22%7D&max_page_size=25&projection=',
    );
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual({ resources: members('PFAM:PF00001') });
  });

  it('FunctionalAnnotationAggSearch.get_records(max_page_size=10): ten members and a token', async () => {
    expect(seeding, 'the store holds functional_annotation_agg members').toBeUndefined();
    const res = await get('/nmdcschema/functional_annotation_agg?filter=&max_page_size=10&projection=');
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual({ resources: expect.any(Array), next_page_token: expect.any(String) });
    // Ten distinct members, none carrying an id.
    expect(res.json.resources).toHaveLength(10);
    expect(new Set(res.json.resources.map((m: unknown) => JSON.stringify(m))).size).toBe(10);
    for (const member of res.json.resources) expect(FUNCTIONAL_ANNOTATION_AGG).toContainEqual(member);
  });

  it('FunctionalSearch.get_functional_annotations("K01426", "KEGG", page_size=5, all_pages=True): members without id, each once', async () => {
    expect(seeding, 'the store holds functional_annotation_agg members').toBeUndefined();
    const filter = '{"gene_function_id": "KEGG.ORTHOLOGY:K01426"}';
    const paged = await getAllPages(server.url, '/nmdcschema/functional_annotation_agg', filter, 5, '');
    for (const page of paged.pages) expect(page.status, page.text).toBe(200);
    expect(paged.pages).toHaveLength(3);
    expect(inOrder(paged.resources)).toEqual(inOrder(members('KEGG.ORTHOLOGY:K01426')));
  });
});
