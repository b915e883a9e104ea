/**
 * nmdc_api_utilities (the NMDC Python client): collection_search.py, whose `CollectionSearch`
 * methods every search class inherits, the pager of api_client.py and the filter builder of
 * data_processing.py. Every request is the one the client sends, byte for byte on the request line;
 * expected answers come from the store.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Doc } from '../../src/store/port.ts';
import { startCompatServer, type CompatServer } from './support/server.ts';
import { send } from './support/wire.ts';
import { jsonDumps, requestsQuery } from './support/python.ts';
import {
  AGILENT_ID,
  CLIENT_RECORDS,
  DIRECT_INFUSION,
  DIRECT_INFUSION_IDS,
  G6R2_NAME,
  LIBRARY_BIOSAMPLE_IDS,
  LUQUILLO_STUDY_ID,
  LUQUILLO_STUDY_NAME,
} from './support/nmdc-api-utilities-records.ts';
import {
  LEGACY_PAGE_HEADERS,
  LEGACY_READ_HEADERS,
  READ_HEADERS,
  attributeFilter,
  buildFilter,
  chunks,
  collectionQuery,
  expectFirstPage,
  expectPagedExactly,
  followPages,
  getAllPages,
  idsOf,
  project,
  pyQuote,
  setOrder,
} from './support/nmdc-api-utilities-client.ts';

let server: CompatServer;

beforeAll(async () => {
  server = await startCompatServer(CLIENT_RECORDS);
});
afterAll(async () => server?.close());

const get = (target: string, headers: Record<string, string> = READ_HEADERS) =>
  send(server.url, { method: 'GET', target, headers });

/** Records of a collection in id order, those matching `keep`, projected as the service does. */
async function storeWhere(
  collection: string,
  keep: (d: Doc) => boolean = () => true,
  fields = '',
): Promise<Doc[]> {
  return (await server.store.find(collection, {})).filter(keep).map((d) => project(d, fields));
}

/** What a case-insensitive regex of an escaped literal matches: the value anywhere in the text. */
const containsIgnoringCase = (field: string, value: string) => (d: Doc) =>
  typeof d[field] === 'string' && (d[field] as string).toLowerCase().includes(value.toLowerCase());

const includesAny = (field: string, ids: string[]) => (d: Doc) =>
  Array.isArray(d[field]) && (d[field] as unknown[]).some((v) => ids.includes(v as string));

describe('collection_search.py', () => {
  it('CollectionSearch.get_records, default arguments: filter=&max_page_size=100&projection=', async () => {
    const res = await get('/nmdcschema/study_set?filter=&max_page_size=100&projection=');
    const studies = await storeWhere('study_set');
    expect(studies.length).toBeGreaterThan(32);
    expect(studies.length).toBeLessThanOrEqual(100);
    expectFirstPage(res, studies, 100);
  });

  it('CollectionSearch.get_records(max_page_size=10) (also shape="dataframe"): the first 10 and a token', async () => {
    const res = await get('/nmdcschema/study_set?filter=&max_page_size=10&projection=');
    expectFirstPage(res, await storeWhere('study_set'), 10);
    expect(res.json.resources).toHaveLength(10);
  });

  it('CollectionSearch.get_records on biosample_set with a filter, a projection and all_pages=True', async () => {
    const filter = '{"ecosystem_category": "Plants"}';
    const paged = await getAllPages(server.url, '/nmdcschema/biosample_set', filter, 50, 'id,name');
    expect(paged.targets[0]).toBe(
      '/nmdcschema/biosample_set?filter=%7B%22ecosystem_category%22%3A+%22Plants%22%7D&max_page_size=50&projection=id%2Cname',
    );
    expect(paged.targets[1]).toBe(
      `${paged.targets[0]}&page_token=${encodeURIComponent(paged.pages[0]!.json.next_page_token)}`,
    );
    const plants = await storeWhere('biosample_set', (d) => d.ecosystem_category === 'Plants', 'id,name');
    expect(plants.length).toBeGreaterThan(50);
    expectPagedExactly(paged, plants, 50);
  });

  it('CollectionSearch.get_record_by_filter(\'{"id": "nmdc:sty-11-8fb6t785"}\'): max_page_size=25', async () => {
    const res = await get(
      '/nmdcschema/study_set?filter=%7B%22id%22%3A+%22nmdc%3Asty-11-8fb6t785%22%7D&max_page_size=25&projection=',
    );
    expectFirstPage(res, [(await server.store.getById('study_set', LUQUILLO_STUDY_ID))!], 25);
  });

  it('CollectionSearch.get_record_by_filter(\'{"id":"nmdc:bsm-11-006pnx90"}\') on biosample_set (compact JSON)', async () => {
    const res = await get(
      '/nmdcschema/biosample_set?filter=%7B%22id%22%3A%22nmdc%3Absm-11-006pnx90%22%7D&max_page_size=25&projection=',
    );
    expectFirstPage(res, [(await server.store.getById('biosample_set', 'nmdc:bsm-11-006pnx90'))!], 25);
  });

  it('CollectionSearch.get_record_by_filter with the exact name of a study (test_study.py)', async () => {
    const filter = `{"name":"${LUQUILLO_STUDY_NAME}"}`;
    const res = await get(`/nmdcschema/study_set?${collectionQuery(filter, 25, '')}`);
    expectFirstPage(res, await storeWhere('study_set', (d) => d.name === LUQUILLO_STUDY_NAME), 25);
    expect(res.json.resources).toHaveLength(1);
  });

  it('CollectionSearch.get_record_by_filter matching nothing: an empty resources list', async () => {
    const res = await get(
      '/nmdcschema/study_set?filter=%7B%22id%22%3A+%22nmdc%3Asty-11-00000000%22%7D&max_page_size=25&projection=',
    );
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ resources: [] });
  });

  it('CollectionSearch.get_record_by_attribute("name", <Luquillo study name>): one escaped regex match', async () => {
    const target =
      '/nmdcschema/study_set?filter=%7B%22name%22%3A%7B%22%24regex%22%3A%22Lab%5C%5C+enrichment%5C%5C+of%5C%5C+tropical%5C%5C+soil%5C%5C+microbial%5C%5C+communities%5C%5C+from%5C%5C+Luquillo%5C%5C+Experimental%5C%5C+Forest%5C%5C%2C%5C%5C+Puerto%5C%5C+Rico%22%2C%22%24options%22%3A%22i%22%7D%7D&max_page_size=25&projection=';
    expect(
      `/nmdcschema/study_set?${collectionQuery(attributeFilter('name', LUQUILLO_STUDY_NAME), 25, '')}`,
    ).toBe(target);
    const res = await get(target);
    expectFirstPage(
      res,
      await storeWhere('study_set', containsIgnoringCase('name', LUQUILLO_STUDY_NAME)),
      25,
    );
    expect(idsOf(res.json.resources)).toEqual([LUQUILLO_STUDY_ID]);
  });

  it('CollectionSearch.get_record_by_attribute("id", "nmdc:bsm-11-006pnx90") (BiosampleSearch): \\: and \\- escapes', async () => {
    const res = await get(
      '/nmdcschema/biosample_set?filter=%7B%22id%22%3A%7B%22%24regex%22%3A%22nmdc%5C%5C%3Absm%5C%5C-11%5C%5C-006pnx90%22%2C%22%24options%22%3A%22i%22%7D%7D&max_page_size=25&projection=',
    );
    expectFirstPage(
      res,
      await storeWhere('biosample_set', containsIgnoringCase('id', 'nmdc:bsm-11-006pnx90')),
      25,
    );
    expect(idsOf(res.json.resources)).toEqual(['nmdc:bsm-11-006pnx90']);
  });

  it.each([
    [
      'Agilent 7980A GC-MS',
      '%7B%22name%22%3A%7B%22%24regex%22%3A%22Agilent%5C%5C+7980A%5C%5C+GC%5C%5C-MS%22%2C%22%24options%22%3A%22i%22%7D%7D',
    ],
    [
      'Agilent 7980A gc-ms',
      '%7B%22name%22%3A%7B%22%24regex%22%3A%22Agilent%5C%5C+7980A%5C%5C+gc%5C%5C-ms%22%2C%22%24options%22%3A%22i%22%7D%7D',
    ],
    [
      'Agilent 7980A',
      '%7B%22name%22%3A%7B%22%24regex%22%3A%22Agilent%5C%5C+7980A%22%2C%22%24options%22%3A%22i%22%7D%7D',
    ],
  ])(
    'CollectionSearch.get_record_by_attribute("name", "%s") (InstrumentSearch): one instrument',
    async (value, filter) => {
      const target = `/nmdcschema/instrument_set?filter=${filter}&max_page_size=25&projection=`;
      expect(`/nmdcschema/instrument_set?${collectionQuery(attributeFilter('name', value), 25, '')}`).toBe(
        target,
      );
      const res = await get(target);
      expectFirstPage(res, await storeWhere('instrument_set', containsIgnoringCase('name', value)), 25);
      expect(idsOf(res.json.resources)).toEqual([AGILENT_ID]);
    },
  );

  it('CollectionSearch.get_record_by_attribute(..., exact_match=True): the bare value, no regex', async () => {
    const res = await get(
      '/nmdcschema/instrument_set?filter=%7B%22name%22%3A%22Agilent+7980A+GC-MS%22%7D&max_page_size=25&projection=',
    );
    expectFirstPage(res, await storeWhere('instrument_set', (d) => d.name === 'Agilent 7980A GC-MS'), 25);
    expect(idsOf(res.json.resources)).toEqual([AGILENT_ID]);
  });

  it.each([
    ['study_set', '25 °C'],
    ['study_set', 'Farmer’s field'],
    ['study_set', 'thaw gradient – palsa'],
    ['study_set', 'café plantations'],
    ['biosample_set', 'incubated at 25 °C'],
    ['biosample_set', 'Farmer’s field plot 7 (tilled)'],
    ['biosample_set', 'Mire – palsa'],
    ['biosample_set', 'Café plantation soil, shade-grown'],
  ])(
    'CollectionSearch.get_record_by_attribute("name", "%s") on %s: a backslash before a non-ASCII character matches it',
    async (collection, value) => {
      const filter = attributeFilter('name', value);
      const target = `/nmdcschema/${collection}?${collectionQuery(filter, 25, '')}`;
      const res = await get(target);
      const expected = await storeWhere(collection, containsIgnoringCase('name', value));
      expect(expected.length).toBeGreaterThan(0);
      expectFirstPage(res, expected, 25);
    },
  );

  it('CollectionSearch.get_record_by_attribute("name", "25 °C") puts \\\\° in the filter text, as the client does', async () => {
    const target =
      '/nmdcschema/study_set?filter=%7B%22name%22%3A%7B%22%24regex%22%3A%2225%5C%5C+%5C%5C%C2%B0C%22%2C%22%24options%22%3A%22i%22%7D%7D&max_page_size=25&projection=';
    expect(`/nmdcschema/study_set?${collectionQuery(attributeFilter('name', '25 °C'), 25, '')}`).toBe(target);
    const res = await get(target);
    expectFirstPage(res, await storeWhere('study_set', containsIgnoringCase('name', '25 °C')), 25);
    expect(idsOf(res.json.resources)).toEqual(['nmdc:sty-11-c25d0001']);
  });

  it('CollectionSearch.get_record_by_attribute with a double quote in the value: not JSON, 422 as on the original', async () => {
    const res = await get(
      '/nmdcschema/study_set?filter=%7B%22name%22%3A%7B%22%24regex%22%3A%22the%5C%5C+%5C%5C%22best%5C%5C%22%5C%5C+soil%5C%5C+%5C%5C%282009%5C%5C%29%5C%5C+%5C%5C%2B%5C%5C+caf%C3%A9_1%22%2C%22%24options%22%3A%22i%22%7D%7D&max_page_size=25&projection=',
    );
    expect(res.status).toBe(422);
    expect(res.json).toEqual({ detail: expect.any(String) });
  });

  it('CollectionSearch.get_record_by_attribute (DataObjectSearch, notebook): all pages of 100, fields id,md5_checksum,url', async () => {
    const filter = attributeFilter('data_object_type', DIRECT_INFUSION);
    const paged = await getAllPages(
      server.url,
      '/nmdcschema/data_object_set',
      filter,
      100,
      'id,md5_checksum,url',
    );
    expect(paged.targets[0]).toBe(
      '/nmdcschema/data_object_set?filter=%7B%22data_object_type%22%3A%7B%22%24regex%22%3A%22Direct%5C%5C+Infusion%5C%5C+FT%5C%5C-ICR%5C%5C+MS%5C%5C+Analysis%5C%5C+Results%22%2C%22%24options%22%3A%22i%22%7D%7D&max_page_size=100&projection=id%2Cmd5_checksum%2Curl',
    );
    const expected = await storeWhere(
      'data_object_set',
      containsIgnoringCase('data_object_type', DIRECT_INFUSION),
      'id,md5_checksum,url',
    );
    expect(expected.length).toBeGreaterThan(100);
    expectPagedExactly(paged, expected, 100);
  });

  it('CollectionSearch.get_record_by_id("nmdc:sty-11-8fb6t785") (or collection_id=): the undeclared max_page_size=100 is ignored', async () => {
    const res = await get('/nmdcschema/study_set/nmdc:sty-11-8fb6t785?max_page_size=100&projection=');
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual(await server.store.getById('study_set', LUQUILLO_STUDY_ID));
  });

  it('CollectionSearch.get_record_by_id("nmdc:bsm-11-002vgm56", fields="id,name") (BiosampleSearch)', async () => {
    const res = await get(
      '/nmdcschema/biosample_set/nmdc:bsm-11-002vgm56?max_page_size=100&projection=id%2Cname',
    );
    expect(res.status, res.text).toBe(200);
    const stored = (await server.store.getById('biosample_set', 'nmdc:bsm-11-002vgm56'))!;
    expect(res.json).toEqual({ id: stored.id, name: stored.name });
  });

  it('CollectionSearch.get_record_by_id of a workflow execution (WorkflowExecutionSearch): an id with a version suffix', async () => {
    const [workflow] = await server.store.find('workflow_execution_set', {}, { limit: 1 });
    expect(workflow!.id).toMatch(/^nmdc:wf[a-z]+-\d+-\w+\.\d+$/);
    const res = await get(`/nmdcschema/workflow_execution_set/${workflow!.id}?max_page_size=100&projection=`);
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual(workflow);
  });

  it('CollectionSearch.get_record_by_id of an id the collection does not hold: 404, which the client raises on', async () => {
    const res = await get('/nmdcschema/study_set/nmdc:sty-11-00000000?max_page_size=100&projection=');
    expect(res.status).toBe(404);
    expect(res.json).toEqual({ detail: 'Not found' });
  });

  it('CollectionSearch.check_ids_exist(["nmdc:sty-11-8fb6t785"]): compact $in, max_page_size=1, projection=id', async () => {
    const res = await get(
      '/nmdcschema/study_set?filter=%7B%22id%22%3A%7B%22%24in%22%3A%5B%22nmdc%3Asty-11-8fb6t785%22%5D%7D%7D&max_page_size=1&projection=id',
    );
    expectFirstPage(res, [{ id: LUQUILLO_STUDY_ID }], 1);
  });

  /** The requests of check_ids_exist, chunk by chunk, until a chunk comes back short; the missing ids. */
  async function checkIdsExist(collection: string, ids: string[], chunkSize: number) {
    for (const chunk of chunks(setOrder(ids), chunkSize)) {
      const filter = JSON.stringify({ id: { $in: chunk } });
      const res = await get(`/nmdcschema/${collection}?${collectionQuery(filter, chunk.length, 'id')}`);
      const expected = await storeWhere(collection, (d) => chunk.includes(d.id), 'id');
      expectFirstPage(res, expected, chunk.length);
      if (res.json.resources.length !== chunk.length) {
        const found = new Set(idsOf(res.json.resources));
        return chunk.filter((id) => !found.has(id));
      }
    }
    return [];
  }

  it('CollectionSearch.check_ids_exist(<3 biosample ids>, chunk_size=2, return_missing_ids=True): two requests', async () => {
    expect(await checkIdsExist('biosample_set', LIBRARY_BIOSAMPLE_IDS.slice(0, 3), 2)).toEqual([]);
  });

  it('CollectionSearch.check_ids_exist(<the 18 biosample ids of test_check_ids_exist_multiple>): one request of 18', async () => {
    expect(await checkIdsExist('biosample_set', LIBRARY_BIOSAMPLE_IDS, 100)).toEqual([]);
  });

  it('CollectionSearch.check_ids_exist(<131 data object ids, one absent>, return_missing_ids=True): chunks of 100', async () => {
    const absent = 'nmdc:dobj-13-zz999999';
    expect(await checkIdsExist('data_object_set', [...DIRECT_INFUSION_IDS, absent], 100)).toEqual([absent]);
  });

  /** The requests of get_batch_records: chunks of the de-duplicated ids, each read to its last page. */
  async function getBatchRecords(
    collection: string,
    ids: string[],
    searchField: string,
    chunkSize: number,
    fields: string,
  ) {
    const results: Doc[] = [];
    for (const chunk of chunks(setOrder(ids), chunkSize)) {
      const filter = `{"${searchField}": {"$in": ${jsonDumps(chunk)}}}`;
      const paged = await getAllPages(server.url, `/nmdcschema/${collection}`, filter, chunk.length, fields);
      expect(paged.targets[0]).toMatch(
        new RegExp(
          `^/nmdcschema/${collection}\\?filter=%7B%22${searchField}%22%3A\\+%7B%22%24in%22%3A\\+%5B%22`,
        ),
      );
      expectPagedExactly(
        paged,
        await storeWhere(collection, includesAny(searchField, chunk), fields),
        chunk.length,
      );
      results.push(...paged.resources);
    }
    return results;
  }

  it('CollectionSearch.get_batch_records (WorkflowExecutionSearch) by has_output, fields="id,has_input,has_output"', async () => {
    const outputs = (await server.store.find('data_object_set', { was_generated_by: { $exists: true } }))
      .filter((d) => /^nmdc:wf/.test(String(d.was_generated_by)))
      .slice(0, 3)
      .map((d) => d.id);
    expect(outputs).toHaveLength(3);
    const records = await getBatchRecords(
      'workflow_execution_set',
      outputs,
      'has_output',
      100,
      'id,has_input,has_output',
    );
    expect(records.length).toBeGreaterThan(0);
  });

  it('CollectionSearch.get_batch_records (BiosampleSearch) by associated_studies, chunk_size=2: pages of 2 and of 1', async () => {
    const studies = idsOf(
      (await server.store.find('study_set', {})).filter((s) => /^nmdc:sty-11-[0-9a-z]{8}$/.test(s.id)),
    );
    const withSamples: string[] = [];
    for (const id of studies) {
      if ((await server.store.count('biosample_set', { associated_studies: id })) > 2) withSamples.push(id);
    }
    expect(withSamples.length).toBeGreaterThanOrEqual(3);
    const records = await getBatchRecords(
      'biosample_set',
      withSamples.slice(0, 3),
      'associated_studies',
      2,
      '',
    );
    expect(records.length).toBeGreaterThan(3);
  });

  it('CollectionSearch.get_batch_records (WorkflowExecutionSearch, notebook) of 130 data objects: chunks of 100, paged', async () => {
    const records = await getBatchRecords(
      'workflow_execution_set',
      DIRECT_INFUSION_IDS,
      'has_output',
      100,
      'id,has_input,has_output',
    );
    expect(new Set(idsOf(records)).size).toBe(records.length);
    expect(records).toHaveLength(
      (await storeWhere('workflow_execution_set', includesAny('has_output', DIRECT_INFUSION_IDS))).length,
    );
  });

  it.each([
    ['biosample_search.py', 'BiosampleSearch', 'biosample_set'],
    ['calibration_search.py', 'CalibrationSearch', 'calibration_set'],
    [
      'collecting_biosamples_from_site_search.py',
      'CollectingBiosamplesFromSiteSearch',
      'collecting_biosamples_from_site_set',
    ],
    ['configuration_search.py', 'ConfigurationSearch', 'configuration_set'],
    ['data_generation_search.py', 'DataGenerationSearch', 'data_generation_set'],
    ['data_object_search.py', 'DataObjectSearch', 'data_object_set'],
    ['instrument_search.py', 'InstrumentSearch', 'instrument_set'],
    ['manifest_search.py', 'ManifestSearch', 'manifest_set'],
    ['material_processing_search.py', 'MaterialProcessingSearch', 'material_processing_set'],
    ['processed_sample_search.py', 'ProcessedSampleSearch', 'processed_sample_set'],
    ['storage_process_search.py', 'StorageProcessSearch', 'storage_process_set'],
    ['study_search.py', 'StudySearch', 'study_set'],
    ['workflow_execution_search.py', 'WorkflowExecutionSearch', 'workflow_execution_set'],
  ])('CollectionSearch.get_records through %s %s(): %s', async (_file, _class, collection) => {
    const res = await get(`/nmdcschema/${collection}?filter=&max_page_size=100&projection=`);
    const expected = await storeWhere(collection);
    expect(expected.length).toBeGreaterThan(0);
    expectFirstPage(res, expected, 100);
  });

  it("CollectionSearch.get_records as 0.6.1 sends it: requests' own User-Agent", async () => {
    const res = await get('/nmdcschema/study_set?filter=&max_page_size=100&projection=', LEGACY_READ_HEADERS);
    expectFirstPage(res, await storeWhere('study_set'), 100);
  });

  it('CollectionSearch.get_record_by_attribute as 0.6.1 sends it: the filter quoted with %20 for spaces', async () => {
    const target = `/nmdcschema/instrument_set?filter=${pyQuote(attributeFilter('name', 'Agilent 7980A GC-MS'))}&max_page_size=25&projection=`;
    expect(target).toBe(
      '/nmdcschema/instrument_set?filter=%7B%22name%22%3A%7B%22%24regex%22%3A%22Agilent%5C%5C%207980A%5C%5C%20GC%5C%5C-MS%22%2C%22%24options%22%3A%22i%22%7D%7D&max_page_size=25&projection=',
    );
    const res = await get(target, LEGACY_READ_HEADERS);
    expectFirstPage(
      res,
      await storeWhere('instrument_set', containsIgnoringCase('name', 'Agilent 7980A GC-MS')),
      25,
    );
  });

  it('CollectionSearch.get_record_by_id as 0.6.1 sends it: projection=id,name with a raw comma', async () => {
    const res = await get(
      '/nmdcschema/study_set/nmdc:sty-11-8fb6t785?max_page_size=100&projection=id,name',
      LEGACY_READ_HEADERS,
    );
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual({ id: LUQUILLO_STUDY_ID, name: LUQUILLO_STUDY_NAME });
  });

  it('CollectionSearch.get_batch_records as 0.6.1 sends it: max_page_size is the length of the id list text', async () => {
    const ids = [DIRECT_INFUSION_IDS[10]!];
    const listText = JSON.stringify(ids);
    expect(listText.length).toBe(25);
    const filter = pyQuote(`{"has_output": {"$in": ${listText}}}`);
    const paged = await followPages(
      server.url,
      (token) =>
        `/nmdcschema/workflow_execution_set?filter=${filter}&max_page_size=${listText.length}&projection=id,has_output${token ? `&page_token=${token}` : ''}`,
      { first: LEGACY_READ_HEADERS, next: LEGACY_PAGE_HEADERS },
    );
    expect(paged.targets[0]).toBe(
      '/nmdcschema/workflow_execution_set?filter=%7B%22has_output%22%3A%20%7B%22%24in%22%3A%20%5B%22nmdc%3Adobj-13-di000010%22%5D%7D%7D&max_page_size=25&projection=id,has_output',
    );
    const expected = await storeWhere(
      'workflow_execution_set',
      includesAny('has_output', ids),
      'id,has_output',
    );
    expect(expected).toHaveLength(2);
    expectPagedExactly(paged, expected, 25);
  });
});

describe('api_client.py', () => {
  it('NMDCAPIClient._get_all_pages (StudySearch.get_records(max_page_size=20, all_pages=True)): empty filter and projection repeated with page_token', async () => {
    const paged = await getAllPages(server.url, '/nmdcschema/study_set', '', 20, '');
    expect(paged.targets[0]).toBe('/nmdcschema/study_set?filter=&max_page_size=20&projection=');
    for (const [i, target] of paged.targets.slice(1).entries()) {
      const token = paged.pages[i]!.json.next_page_token as string;
      expect(target).toBe(
        `/nmdcschema/study_set?${requestsQuery([
          ['filter', ''],
          ['max_page_size', 20],
          ['projection', ''],
          ['page_token', token],
        ])}`,
      );
    }
    const studies = await storeWhere('study_set');
    expect(paged.pages.length).toBeGreaterThanOrEqual(3);
    expectPagedExactly(paged, studies, 20);
  });

  it('NMDCAPIClient._get_all_pages as 0.6.1 runs it: filter quoted with %20, raw projection and page_token', async () => {
    const filter = pyQuote('{"ecosystem_category": "Plants"}');
    expect(filter).toBe('%7B%22ecosystem_category%22%3A%20%22Plants%22%7D');
    const paged = await followPages(
      server.url,
      (token) =>
        `/nmdcschema/biosample_set?filter=${filter}&max_page_size=50&projection=id,name${token ? `&page_token=${token}` : ''}`,
      { first: LEGACY_READ_HEADERS, next: LEGACY_PAGE_HEADERS },
    );
    const plants = await storeWhere('biosample_set', (d) => d.ecosystem_category === 'Plants', 'id,name');
    expectPagedExactly(paged, plants, 50);
  });
});

describe('data_processing.py', () => {
  it('DataProcessing.build_filter({"name": "G6R2_NF_20JUN2016"}) with BiosampleSearch.get_record_by_filter', async () => {
    const filter = buildFilter({ name: G6R2_NAME });
    const target = `/nmdcschema/biosample_set?${collectionQuery(filter, 25, '')}`;
    expect(target).toBe(
      '/nmdcschema/biosample_set?filter=%7B%22name%22%3A+%7B%22%24regex%22%3A+%22G6R2_NF_20JUN2016%22%2C+%22%24options%22%3A+%22i%22%7D%7D&max_page_size=25&projection=',
    );
    const res = await get(target);
    expectFirstPage(res, await storeWhere('biosample_set', containsIgnoringCase('name', G6R2_NAME)), 25);
    expect(idsOf(res.json.resources)).toEqual(['nmdc:bsm-11-006pnx90']);
  });

  it('DataProcessing.build_filter({"name": ..., "id": "nmdc:bsm-11-006pnx90"}): both regexes must match', async () => {
    const target =
      '/nmdcschema/biosample_set?filter=%7B%22name%22%3A+%7B%22%24regex%22%3A+%22G6R2_NF_20JUN2016%22%2C+%22%24options%22%3A+%22i%22%7D%2C+%22id%22%3A+%7B%22%24regex%22%3A+%22nmdc%5C%5C%3Absm%5C%5C-11%5C%5C-006pnx90%22%2C+%22%24options%22%3A+%22i%22%7D%7D&max_page_size=25&projection=';
    expect(
      `/nmdcschema/biosample_set?${collectionQuery(buildFilter({ name: G6R2_NAME, id: 'nmdc:bsm-11-006pnx90' }), 25, '')}`,
    ).toBe(target);
    const res = await get(target);
    const expected = await storeWhere(
      'biosample_set',
      (d) =>
        containsIgnoringCase('name', G6R2_NAME)(d) && containsIgnoringCase('id', 'nmdc:bsm-11-006pnx90')(d),
    );
    expectFirstPage(res, expected, 25);
    expect(res.json.resources).toHaveLength(1);
  });

  it('DataProcessing.build_filter({"name": "25 °C"}): json.dumps writes \\u00b0 after the escaping backslash', async () => {
    const filter = buildFilter({ name: '25 °C' });
    expect(filter).toBe('{"name": {"$regex": "25\\\\ \\\\\\u00b0C", "$options": "i"}}');
    const res = await get(`/nmdcschema/study_set?${collectionQuery(filter, 25, '')}`);
    expectFirstPage(res, await storeWhere('study_set', containsIgnoringCase('name', '25 °C')), 25);
    expect(res.json.resources).toHaveLength(1);
  });

  it('DataProcessing.build_filter({"name": <a name with ’>}, exact_match=True): equality on the \\u2019-escaped text', async () => {
    const name = 'Farmer’s field tillage trial at Kellogg Biological Station';
    const filter = buildFilter({ name }, true);
    expect(filter).toBe('{"name": "Farmer\\u2019s field tillage trial at Kellogg Biological Station"}');
    const res = await get(`/nmdcschema/study_set?${collectionQuery(filter, 25, '')}`);
    expectFirstPage(res, await storeWhere('study_set', (d) => d.name === name), 25);
    expect(idsOf(res.json.resources)).toEqual(['nmdc:sty-11-frmr0001']);
  });
});
