/**
 * The Python side of `microbiomedata/nmdc_notebooks` that calls the API directly (not through
 * nmdc_api_utilities): `NOM_visualizations/python/nmdc_api.py` and the over-representation
 * notebook. Each call is an f-string URL handed to `requests.get`, which requotes it (`[` and `]`
 * escaped, `$ : ,` raw, `%3A` kept), sent with requests' default headers and checked against the
 * store.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  REQUESTS_HEADERS,
  URL_SAFE_TOKEN,
  expectPagedExactly,
  idsOf,
  pyFirstPageUrl,
  pyGetResults,
  pyNextPageUrl,
  requestsRequote,
  sortedIds,
  storeAnswer,
} from './support/nmdc-notebooks-clients.ts';
import {
  FTICR_TYPE,
  SPRUCE_BIOSAMPLE,
  fticrDataObjects,
  notebookRecords,
} from './support/nmdc-notebooks-records.ts';
import { NMDC_API, targetOf } from './support/r.ts';
import { startCompatServer, type CompatServer } from './support/server.ts';
import { send } from './support/wire.ts';

let server: CompatServer;

beforeAll(async () => {
  server = await startCompatServer();
  for (const [collection, docs] of Object.entries(notebookRecords())) await server.add(collection, docs);
});
afterAll(async () => server?.close());

/** `string_mongo_list`: `str(list)` with single quotes swapped for double ones. */
const stringMongoList = (ids: string[]) => `[${ids.map((id) => `"${id}"`).join(', ')}]`;

describe("requests' requoting of the URLs nmdc_api.py builds", () => {
  it.each([
    [
      pyFirstPageUrl(
        'data_object_set',
        '{"data_object_type":{"$regex": "FT ICR-MS Analysis Results"}}',
        100,
        'id,md5_checksum,url',
      ),
      `${NMDC_API}/nmdcschema/data_object_set?&filter=%7B%22data_object_type%22:%7B%22$regex%22:%20%22FT%20ICR-MS%20Analysis%20Results%22%7D%7D&max_page_size=100&projection=id,md5_checksum,url`,
    ],
    [
      pyNextPageUrl(
        'data_object_set',
        '{"data_object_type":{"$regex": "FT ICR-MS Analysis Results"}}',
        100,
        'nmdc:sys0zr0fbt71',
        'id,md5_checksum,url',
      ),
      `${NMDC_API}/nmdcschema/data_object_set?&filter=%7B%22data_object_type%22:%7B%22$regex%22:%20%22FT%20ICR-MS%20Analysis%20Results%22%7D%7D&max_page_size=100&page_token=nmdc:sys0zr0fbt71&projection=id,md5_checksum,url`,
    ],
    [
      pyFirstPageUrl(
        'workflow_execution_set',
        '{"has_output": {"$in": ["nmdc:dobj-11-003x7710", "nmdc:dobj-11-00dewm52"]}}',
        100,
        'id,has_input,has_output',
      ),
      `${NMDC_API}/nmdcschema/workflow_execution_set?&filter=%7B%22has_output%22:%20%7B%22$in%22:%20%5B%22nmdc:dobj-11-003x7710%22,%20%22nmdc:dobj-11-00dewm52%22%5D%7D%7D&max_page_size=100&projection=id,has_input,has_output`,
    ],
    [`${NMDC_API}/biosamples/nmdc%3Absm-13-bgefg837`, `${NMDC_API}/biosamples/nmdc%3Absm-13-bgefg837`],
  ])('prepares %s as requests does', (url, prepared) => {
    expect(requestsRequote(url)).toBe(prepared);
  });

  it('upper-cases existing escapes, decodes unreserved ones, and encodes non-ASCII per UTF-8 byte', () => {
    expect(requestsRequote('/a?b=%3a%7e|é')).toBe('/a?b=%3A~%7C%C3%A9');
    expect(requestsRequote('/a?b=50%&c=%41')).toBe('/a?b=50%25&c=%2541');
  });
});

describe('NOM_visualizations/python/nmdc_api.py', () => {
  const filter = `{"data_object_type":{"$regex": "${FTICR_TYPE}"}}`;
  const fields = 'id,md5_checksum,url';

  it('NOM_visualizations/python/nmdc_api.py get_next_results (arguments of the former nom_data.ipynb): FT ICR-MS data objects by $regex, every page with page_token before projection', async () => {
    const read = await pyGetResults(server.url, 'data_object_set', filter, 100, fields, true);
    expect(read.targets[0]).toBe(
      '/nmdcschema/data_object_set?&filter=%7B%22data_object_type%22:%7B%22$regex%22:%20%22FT%20ICR-MS%20Analysis%20Results%22%7D%7D&max_page_size=100&projection=id,md5_checksum,url',
    );
    expect(read.targets[1]).toMatch(
      /^\/nmdcschema\/data_object_set\?&filter=%7B.*%7D&max_page_size=100&page_token=[^&]+&projection=id,md5_checksum,url$/,
    );
    const expected = await storeAnswer(server, 'data_object_set', filter, fields);
    // Case-sensitive: the upper-case type stays out.
    expect(sortedIds(expected)).toEqual(
      sortedIds(fticrDataObjects.filter((d) => String(d.data_object_type).includes(FTICR_TYPE))),
    );
    expectPagedExactly(read, expected, 100, false);
    expect(read.pages).toHaveLength(2);
  });

  it('NOM_visualizations/python/nmdc_api.py get_first_page_results (arguments of the former nom_data.ipynb): the first page only, with a token for the rest', async () => {
    const read = await pyGetResults(server.url, 'data_object_set', filter, 100, fields, false);
    expect(read.pages).toHaveLength(1);
    const [page] = read.pages;
    expect(page!.status, page!.text).toBe(200);
    const expected = await storeAnswer(server, 'data_object_set', filter, fields);
    expect(Object.keys(page!.json).sort()).toEqual(['next_page_token', 'resources']);
    expect(page!.json.resources).toEqual(expected.slice(0, 100));
    expect(page!.json.next_page_token).toMatch(URL_SAFE_TOKEN);
  });

  it('NOM_visualizations/python/nmdc_api.py get_id_results (query_collection="workflow_execution_set", match_id_field="has_output"): one first page of 100 per chunk of ids', async () => {
    const ids = ['nmdc:dobj-11-003x7710', 'nmdc:dobj-11-00dewm52'];
    const chunkFilter = `{"has_output": {"$in": ${stringMongoList(ids)}}}`;
    const read = await pyGetResults(
      server.url,
      'workflow_execution_set',
      chunkFilter,
      100,
      'id,has_input,has_output',
      false,
    );
    expect(read.targets).toEqual([
      '/nmdcschema/workflow_execution_set?&filter=%7B%22has_output%22:%20%7B%22$in%22:%20%5B%22nmdc:dobj-11-003x7710%22,%20%22nmdc:dobj-11-00dewm52%22%5D%7D%7D&max_page_size=100&projection=id,has_input,has_output',
    ]);
    const expected = await storeAnswer(
      server,
      'workflow_execution_set',
      chunkFilter,
      'id,has_input,has_output',
    );
    expect(idsOf(expected)).toEqual(['nmdc:wfnom-11-dv3wck24.1', 'nmdc:wfnom-11-nom0001.1']);
    expectPagedExactly(read, expected, 100, false);
  });

  it('NOM_visualizations/python/nmdc_api.py get_id_results (query_collection="biosample_set", match_id_field="id", query_fields=""): whole records for an empty projection=', async () => {
    const ids = ['nmdc:bsm-11-12esnc57', 'nmdc:bsm-11-4gh52t60'];
    const chunkFilter = `{"id": {"$in": ${stringMongoList(ids)}}}`;
    const read = await pyGetResults(server.url, 'biosample_set', chunkFilter, 100, '', false);
    expect(read.targets).toEqual([
      '/nmdcschema/biosample_set?&filter=%7B%22id%22:%20%7B%22$in%22:%20%5B%22nmdc:bsm-11-12esnc57%22,%20%22nmdc:bsm-11-4gh52t60%22%5D%7D%7D&max_page_size=100&projection=',
    ]);
    const expected = await storeAnswer(server, 'biosample_set', chunkFilter, '');
    expect(expected).toEqual(await Promise.all(ids.map((id) => server.store.getById('biosample_set', id))));
    expectPagedExactly(read, expected, 100, false);
  });

  it('NOM_visualizations/python/nmdc_api.py get_id_results (a match_id_field containing "data_object_type"): the unquoted key is not JSON, a 422 without resources', async () => {
    const chunkFilter = `{data_object_type: {"$in": ${stringMongoList(['x', 'y'])}}}`;
    const read = await pyGetResults(server.url, 'data_object_set', chunkFilter, 100, 'id', false);
    expect(read.targets).toEqual([
      '/nmdcschema/data_object_set?&filter=%7Bdata_object_type:%20%7B%22$in%22:%20%5B%22x%22,%20%22y%22%5D%7D%7D&max_page_size=100&projection=id',
    ]);
    const [page] = read.pages;
    expect(page!.status).toBe(422);
    expect(page!.json).toEqual({ detail: expect.any(String) });
    expect(read.resources).toEqual([]);
  });
});

describe('over_representation/python/overrepresentation_python.ipynb', () => {
  it("over_representation/python/overrepresentation_python.ipynb get_reports_biosample (cell [5], run by cell [7] with 'nmdc:bsm-13-bgefg837'): every colon sent as %3A", async () => {
    const url = requestsRequote(`${NMDC_API}/biosamples/${SPRUCE_BIOSAMPLE.replaceAll(':', '%3A')}`);
    const res = await send(server.url, { method: 'GET', target: targetOf(url), headers: REQUESTS_HEADERS });
    expect(res.status, res.text).toBe(200);
    const record = await server.store.getById('biosample_set', SPRUCE_BIOSAMPLE);
    expect(record).not.toBeNull();
    expect(res.json).toEqual(record);
    expect(res.json.associated_studies[0]).toBe((record!.associated_studies as string[])[0]);
  });
});
