/**
 * The R notebooks of `microbiomedata/nmdc_notebooks` against our service: every call they make to
 * an endpoint we have, sent as R builds it (jsonlite / httr / rjson headers, `utils::URLencode`
 * leaving `$ [ ] : ,` raw, the `?&filter=` query of `utility_functions.R`, hand-encoded compact
 * filters), with the notebooks' own arguments, and checked against the store.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTION_NAMES } from '../../src/schema/nmdc.ts';
import type { Doc } from '../../src/store/port.ts';
import {
  expectChunksExactly,
  expectPagedExactly,
  idsOf,
  findPageBody,
  fastaIdOfReport,
  rBiosamplesOfStudy,
  rGetAllResults,
  rGetResultsById,
  reportsByBiosample,
  sortedIds,
  storeAnswer,
} from './support/nmdc-notebooks-clients.ts';
import {
  BIOSCALES_STUDY,
  COLORADO_HORIZON_COUNT,
  COLUMBIA_RIVER_STUDY,
  EXTRACTED_SAMPLE,
  HARVARD_FOREST_BIOSAMPLE,
  HARVARD_FOREST_STUDY,
  INTEGRATION_OUTPUTS,
  LIBRARY_SAMPLE,
  MANIFEST_ID,
  NEON_SOIL_STUDY,
  NOM_RAW_TYPE,
  NOM_RESULT_COUNT,
  NOM_RESULT_TYPE,
  POOLED_SAMPLE,
  PROTEOMIC_OUTPUTS,
  SPRUCE_BIOSAMPLE,
  SPRUCE_FASTA,
  SPRUCE_FUNCTIONAL_GFF,
  SPRUCE_PROTEIN_REPORT,
  SPRUCE_STUDY,
  TAXONOMIC_GENERATIONS,
  bioscalesBiosamples,
  columbiaBiosampleIds,
  columbiaDataObjectIds,
  coloradoBiosamples,
  neonSoilBiosamples,
  nomSourceOfGeneration,
  notebookRecords,
  proteomicResultIds,
  studies,
} from './support/nmdc-notebooks-records.ts';
import { HTTR_HEADERS, JSONLITE_HEADERS, NMDC_API, RJSON_HEADERS, targetOf, urlEncode } from './support/r.ts';
import { startCompatServer, type CompatServer } from './support/server.ts';
import { send } from './support/wire.ts';
import { dataObjectsForStudy, flatten, mixedKinds, readLineage, type Lineage } from './support/provenance.ts';

let server: CompatServer;
let lineage: Lineage;

beforeAll(async () => {
  server = await startCompatServer();
  for (const [collection, docs] of Object.entries(notebookRecords())) await server.add(collection, docs);
  lineage = await readLineage(server);
});
afterAll(async () => server?.close());

const byId = (a: Doc, b: Doc) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const unique = (ids: string[]) => [...new Set(ids)];
const asList = (value: unknown): string[] => (Array.isArray(value) ? (value as string[]) : []);

/** A compact find read as jsonlite reads it: one GET with R's headers. */
const fromJson = (target: string, headers = JSONLITE_HEADERS) =>
  send(server.url, { method: 'GET', target, headers });

describe('NEON_soil_metadata/R/neon_r.ipynb', () => {
  it('NEON_soil_metadata/R/neon_r.ipynb cell [3] (base_url, fromJSON): studies by a hand-encoded name.search filter, per_page=50', async () => {
    const target = targetOf(
      `${NMDC_API}/studies?filter=name.search%3ANational%20Ecological%20Observatory%20Network&per_page=50`,
    );
    const res = await fromJson(target);
    expect(res.status, res.text).toBe(200);
    const expected = await server.store.find('study_set', {
      name: { $regex: 'National Ecological Observatory Network' },
    });
    expect(sortedIds(expected)).toEqual(
      sortedIds(studies.filter((s) => String(s.name).includes('National Ecological Observatory Network'))),
    );
    expect(res.json).toEqual(
      findPageBody(
        { name: expect.objectContaining({ $regex: 'National Ecological Observatory Network' }) },
        expected.length,
        1,
        50,
        [...res.json.results].sort(byId),
      ),
    );
    expect([...res.json.results].sort(byId)).toEqual(expected);
    // study_ids[1]: the notebook goes on with the NEON soil study.
    expect(res.json.results.map((r: Doc) => r.id)).toContain(NEON_SOIL_STUDY);
  });

  it('NEON_soil_metadata/R/neon_r.ipynb cell [5] (study_id = study_ids[1], page loop): biosamples by associated_studies:nmdc:sty-11-34xj1150 (two raw colons), per_page=2000, pages until meta.count', async () => {
    const { expected, targets, rows } = await rBiosamplesOfStudy(server, NEON_SOIL_STUDY);
    expect(targets[0]).toBe(
      '/biosamples?filter=associated_studies:nmdc:sty-11-34xj1150&per_page=2000&page=1',
    );
    expect(targets).toHaveLength(Math.ceil(expected.length / 2000));
    expect(targets.length).toBeGreaterThan(1);
    expect(sortedIds(expected)).toEqual(sortedIds(neonSoilBiosamples));
    expect(unique(idsOf(rows))).toHaveLength(rows.length);
    expect([...rows].sort(byId)).toEqual(expected);
    // Fields the notebook reads once the loop is done.
    const sample = rows.find((r) => r.id === neonSoilBiosamples[1]!.id) as any;
    expect(sample.collection_date.has_raw_value).toEqual(expect.any(String));
    expect(sample.water_content).toEqual([expect.stringMatching(/ g of water\/g of dry soil$/)]);
    expect(sample.env_medium.term.name).toBe('soil');
    expect(sample.lat_lon).toMatchObject({ latitude: expect.any(Number), longitude: expect.any(Number) });
  });
});

describe('bioscales_biogeochemical_metadata/R/bioscales_r.ipynb', () => {
  it('bioscales_biogeochemical_metadata/R/bioscales_r.ipynb cell [3] (base_url, fromJSON): studies by title.search:Bio-Scales (raw colon, default page size)', async () => {
    const res = await fromJson('/studies?filter=title.search:Bio-Scales');
    expect(res.status, res.text).toBe(200);
    const expected = await server.store.find('study_set', { title: { $regex: 'Bio-Scales' } });
    expect(idsOf(expected)).toEqual([BIOSCALES_STUDY]);
    expect(res.json).toEqual(
      findPageBody(
        { title: expect.objectContaining({ $regex: 'Bio-Scales' }) },
        expected.length,
        1,
        25,
        expected,
      ),
    );
  });

  it('bioscales_biogeochemical_metadata/R/bioscales_r.ipynb cell [5] (study_id = study_ids[1], page loop): biosamples by associated_studies:nmdc:sty-11-r2h77870, per_page=2000&page=1', async () => {
    const { expected, targets, rows } = await rBiosamplesOfStudy(server, BIOSCALES_STUDY);
    expect(targets).toEqual([
      '/biosamples?filter=associated_studies:nmdc:sty-11-r2h77870&per_page=2000&page=1',
    ]);
    expect(sortedIds(expected)).toEqual(sortedIds(bioscalesBiosamples));
    expect([...rows].sort(byId)).toEqual(expected);
    for (const row of rows as any[]) {
      for (const field of ['calcium', 'magnesium', 'potassium', 'nitrate_nitrogen', 'manganese', 'zinc']) {
        expect(row[field]).toMatchObject({
          has_numeric_value: expect.any(Number),
          has_unit: expect.any(String),
        });
      }
    }
  });
});

describe('NOM_visualizations/R/nom_r.ipynb', () => {
  const resultsFilter = `{"data_object_type": {"$regex": "${NOM_RESULT_TYPE}"}}`;
  const resultsFields = 'id,name,url,was_generated_by,md5_checksum';
  const analyses = () =>
    storeAnswer(server, 'data_object_set', resultsFilter, resultsFields).then((results) =>
      server.store.find(
        'workflow_execution_set',
        { has_output: { $in: idsOf(results) } },
        { projection: ['id', 'has_input', 'has_output'] },
      ),
    );

  it('utility_functions.R get_all_results (NOM_visualizations/R/nom_r.ipynb cell [4], nom_dobj_df): data objects by a case-sensitive $regex, paged with page_token', async () => {
    const read = await rGetAllResults(server.url, 'data_object_set', resultsFilter, 100, resultsFields);
    expect(read.targets[0]).toBe(
      '/nmdcschema/data_object_set?&filter=%7B%22data_object_type%22:%20%7B%22$regex%22:%20%22Direct%20Infusion%20FT-ICR%20MS%20Analysis%20Results%22%7D%7D&max_page_size=100&projection=id,name,url,was_generated_by,md5_checksum',
    );
    expect(read.targets[1]).toMatch(
      /^\/nmdcschema\/data_object_set\?&filter=%7B.*%7D&max_page_size=100&page_token=[^&]+&projection=id,name,url,was_generated_by,md5_checksum$/,
    );
    const expected = await storeAnswer(server, 'data_object_set', resultsFilter, resultsFields);
    // The analysis results and the longer type that contains the phrase; not the lower-case one.
    const all = notebookRecords().data_object_set!;
    expect(sortedIds(expected)).toEqual(
      sortedIds(all.filter((d) => String(d.data_object_type).includes(NOM_RESULT_TYPE))),
    );
    expect(expected).toHaveLength(NOM_RESULT_COUNT + 1);
    expectPagedExactly(read, expected, 100);
    expect(read.pages).toHaveLength(3);
    for (const record of read.resources) {
      expect(Object.keys(record).every((k) => resultsFields.split(',').includes(k))).toBe(true);
    }
  });

  it('utility_functions.R get_collection_by_id (NOM_visualizations/R/nom_r.ipynb cell [6], the collection of the analysis behind a data object): /nmdcschema/ids/{id}/collection-name with a raw colon', async () => {
    const [first] = await storeAnswer(server, 'data_object_set', resultsFilter, resultsFields);
    const id = String(first!.was_generated_by);
    const target = targetOf(urlEncode(`${NMDC_API}/nmdcschema/ids/${id}/collection-name`));
    expect(target).toBe('/nmdcschema/ids/nmdc:wfnom-11-dv3wck24.1/collection-name');
    const holders: string[] = [];
    for (const collection of COLLECTION_NAMES) {
      if (await server.store.getById(collection, id)) holders.push(collection);
    }
    expect(holders).toEqual(['workflow_execution_set']);
    const res = await fromJson(target);
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual({ id, collection_name: holders[0] });
  });

  it('utility_functions.R get_results_by_id (NOM_visualizations/R/nom_r.ipynb cell [8], nom_analysis_df): workflow executions by has_output, 20 ids a chunk', async () => {
    const results = await storeAnswer(server, 'data_object_set', resultsFilter, resultsFields);
    const fields = 'id,has_input,has_output';
    const chunks = await rGetResultsById(
      server.url,
      'workflow_execution_set',
      'has_output',
      idsOf(results),
      fields,
      20,
    );
    expect(chunks).toHaveLength(Math.ceil(results.length / 20));
    expect(chunks[0]!.read.targets[0]).toMatch(
      /^\/nmdcschema\/workflow_execution_set\?&filter=%7B%22has_output%22:%20%7B%22\$in%22:%20\[%22nmdc:dobj-11-003x7710%22,%20%22nmdc:dobj-11-00dewm52%22,%20%22nmdc:dobj-11-00wm3313%22,%20/,
    );
    const all = await expectChunksExactly(server, 'workflow_execution_set', chunks, fields, 20);
    expect(sortedIds(all)).toEqual(sortedIds(await analyses()));
    expect(all).toHaveLength(NOM_RESULT_COUNT);
  });

  it('utility_functions.R get_results_by_id (NOM_visualizations/R/nom_r.ipynb cell [10], nom_raw_df): data objects by id from every has_input, repeated ids included', async () => {
    const idList = (await analyses()).flatMap((a) => asList(a.has_input));
    expect(unique(idList).length).toBeLessThan(idList.length);
    const fields = 'id,was_generated_by,name,md5_checksum,data_object_type';
    const chunks = await rGetResultsById(server.url, 'data_object_set', 'id', idList, fields, 20);
    expect(chunks[0]!.ids.slice(0, 3)).toEqual([
      'nmdc:dobj-11-2ysghy98',
      'nmdc:dobj-11-bmeg5b74',
      'nmdc:dobj-11-3hfzr472',
    ]);
    const all = await expectChunksExactly(server, 'data_object_set', chunks, fields, 20);
    // Each chunk names every record it matches once, however often the chunk repeats its id.
    for (const chunk of chunks) {
      expect(sortedIds(chunk.read.resources)).toEqual(unique(chunk.ids).sort());
    }
    const raw = all.filter((d) => d.data_object_type === NOM_RAW_TYPE || d.data_object_type === undefined);
    expect(raw).toHaveLength(NOM_RESULT_COUNT);
  });

  /** nom_raw_df$id: the raw data, in the order the previous cell's chunks returned them. */
  const rawIds = async () => {
    const idList = (await analyses()).flatMap((a) => asList(a.has_input));
    const raw: string[] = [];
    for (let i = 0; i < idList.length; i += 20) {
      const chunk = await server.store.find('data_object_set', { id: { $in: idList.slice(i, i + 20) } });
      raw.push(...chunk.filter((d) => d.data_object_type === NOM_RAW_TYPE).map((d) => d.id));
    }
    return raw;
  };

  /** nom_datagen_df: the data generations of the raw data, chunk by chunk. */
  const generations = async () => {
    const ids = await rawIds();
    const out: Doc[] = [];
    for (let i = 0; i < ids.length; i += 20) {
      out.push(
        ...(await server.store.find(
          'data_generation_set',
          { has_output: { $in: ids.slice(i, i + 20) } },
          { projection: ['id', 'has_input', 'has_output'] },
        )),
      );
    }
    return out;
  };

  it('utility_functions.R get_results_by_id (NOM_visualizations/R/nom_r.ipynb cell [12], nom_datagen_df): data generations by has_output, one input and one output each', async () => {
    const idList = await rawIds();
    expect(idList.slice(0, 3)).toEqual([
      'nmdc:dobj-11-2mk4qf09',
      'nmdc:dobj-11-2ysghy98',
      'nmdc:dobj-11-3hfzr472',
    ]);
    const fields = 'id,has_input,has_output';
    const chunks = await rGetResultsById(server.url, 'data_generation_set', 'has_output', idList, fields, 20);
    expect(chunks[0]!.read.targets[0]).toMatch(
      /^\/nmdcschema\/data_generation_set\?&filter=%7B%22has_output%22:%20%7B%22\$in%22:%20\[%22nmdc:dobj-11-2mk4qf09%22,%20%22nmdc:dobj-11-2ysghy98%22,%20%22nmdc:dobj-11-3hfzr472%22,%20/,
    );
    const all = await expectChunksExactly(server, 'data_generation_set', chunks, fields, 20);
    expect(all).toHaveLength(NOM_RESULT_COUNT);
    // unlist(has_input), unlist(has_output): exactly one of each per record.
    for (const record of all) {
      expect(asList(record.has_input)).toHaveLength(1);
      expect(asList(record.has_output)).toHaveLength(1);
    }
  });

  it('utility_functions.R get_bsm_source_for_procsm (NOM_visualizations/R/nom_r.ipynb cell [16], source biosamples of the processed samples): material processing by has_output, round after round', async () => {
    const datagens = await generations();
    const starting = datagens.map((g) => asList(g.has_input)[0]!);
    // output -> input, collected round by round as the helper joins them.
    const inputOf = new Map<string, string>();
    let idVec = starting.filter((id) => id.startsWith('nmdc:procsm-'));
    let rounds = 0;
    const fields = 'id,has_input,has_output';
    while (idVec.length > 0) {
      rounds++;
      if (rounds > 5) throw new Error('the walk does not end at biosamples');
      const chunks = await rGetResultsById(
        server.url,
        'material_processing_set',
        'has_output',
        idVec,
        fields,
        20,
      );
      if (rounds === 1) {
        expect(chunks[0]!.read.targets[0]).toMatch(
          /^\/nmdcschema\/material_processing_set\?&filter=%7B%22has_output%22:%20%7B%22\$in%22:%20\[%22nmdc:procsm-11-ckacrz04%22,%20%22nmdc:procsm-11-vkg85558%22,%20%22nmdc:procsm-11-4h2s2t66%22,%20/,
        );
      }
      const steps = await expectChunksExactly(server, 'material_processing_set', chunks, fields, 20);
      for (const step of steps) {
        expect(asList(step.has_input)).toHaveLength(1);
        for (const output of asList(step.has_output)) inputOf.set(output, asList(step.has_input)[0]!);
      }
      idVec = steps.map((s) => asList(s.has_input)[0]!).filter((id) => id.startsWith('nmdc:procsm-'));
    }
    expect(rounds).toBe(2);
    const sources = starting.map((id) => {
      let current = id;
      while (inputOf.has(current)) current = inputOf.get(current)!;
      return current;
    });
    expect(sources.every((id) => id.startsWith('nmdc:bsm-'))).toBe(true);
    expect(sources).toEqual(datagens.map((g) => nomSourceOfGeneration(g.id)));
  });

  it('utility_functions.R get_results_by_id (NOM_visualizations/R/nom_r.ipynb cell [19], nom_biosample_df): biosamples by id, ids not de-duplicated', async () => {
    const idList = (await generations()).map((g) => nomSourceOfGeneration(g.id));
    expect(idList.slice(0, 3)).toEqual([
      'nmdc:bsm-11-12esnc57',
      'nmdc:bsm-11-4gh52t60',
      'nmdc:bsm-11-5w421v18',
    ]);
    expect(unique(idList).length).toBeLessThan(idList.length);
    const fields = 'id,name,associated_studies,env_broad_scale,env_local_scale,env_medium';
    const chunks = await rGetResultsById(server.url, 'biosample_set', 'id', idList, fields, 20);
    const all = await expectChunksExactly(server, 'biosample_set', chunks, fields, 20);
    expect(sortedIds(unique(idsOf(all)).map((id) => ({ id })))).toEqual(unique(idList).sort());
    for (const record of all as any[]) {
      expect(Object.keys(record).sort()).toEqual(fields.split(',').sort());
      for (const scale of ['env_broad_scale', 'env_local_scale', 'env_medium']) {
        expect(record[scale]).toMatchObject({
          has_raw_value: expect.any(String),
          term: { id: expect.any(String), name: expect.any(String), type: 'nmdc:OntologyClass' },
          type: 'nmdc:ControlledIdentifiedTermValue',
        });
      }
    }
  });
});

describe('omics_types_integration/R/integration_r.ipynb', () => {
  it('utility_functions.R get_results_by_id (omics_types_integration/R/integration_r.ipynb cell [7], workflow_info): has_output $in, default page size 50', async () => {
    const fields = 'id,has_output,version';
    const chunks = await rGetResultsById(
      server.url,
      'workflow_execution_set',
      'has_output',
      columbiaDataObjectIds,
      fields,
    );
    expect(chunks).toHaveLength(1);
    expect(chunks[0]!.read.targets[0]).toMatch(
      /^\/nmdcschema\/workflow_execution_set\?&filter=%7B%22has_output%22:%20%7B%22\$in%22:%20\[%22nmdc:dobj-11-wr2qfy21%22,%20%22nmdc:dobj-11-3a4xgj72%22,%20%22nmdc:dobj-11-yzphz319%22,%20.*\]%7D%7D&max_page_size=50&projection=id,has_output,version$/,
    );
    const all = await expectChunksExactly(server, 'workflow_execution_set', chunks, fields, 50);
    const producers = notebookRecords().workflow_execution_set!.filter((w) =>
      asList(w.has_output).some((o) => columbiaDataObjectIds.includes(o)),
    );
    expect(sortedIds(all)).toEqual(sortedIds(producers));
    // The notebook keeps the protein reports of version v1.2.1.
    expect(all.filter((w) => w.version === 'v1.2.1').length).toBeGreaterThan(0);
  });

  it('utility_functions.R get_results_by_id (omics_types_integration/R/integration_r.ipynb cell [48], ordered_metadata): a dotted projection depth.has_numeric_value comes back nested', async () => {
    const fields = 'id,samp_name,description,depth.has_numeric_value,lat_lon';
    const chunks = await rGetResultsById(server.url, 'biosample_set', 'id', columbiaBiosampleIds, fields);
    expect(chunks[0]!.read.targets[0]).toMatch(
      /^\/nmdcschema\/biosample_set\?&filter=%7B%22id%22:%20%7B%22\$in%22:%20\[%22nmdc:bsm-13-0jw5n594%22,%20%22nmdc:bsm-13-13145k83%22,%20%22nmdc:bsm-13-1p0tct86%22,%20/,
    );
    const all = await expectChunksExactly(server, 'biosample_set', chunks, fields, 50);
    const seeded = notebookRecords().biosample_set!.filter((b) =>
      columbiaBiosampleIds.includes(b.id),
    ) as any[];
    expect(all).toEqual(
      seeded
        .map((b) => ({
          id: b.id,
          samp_name: b.samp_name,
          description: b.description,
          depth: { has_numeric_value: b.depth.has_numeric_value },
          lat_lon: b.lat_lon,
        }))
        .sort(byId),
    );
    expect(new Set(all.map((b: any) => String(b.lat_lon.has_raw_value).slice(0, 6)))).toEqual(
      new Set(['46.372', '46.373']),
    );
  });
});

describe('proteomic_aggregation/R/aggregation_r.ipynb', () => {
  it('utility_functions.R get_results_by_id (proteomic_aggregation/R/aggregation_r.ipynb cell [9], version_output): has_output $in, projection id,has_output,version,has_input', async () => {
    const fields = 'id,has_output,version,has_input';
    const chunks = await rGetResultsById(
      server.url,
      'workflow_execution_set',
      'has_output',
      proteomicResultIds,
      fields,
    );
    expect(chunks[0]!.read.targets[0]).toMatch(
      /^\/nmdcschema\/workflow_execution_set\?&filter=%7B%22has_output%22:%20%7B%22\$in%22:%20\[%22nmdc:dobj-11-pxnhdj84%22,%20%22nmdc:dobj-11-7wk9es16%22,%20%22nmdc:dobj-11-ct23bs36%22,%20/,
    );
    const all = await expectChunksExactly(server, 'workflow_execution_set', chunks, fields, 50);
    expect(all).toHaveLength(proteomicResultIds.length);
    expect(all.every((w) => w.id.startsWith('nmdc:wfmp-') && typeof w.version === 'string')).toBe(true);
  });

  it('utility_functions.R get_results_by_id (proteomic_aggregation/R/aggregation_r.ipynb cell [12], manifest): the manifest by id with an empty projection=', async () => {
    const chunks = await rGetResultsById(server.url, 'manifest_set', 'id', [MANIFEST_ID], '');
    expect(chunks[0]!.read.targets).toEqual([
      '/nmdcschema/manifest_set?&filter=%7B%22id%22:%20%7B%22$in%22:%20[%22nmdc:manif-11-7796sg87%22]%7D%7D&max_page_size=50&projection=',
    ]);
    const all = await expectChunksExactly(server, 'manifest_set', chunks, '', 50);
    expect(all).toEqual([await server.store.getById('manifest_set', MANIFEST_ID)]);
    expect(all[0]!.manifest_category).toBe('instrument_run');
  });

  it('utility_functions.R get_results_by_id (proteomic_aggregation/R/aggregation_r.ipynb cell [61], biosample_metadata): projection id,depth.has_numeric_value, repeated ids', async () => {
    const idList = [...columbiaBiosampleIds, ...columbiaBiosampleIds.slice(0, 3), ...columbiaBiosampleIds];
    const fields = 'id,depth.has_numeric_value';
    const chunks = await rGetResultsById(server.url, 'biosample_set', 'id', idList, fields);
    const all = await expectChunksExactly(server, 'biosample_set', chunks, fields, 50);
    const seeded = notebookRecords().biosample_set!.filter((b) =>
      columbiaBiosampleIds.includes(b.id),
    ) as any[];
    expect(all).toEqual(
      seeded.map((b) => ({ id: b.id, depth: { has_numeric_value: b.depth.has_numeric_value } })).sort(byId),
    );
  });
});

describe('taxonomic_dist_by_soil_layer/R/taxonomic_r.ipynb', () => {
  const horizonFilter =
    '{"soil_horizon":{"$exists": true}, "geo_loc_name.has_raw_value": {"$regex": "Colorado"}}';
  const horizonFields = 'id,soil_horizon,geo_loc_name';
  const mpFields = 'id,has_input,has_output';

  it('utility_functions.R get_all_results (taxonomic_dist_by_soil_layer/R/taxonomic_r.ipynb cell [3], biosample_df): $exists and a dotted case-sensitive $regex, paged', async () => {
    const read = await rGetAllResults(server.url, 'biosample_set', horizonFilter, 100, horizonFields);
    expect(read.targets[0]).toBe(
      '/nmdcschema/biosample_set?&filter=%7B%22soil_horizon%22:%7B%22$exists%22:%20true%7D,%20%22geo_loc_name.has_raw_value%22:%20%7B%22$regex%22:%20%22Colorado%22%7D%7D&max_page_size=100&projection=id,soil_horizon,geo_loc_name',
    );
    const expected = await storeAnswer(server, 'biosample_set', horizonFilter, horizonFields);
    // The Colorado horizons (and the NEON samples are in New Hampshire): near misses stay out.
    expect(sortedIds(expected)).toEqual(sortedIds(coloradoBiosamples));
    expectPagedExactly(read, expected, 100);
    expect(read.pages).toHaveLength(Math.ceil(COLORADO_HORIZON_COUNT / 100));
    expect(read.resources[0]).toEqual({
      id: coloradoBiosamples[0]!.id,
      soil_horizon: coloradoBiosamples[0]!.soil_horizon,
      geo_loc_name: coloradoBiosamples[0]!.geo_loc_name,
    });
  });

  it('utility_functions.R get_results_by_id (taxonomic_dist_by_soil_layer/R/taxonomic_r.ipynb cell [5], pooling_df): material processing by has_input, more matches than ids a chunk', async () => {
    const idList = idsOf(await storeAnswer(server, 'biosample_set', horizonFilter, horizonFields));
    const chunks = await rGetResultsById(
      server.url,
      'material_processing_set',
      'has_input',
      idList,
      mpFields,
      20,
    );
    expect(chunks[0]!.read.targets[0]).toMatch(
      /^\/nmdcschema\/material_processing_set\?&filter=%7B%22has_input%22:%20%7B%22\$in%22:%20\[%22nmdc:bsm-11-00m15h97%22,%20%22nmdc:bsm-11-06ta8e31%22,%20%22nmdc:bsm-11-06tgpb52%22,%20/,
    );
    const all = await expectChunksExactly(server, 'material_processing_set', chunks, mpFields, 20);
    expect(chunks.some((c) => c.read.pages.length > 1)).toBe(true);
    const pooling = all.filter((p) => p.id.includes('poolp'));
    expect(unique(idsOf(pooling))).toHaveLength(20);
    expect(pooling.find((p) => asList(p.has_output).includes(POOLED_SAMPLE))!.has_input).toEqual([
      'nmdc:bsm-11-00m15h97',
      'nmdc:bsm-11-06ta8e31',
      'nmdc:bsm-11-06tgpb52',
    ]);
  });

  it.each([
    [
      'taxonomic_dist_by_soil_layer/R/taxonomic_r.ipynb cell [11], extraction_df',
      POOLED_SAMPLE,
      '/nmdcschema/material_processing_set?&filter=%7B%22has_input%22:%20%7B%22$in%22:%20[%22nmdc:procsm-11-ytthx235%22]%7D%7D&max_page_size=20&projection=id,has_input,has_output',
      EXTRACTED_SAMPLE,
    ],
    [
      'taxonomic_dist_by_soil_layer/R/taxonomic_r.ipynb cell [17], library_prep_df',
      EXTRACTED_SAMPLE,
      '/nmdcschema/material_processing_set?&filter=%7B%22has_input%22:%20%7B%22$in%22:%20[%22nmdc:procsm-11-cd8pg312%22]%7D%7D&max_page_size=20&projection=id,has_input,has_output',
      LIBRARY_SAMPLE,
    ],
  ])(
    'utility_functions.R get_results_by_id (%s): material processing by has_input of one processed sample',
    async (_cell, input, target, output) => {
      const chunks = await rGetResultsById(
        server.url,
        'material_processing_set',
        'has_input',
        [input],
        mpFields,
        20,
      );
      expect(chunks[0]!.read.targets).toEqual([target]);
      const all = await expectChunksExactly(server, 'material_processing_set', chunks, mpFields, 20);
      expect(all).toHaveLength(1);
      expect(all[0]).toMatchObject({ has_input: [input], has_output: [output] });
    },
  );

  it('utility_functions.R get_results_by_id (taxonomic_dist_by_soil_layer/R/taxonomic_r.ipynb cell [23], data_generation_df): data generations by has_input, projection id,has_input', async () => {
    const chunks = await rGetResultsById(
      server.url,
      'data_generation_set',
      'has_input',
      [LIBRARY_SAMPLE],
      'id,has_input',
      20,
    );
    expect(chunks[0]!.read.targets).toEqual([
      '/nmdcschema/data_generation_set?&filter=%7B%22has_input%22:%20%7B%22$in%22:%20[%22nmdc:procsm-11-jrykhg31%22]%7D%7D&max_page_size=20&projection=id,has_input',
    ]);
    const all = await expectChunksExactly(server, 'data_generation_set', chunks, 'id,has_input', 20);
    expect(all).toEqual(TAXONOMIC_GENERATIONS.map((id) => ({ id, has_input: [LIBRARY_SAMPLE] })).sort(byId));
  });

  const annotationFields = 'id,was_informed_by,has_output,type,version';

  it('utility_functions.R get_results_by_id (taxonomic_dist_by_soil_layer/R/taxonomic_r.ipynb cell [27], metagenome_annotation_df): workflow executions by was_informed_by, paged', async () => {
    const chunks = await rGetResultsById(
      server.url,
      'workflow_execution_set',
      'was_informed_by',
      TAXONOMIC_GENERATIONS,
      annotationFields,
      20,
    );
    expect(chunks[0]!.read.targets[0]).toBe(
      '/nmdcschema/workflow_execution_set?&filter=%7B%22was_informed_by%22:%20%7B%22$in%22:%20[%22nmdc:omprc-11-63ajbd04%22,%20%22nmdc:dgns-11-ekte1238%22]%7D%7D&max_page_size=20&projection=id,was_informed_by,has_output,type,version',
    );
    const all = await expectChunksExactly(server, 'workflow_execution_set', chunks, annotationFields, 20);
    expect(chunks[0]!.read.pages.length).toBeGreaterThan(1);
    const seeded = notebookRecords().workflow_execution_set!.filter((w) =>
      asList(w.was_informed_by).some((g) => TAXONOMIC_GENERATIONS.includes(g)),
    );
    expect(sortedIds(all)).toEqual(sortedIds(seeded));
    expect(all.filter((w) => w.type === 'nmdc:MetagenomeAnnotation').length).toBeGreaterThan(0);
  });

  it('utility_functions.R get_results_by_id (taxonomic_dist_by_soil_layer/R/taxonomic_r.ipynb cell [35], data_object_df): data objects by id, projection id,data_object_type,url', async () => {
    const annotations = await server.store.find('workflow_execution_set', {
      was_informed_by: { $in: TAXONOMIC_GENERATIONS },
      type: 'nmdc:MetagenomeAnnotation',
    });
    const idList = unique(annotations.flatMap((w) => asList(w.has_output)));
    const fields = 'id,data_object_type,url';
    const chunks = await rGetResultsById(server.url, 'data_object_set', 'id', idList, fields, 50);
    const all = await expectChunksExactly(server, 'data_object_set', chunks, fields, 50);
    expect(sortedIds(all)).toEqual([...idList].sort());
    const lineages = all.filter((d) => d.data_object_type === 'Scaffold Lineage tsv');
    expect(idsOf(lineages)).toEqual(
      expect.arrayContaining(['nmdc:dobj-11-f0shbt75', 'nmdc:dobj-11-jg6awk48', 'nmdc:dobj-11-jp45gr33']),
    );
    expect(lineages.every((d) => typeof d.url === 'string')).toBe(true);
  });
});

describe('utility_functions.R get_data_objects_for_study', () => {
  /**
   * `get_data_objects_for_study(study_id)`: jsonlite's `fromJSON` of the URL run through
   * `URLencode` (the colon of the id stays raw), then `unnest(response, cols = c(data_objects))`:
   * one row per data object with its `biosample_id`. Checks the answer against the walk over the
   * store and that every field keeps one JSON kind, or `unnest` cannot bind the rows.
   */
  async function getDataObjectsForStudy(studyId: string) {
    const target = targetOf(urlEncode(`${NMDC_API}/data_objects/study/${studyId}`));
    expect(target).toBe(`/data_objects/study/${studyId}`);
    const res = await fromJson(target);
    expect(res.status, res.text).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const expected = dataObjectsForStudy(lineage, studyId);
    expect(res.json).toEqual(expected);
    const rows = flatten(res.json);
    expect(mixedKinds(rows)).toEqual([]);
    return { groups: expected, rows, columns: new Set(rows.flatMap((r) => Object.keys(r))) };
  }

  it('utility_functions.R get_data_objects_for_study (omics_types_integration/R/integration_r.ipynb cell [3], dobj): the Columbia River study, unnested', async () => {
    const { groups, rows, columns } = await getDataObjectsForStudy(COLUMBIA_RIVER_STUDY);
    // Cell [5] drops these three columns, so each must be there.
    for (const column of ['alternative_identifiers', 'in_manifest', 'was_generated_by', 'id', 'url']) {
      expect(columns).toContain(column);
    }
    // Only the sediments with data, each once, in id order.
    expect(groups.map((g) => g.biosample_id)).toEqual(columbiaBiosampleIds.slice(0, 2));
    // The results it keeps: one biosample with all four kinds.
    const kinds = [
      'Annotation Enzyme Commission',
      'Annotation KEGG Orthology',
      'GC-MS Metabolomics Results',
      'Protein Report',
    ];
    const kept = rows.filter((r) => kinds.includes(String(r.data_object_type)));
    const [first] = columbiaBiosampleIds;
    for (const kind of kinds) {
      expect(
        kept.some((r) => r.biosample_id === first && r.data_object_type === kind),
        kind,
      ).toBe(true);
    }
    expect(idsOf(kept)).toEqual(expect.arrayContaining(INTEGRATION_OUTPUTS));
  });

  it('utility_functions.R get_data_objects_for_study (proteomic_aggregation/R/aggregation_r.ipynb cell [5], data_objects): the metaproteomics results, a shared one under both sediments', async () => {
    const { rows, columns } = await getDataObjectsForStudy(COLUMBIA_RIVER_STUDY);
    for (const column of ['id', 'name', 'data_object_type', 'url', 'biosample_id', 'in_manifest']) {
      expect(columns).toContain(column);
    }
    const results = rows.filter((r) => r.data_object_type === 'Unfiltered Metaproteomics Results');
    expect(unique(idsOf(results)).sort()).toEqual([...proteomicResultIds].sort());
    // The third run's analysis read the first sediment's annotation: its result descends from both.
    expect(results.filter((r) => r.id === PROTEOMIC_OUTPUTS[2]).map((r) => r.biosample_id)).toEqual(
      columbiaBiosampleIds.slice(0, 2),
    );
  });

  it('utility_functions.R get_data_objects_for_study (metaG_metaT_integration/R/metagmetat_r.ipynb, inferred caller): Harvard Forest, metagenome and metatranscriptome results told apart by url', async () => {
    const { groups, rows } = await getDataObjectsForStudy(HARVARD_FOREST_STUDY);
    expect(groups.map((g) => g.biosample_id)).toEqual([HARVARD_FOREST_BIOSAMPLE]);
    const types = new Set(rows.map((r) => r.data_object_type));
    for (const kind of ['Annotation KEGG Orthology', 'Metatranscriptome Expression', 'Gene Phylogeny tsv']) {
      expect(types).toContain(kind);
    }
    const expression = rows.find((r) => r.data_object_type === 'Metatranscriptome Expression')!;
    expect(expression.url).toContain('/nmdc:wfmt');
    const phylogeny = rows.find((r) => r.data_object_type === 'Gene Phylogeny tsv')!;
    expect(phylogeny.url).toContain('/nmdc:wfmg');
  });

  it('utility_functions.R get_data_objects_for_study of an unknown study: 404, which stops fromJSON', async () => {
    const res = await fromJson('/data_objects/study/nmdc:sty-11-00000000');
    expect(res.status).toBe(404);
    expect(res.json).toEqual({ detail: 'Study not found' });
  });
});

describe('over_representation/R/overrepresentation_r.ipynb', () => {
  it('over_representation/R/overrepresentation_r.ipynb get_reports_biosample (cell [6], run by cell [8]): the biosample with its first colon sent as %3A, read by rjson', async () => {
    const target = targetOf(`${NMDC_API}/biosamples/${SPRUCE_BIOSAMPLE.replace(':', '%3A')}`);
    expect(target).toBe('/biosamples/nmdc%3Absm-13-bgefg837');
    const res = await fromJson(target, RJSON_HEADERS);
    expect(res.status, res.text).toBe(200);
    const record = await server.store.getById('biosample_set', SPRUCE_BIOSAMPLE);
    expect(record).not.toBeNull();
    expect(res.json).toEqual(record);
    expect(asList(res.json.associated_studies)[0]).toBe(asList(record!.associated_studies)[0]);
  });

  it("over_representation/R/overrepresentation_r.ipynb get_reports_studyid (cell [6], from get_reports_biosample('nmdc:bsm-13-bgefg837')): the study's first colon sent as %3A, read by rjson", async () => {
    const biosample = await fromJson(`/biosamples/${SPRUCE_BIOSAMPLE.replace(':', '%3A')}`, RJSON_HEADERS);
    const studyId = asList(biosample.json.associated_studies)[0]!;
    expect(studyId).toBe(SPRUCE_STUDY);
    const target = targetOf(`${NMDC_API}/data_objects/study/${studyId.replace(':', '%3A')}`);
    expect(target).toBe('/data_objects/study/nmdc%3Asty-11-33fbta56');
    const res = await fromJson(target, RJSON_HEADERS);
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual(dataObjectsForStudy(lineage, SPRUCE_STUDY));
    // What get_reports_biosample goes on to read: one GFF described as the functional
    // annotation (stopifnot), the first FASTA, and the protein report.
    const entry = reportsByBiosample(res.json, 'R').get(`biosample_${SPRUCE_BIOSAMPLE}`);
    expect(entry).toBeDefined();
    const gffs = entry!.GFF.filter((g) => String(g.description).includes('Functional Annotation for '));
    expect(idsOf(gffs)).toEqual([SPRUCE_FUNCTIONAL_GFF]);
    expect(entry!.GFF.length).toBeGreaterThan(1);
    expect(entry!.FASTA[0]!.id).toBe(SPRUCE_FASTA);
    expect(idsOf(entry!.protein_reports)).toEqual([SPRUCE_PROTEIN_REPORT]);
    const [report] = entry!.protein_reports;
    expect(fastaIdOfReport(String(report!.name))).toBe(SPRUCE_FASTA);
    expect(report).toMatchObject({
      url: expect.any(String),
      was_generated_by: expect.stringMatching(/^nmdc:wfmp-/),
    });
  });

  it("over_representation/R/overrepresentation_r.ipynb read_protein_report (cell [7]): rjson reads /objects/{was_generated_by without 'nmdc:'}, a 307 that libcurl follows to the workflow execution", async () => {
    // `sub("nmdc:", "", ...)`: the first `nmdc:` only.
    const wrkflwId = 'nmdc:wfmp-11-x0zhd078.2'.replace('nmdc:', '');
    const target = targetOf(`${NMDC_API}/objects/${wrkflwId}`);
    expect(target).toBe('/objects/wfmp-11-x0zhd078.2');
    const first = await fromJson(target, RJSON_HEADERS);
    expect(first.status, first.text).toBe(307);
    expect(first.headers.location).toBe(`${server.url}/nmdcschema/ids/nmdc:wfmp-11-x0zhd078.2`);
    const followed = await fromJson(new URL(first.headers.location!).pathname, RJSON_HEADERS);
    expect(followed.status, followed.text).toBe(200);
    expect(followed.json).toEqual(
      await server.store.getById('workflow_execution_set', 'nmdc:wfmp-11-x0zhd078.2'),
    );
    expect(followed.json.ended_at_time).toBe('2024-02-10T20:00:00Z');
    expect(followed.json.metaproteomics_analysis_category).toBe('matched_metagenome');
  });
});

describe('utility_functions.R', () => {
  it('utility_functions.R get_biosample_record_by_id (metaG_metaT_integration/R/metagmetat_r.ipynb, inferred caller): httr::GET of /nmdcschema/biosample_set/{id}?max_page_size=100&projection=', async () => {
    const url = `${NMDC_API}/nmdcschema/biosample_set/${HARVARD_FOREST_BIOSAMPLE}?max_page_size=100&projection=`;
    const res = await send(server.url, { method: 'GET', target: targetOf(url), headers: HTTR_HEADERS });
    // http_error() stops on 4xx/5xx; the whole record comes back, not wrapped.
    expect(res.status, res.text).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json).toEqual(await server.store.getById('biosample_set', HARVARD_FOREST_BIOSAMPLE));
  });
});
