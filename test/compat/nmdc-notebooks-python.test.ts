/**
 * The Python side of `microbiomedata/nmdc_notebooks`: the calls it makes directly,
 * `NOM_visualizations/python/nmdc_api.py` and the over-representation notebook (each an f-string
 * URL handed to `requests.get`, which requotes it: `[` and `]` escaped, `$ : ,` raw, `%3A` kept;
 * sent with requests' default headers), and the provenance calls it makes through
 * nmdc_api_utilities with the notebooks' own arguments and data (data objects of a study, linked
 * instances of the taxonomic notebook's biosamples). Answers are checked against the store.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  REQUESTS_HEADERS,
  URL_SAFE_TOKEN,
  expectPagedExactly,
  fastaIdOfReport,
  idsOf,
  pyFirstPageUrl,
  pyGetResults,
  pyNextPageUrl,
  reportsByBiosample,
  requestsRequote,
  sortedIds,
  storeAnswer,
} from './support/nmdc-notebooks-clients.ts';
import {
  COLUMBIA_RIVER_STUDY,
  FTICR_TYPE,
  HARVARD_FOREST_STUDY,
  SPRUCE_BIOSAMPLE,
  SPRUCE_FASTA,
  SPRUCE_FUNCTIONAL_GFF,
  SPRUCE_PROTEIN_REPORT,
  SPRUCE_STUDY,
  TAXONOMIC_GENERATIONS,
  coloradoBiosamples,
  fticrDataObjects,
  notebookRecords,
} from './support/nmdc-notebooks-records.ts';
import { READ_HEADERS, associateIds, getLinkedInstances } from './support/nmdc-api-utilities-client.ts';
import {
  dataObjectsForStudy,
  expectLinkedBatches,
  flatten,
  readLineage,
  reach,
  type Lineage,
} from './support/provenance.ts';
import { NMDC_API, targetOf } from './support/r.ts';
import { startCompatServer, type CompatServer } from './support/server.ts';
import { send } from './support/wire.ts';

let server: CompatServer;
let lineage: Lineage;

beforeAll(async () => {
  server = await startCompatServer();
  for (const [collection, docs] of Object.entries(notebookRecords())) await server.add(collection, docs);
  lineage = await readLineage(server);
});
afterAll(async () => server?.close());

const unique = <T>(items: T[]): T[] => [...new Set(items)];

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

  it("over_representation/python/overrepresentation_python.ipynb get_reports_studyid (cell [5], from get_reports_biosample('nmdc:bsm-13-bgefg837')): every colon of the study sent as %3A", async () => {
    const biosample = await send(server.url, {
      method: 'GET',
      target: targetOf(requestsRequote(`${NMDC_API}/biosamples/${SPRUCE_BIOSAMPLE.replaceAll(':', '%3A')}`)),
      headers: REQUESTS_HEADERS,
    });
    const studyId = String(biosample.json.associated_studies[0]);
    expect(studyId).toBe(SPRUCE_STUDY);
    const url = requestsRequote(`${NMDC_API}/data_objects/study/${studyId.replaceAll(':', '%3A')}`);
    expect(targetOf(url)).toBe('/data_objects/study/nmdc%3Asty-11-33fbta56');
    const res = await send(server.url, { method: 'GET', target: targetOf(url), headers: REQUESTS_HEADERS });
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual(dataObjectsForStudy(lineage, SPRUCE_STUDY));
    // check_pr_fasta for every biosample with a protein report: one amino acid FASTA, named by
    // every protein report; then get_reports_biosample keeps the one functional annotation GFF.
    const entries = reportsByBiosample(res.json, 'Python');
    expect([...entries.keys()]).toEqual([`biosample_${SPRUCE_BIOSAMPLE}`]);
    for (const entry of entries.values()) {
      expect(entry.FASTA).toHaveLength(1);
      expect(unique(entry.protein_reports.map((r) => fastaIdOfReport(String(r.name))))).toEqual([
        entry.FASTA[0]!.id,
      ]);
      for (const gff of entry.GFF) expect(gff).toHaveProperty('description');
    }
    const entry = entries.get(`biosample_${SPRUCE_BIOSAMPLE}`)!;
    expect(entry.FASTA[0]!.id).toBe(SPRUCE_FASTA);
    expect(idsOf(entry.protein_reports)).toEqual([SPRUCE_PROTEIN_REPORT]);
    expect(
      idsOf(entry.GFF.filter((g) => String(g.description).includes('Functional Annotation for '))),
    ).toEqual([SPRUCE_FUNCTIONAL_GFF]);
  });

  it("over_representation/python/overrepresentation_python.ipynb read_protein_report (cell [11]): GET /objects/{was_generated_by without 'nmdc:'} is a 307 to the workflow execution, which requests follows", async () => {
    const wrkflwId = 'nmdc:wfmp-11-x0zhd078.2';
    const url = requestsRequote(`${NMDC_API}/objects/${wrkflwId.replaceAll('nmdc:', '')}`);
    expect(targetOf(url)).toBe('/objects/wfmp-11-x0zhd078.2');
    const first = await send(server.url, { method: 'GET', target: targetOf(url), headers: REQUESTS_HEADERS });
    expect(first.status, first.text).toBe(307);
    expect(first.headers.location).toBe(`${server.url}/nmdcschema/ids/${wrkflwId}`);
    // requests repeats the GET at the Location, with the same headers.
    const followed = await send(server.url, {
      method: 'GET',
      target: new URL(first.headers.location!).pathname,
      headers: REQUESTS_HEADERS,
    });
    expect(followed.status, followed.text).toBe(200);
    const record = await server.store.getById('workflow_execution_set', wrkflwId);
    expect(followed.json).toEqual(record);
    // What the notebook reads from it.
    expect(followed.json.metaproteomics_analysis_category).toBe('matched_metagenome');
    expect(followed.json.ended_at_time).toBe('2024-02-10T20:00:00Z');
  });
});

describe('Python notebooks through nmdc_api_utilities: data objects of a study', () => {
  /** `DataObjectSearch(env=ENV).get_data_objects_for_studies(study_id=...)`: the raw id, no query. */
  async function dataObjectsOfStudy(studyId: string) {
    const res = await send(server.url, {
      method: 'GET',
      target: `/data_objects/study/${studyId}`,
      headers: READ_HEADERS,
    });
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual(dataObjectsForStudy(lineage, studyId));
    // pd.json_normalize of each biosample's data objects, with its biosample_id, concatenated.
    const rows = flatten(res.json);
    const columns = new Set(rows.flatMap((r) => Object.keys(r)));
    /** groupby('biosample_id').filter(...): the biosamples with every one of `kinds`. */
    const biosamplesWithAll = (kinds: string[]) =>
      unique(rows.map((r) => r.biosample_id)).filter((b) =>
        kinds.every((k) => rows.some((r) => r.biosample_id === b && r.data_object_type === k)),
      );
    return { rows, columns, biosamplesWithAll };
  }

  it('omics_types_integration/python/integration_python.ipynb cell [7]: get_data_objects_for_studies("nmdc:sty-11-aygzgv51"), then a biosample with all four result kinds', async () => {
    const { columns, biosamplesWithAll } = await dataObjectsOfStudy(COLUMBIA_RIVER_STUDY);
    // Cell [9] drops these columns: a KeyError if no data object had them.
    expect(columns).toContain('alternative_identifiers');
    expect(columns).toContain('in_manifest');
    const kept = biosamplesWithAll([
      'Annotation Enzyme Commission',
      'Annotation KEGG Orthology',
      'GC-MS Metabolomics Results',
      'Protein Report',
    ]);
    expect(kept).toHaveLength(1);
  });

  it('proteomic_aggregation/python/aggregation_python.ipynb cell [11]: get_data_objects_for_studies("nmdc:sty-11-aygzgv51"), the columns it selects', async () => {
    const { rows, columns } = await dataObjectsOfStudy(COLUMBIA_RIVER_STUDY);
    for (const column of [
      'id',
      'name',
      'file_size_bytes',
      'data_object_type',
      'md5_checksum',
      'url',
      'biosample_id',
      'in_manifest',
      'was_generated_by',
    ]) {
      expect(columns).toContain(column);
    }
    expect(rows.some((r) => r.data_object_type === 'Unfiltered Metaproteomics Results')).toBe(true);
  });

  it('metaG_metaT_integration/python/metagmetat_python.ipynb cell [6]: get_data_objects_for_studies("nmdc:sty-11-8ws97026"), a biosample with KO, expression and phylogeny', async () => {
    const { biosamplesWithAll } = await dataObjectsOfStudy(HARVARD_FOREST_STUDY);
    expect(
      biosamplesWithAll(['Annotation KEGG Orthology', 'Metatranscriptome Expression', 'Gene Phylogeny tsv']),
    ).toHaveLength(1);
  });
});

describe('taxonomic_dist_by_soil_layer/python through nmdc_api_utilities: linked instances', () => {
  /** biosample_df["biosample_id"]: the soil-horizon biosamples the notebook's filter found, in id order. */
  const horizonIds = async () =>
    idsOf(
      await storeAnswer(
        server,
        'biosample_set',
        '{"soil_horizon":{"$exists": true}, "geo_loc_name.has_raw_value": {"$regex": "Colorado"}}',
        'id,soil_horizon,geo_loc_name',
      ),
    );

  it('taxonomic_dist_by_soil_layer/python/taxonomic_python.ipynb cell [8]: get_linked_instances_and_associate_ids(ids=<every horizon biosample>, types=["nmdc:DataObject"])', async () => {
    const ids = await horizonIds();
    expect(sortedIds(coloradoBiosamples)).toEqual([...ids].sort());
    const read = await getLinkedInstances(server.url, { ids, types: ['nmdc:DataObject'] });
    expect(read.batches[0]!.targets[0]).toMatch(
      /^\/nmdcschema\/linked_instances\?types=nmdc%3ADataObject&ids=nmdc%3Absm-11-00m15h97&ids=nmdc%3Absm-11-06ta8e31&ids=nmdc%3Absm-11-06tgpb52&ids=.*&hydrate=False&max_page_size=500$/,
    );
    expectLinkedBatches(lineage, read, ['nmdc:DataObject']);
    const association = associateIds(read.records, false);
    // The pooled biosamples of the sequenced pools, each with every file of its pool's runs.
    const expected = ids.filter((id) =>
      [...reach(lineage, id, 'downstream')].some((d) => lineage.records.get(d)?.type === 'nmdc:DataObject'),
    );
    expect([...association.keys()].sort()).toEqual([...expected].sort());
    expect(expected.length).toBeGreaterThanOrEqual(3);
    for (const id of expected) {
      const files = [...reach(lineage, id, 'downstream')].filter(
        (d) => lineage.records.get(d)?.type === 'nmdc:DataObject',
      );
      expect([...(association.get(id) as string[])].sort()).toEqual(files.sort());
    }
    // Cell [10] looks the files up and keeps the Scaffold Lineage ones, which are there.
    const dojs = [...association.values()].flat() as string[];
    expect(dojs).toEqual(
      expect.arrayContaining(['nmdc:dobj-11-f0shbt75', 'nmdc:dobj-11-jg6awk48', 'nmdc:dobj-11-jp45gr33']),
    );
    // The two runs of the first pool are among the sources of its biosamples' files.
    const upstream = reach(lineage, String(association.get(ids[0]!)![0]), 'upstream');
    expect(TAXONOMIC_GENERATIONS.some((g) => upstream.has(g))).toBe(true);
  });

  it('taxonomic_dist_by_soil_layer/python/test.py: get_linked_instances_and_associate_ids(ids=<the first five>, types=["nmdc:DataObject"])', async () => {
    const ids = (await horizonIds()).slice(0, 5);
    const read = await getLinkedInstances(server.url, { ids, types: ['nmdc:DataObject'] });
    expect(read.batches[0]!.targets).toEqual([
      `/nmdcschema/linked_instances?types=nmdc%3ADataObject&${ids.map((id) => `ids=${id.replace(':', '%3A')}`).join('&')}&hydrate=False&max_page_size=500`,
    ]);
    const records = expectLinkedBatches(lineage, read, ['nmdc:DataObject']);
    expect(records.length).toBeGreaterThan(0);
    const association = associateIds(read.records, false);
    // The first three were pooled together: the same files each.
    expect(association.get(ids[0]!)).toEqual(association.get(ids[1]!));
    expect(association.get(ids[0]!)).toEqual(association.get(ids[2]!));
  });
});
