/**
 * nmdc_api_utilities (the NMDC Python client): the provenance calls of nmdc_search.py
 * (`get_linked_instances`, `get_linked_instances_and_associate_ids`) and data_object_search.py
 * (`get_data_objects_for_study` and the deprecated `get_data_objects_for_studies`). Every request is
 * the one the client sends; expected answers come from a brute-force walk over the store's records.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Doc } from '../../src/store/port.ts';
import { startCompatServer, type CompatServer } from './support/server.ts';
import { send } from './support/wire.ts';
import {
  BOREAL_CAMPAIGN_ID,
  CLIENT_RECORDS,
  FAIRBANKS_STUDY_ID,
  LUQUILLO_STUDY_ID,
  RIVER_POOLED,
  RIVER_SEQUENCED,
  RIVER_STUDY_ID,
} from './support/nmdc-api-utilities-records.ts';
import {
  LEGACY_READ_HEADERS,
  LINKED_IDS_PER_BATCH,
  READ_HEADERS,
  associateIds,
  getLinkedInstances,
  idsOf,
} from './support/nmdc-api-utilities-client.ts';
import {
  dataObjectsForStudy,
  expectLinkedBatches,
  linkedInstances,
  readLineage,
  reach,
  typesMatching,
  type Lineage,
} from './support/provenance.ts';

let server: CompatServer;
let lineage: Lineage;

beforeAll(async () => {
  server = await startCompatServer(CLIENT_RECORDS);
  lineage = await readLineage(server);
});
afterAll(async () => server?.close());

const get = (target: string, headers: Record<string, string> = READ_HEADERS) =>
  send(server.url, { method: 'GET', target, headers });

const RIVER_BIOSAMPLES = [...RIVER_SEQUENCED, ...RIVER_POOLED];

describe('nmdc_search.py NMDCSearch.get_linked_instances', () => {
  it('get_linked_instances(["nmdc:bsm-11-002vgm56"]): no types key, hydrate=False, max_page_size=500', async () => {
    const read = await getLinkedInstances(server.url, { ids: ['nmdc:bsm-11-002vgm56'] });
    expect(read.batches.map((b) => b.targets)).toEqual([
      ['/nmdcschema/linked_instances?ids=nmdc%3Absm-11-002vgm56&hydrate=False&max_page_size=500'],
    ]);
    const records = expectLinkedBatches(lineage, read, null);
    expect(records).toEqual([
      { id: FAIRBANKS_STUDY_ID, type: 'nmdc:Study', _upstream_of: ['nmdc:bsm-11-002vgm56'] },
      { id: BOREAL_CAMPAIGN_ID, type: 'nmdc:Study', _upstream_of: ['nmdc:bsm-11-002vgm56'] },
    ]);
  });

  it('get_linked_instances(types="nmdc:Study", ids="nmdc:bsm-11-002vgm56") (test_get_linked_instance_strings): bare strings, two studies', async () => {
    const read = await getLinkedInstances(server.url, { types: 'nmdc:Study', ids: 'nmdc:bsm-11-002vgm56' });
    expect(read.batches[0]!.targets).toEqual([
      '/nmdcschema/linked_instances?types=nmdc%3AStudy&ids=nmdc%3Absm-11-002vgm56&hydrate=False&max_page_size=500',
    ]);
    const records = expectLinkedBatches(lineage, read, ['nmdc:Study']);
    // The client's test: len(result) == 2 (the study and the campaign it is part of).
    expect(idsOf(records as Array<{ id: string }>)).toEqual([FAIRBANKS_STUDY_ID, BOREAL_CAMPAIGN_ID]);
  });

  it('get_linked_instances(types=["nmdc:Study", "nmdc:DataObject"], ids=["nmdc:bsm-11-002vgm56", "nmdc:bsm-11-006pnx90"]) (test_get_linked_instance_mutiple_types): types and ids repeated', async () => {
    const ids = ['nmdc:bsm-11-002vgm56', 'nmdc:bsm-11-006pnx90'];
    const read = await getLinkedInstances(server.url, { types: ['nmdc:Study', 'nmdc:DataObject'], ids });
    expect(read.batches[0]!.targets).toEqual([
      '/nmdcschema/linked_instances?types=nmdc%3AStudy&types=nmdc%3ADataObject&ids=nmdc%3Absm-11-002vgm56&ids=nmdc%3Absm-11-006pnx90&hydrate=False&max_page_size=500',
    ]);
    const records = expectLinkedBatches(lineage, read, ['nmdc:Study', 'nmdc:DataObject']);
    expect(records.map((r) => r.type)).toContain('nmdc:Study');
    expect(records.find((r) => r.id === FAIRBANKS_STUDY_ID)).toEqual({
      id: FAIRBANKS_STUDY_ID,
      type: 'nmdc:Study',
      _upstream_of: ids,
    });
  });

  it('get_linked_instances(types=["nmdc:Study", "nmdc:DataObject"], ids=<the Columbia River samples with data>): studies upstream, files downstream, pooled samples sharing theirs', async () => {
    const types = ['nmdc:Study', 'nmdc:DataObject'];
    const read = await getLinkedInstances(server.url, { types, ids: RIVER_BIOSAMPLES });
    const records = expectLinkedBatches(lineage, read, types);
    expect(records.find((r) => r.id === RIVER_STUDY_ID)).toEqual({
      id: RIVER_STUDY_ID,
      type: 'nmdc:Study',
      _upstream_of: [...RIVER_BIOSAMPLES].sort(),
    });
    const files = records.filter((r) => r.type === 'nmdc:DataObject');
    expect(files).toHaveLength(20);
    const shared = files.filter((r) => (r._downstream_of as string[]).length === 2);
    expect(shared.map((r) => r._downstream_of)).toEqual(Array(5).fill(RIVER_POOLED));
  });

  it('get_linked_instances(types="nmdc:Study", ids="nmdc:bsm-11-002vgm56", hydrate=True) (test_get_linked_instance_hydrate): whole records with id and type', async () => {
    const read = await getLinkedInstances(server.url, {
      types: 'nmdc:Study',
      ids: 'nmdc:bsm-11-002vgm56',
      hydrate: true,
    });
    expect(read.batches[0]!.targets).toEqual([
      '/nmdcschema/linked_instances?types=nmdc%3AStudy&ids=nmdc%3Absm-11-002vgm56&hydrate=True&max_page_size=500',
    ]);
    const records = expectLinkedBatches(lineage, read, ['nmdc:Study'], { hydrate: true });
    expect(records).toEqual(
      await Promise.all(
        [FAIRBANKS_STUDY_ID, BOREAL_CAMPAIGN_ID].map(async (id) => ({
          ...(await server.store.getById('study_set', id)),
          _upstream_of: ['nmdc:bsm-11-002vgm56'],
        })),
      ),
    );
    expect(records.every((r) => 'id' in r && 'type' in r)).toBe(true);
  });

  it('get_linked_instances(ids=<the Columbia River samples>, max_page_size=10): pages followed with types, ids and page_token only, later pages 20 long', async () => {
    const read = await getLinkedInstances(server.url, { ids: RIVER_BIOSAMPLES, maxPageSize: 10 });
    const [batch] = read.batches;
    expect(batch!.pages.length).toBeGreaterThan(2);
    const idsQuery = RIVER_BIOSAMPLES.map((id) => `ids=${id.replace(':', '%3A')}`).join('&');
    expect(batch!.targets[0]).toBe(`/nmdcschema/linked_instances?${idsQuery}&hydrate=False&max_page_size=10`);
    for (const [i, target] of batch!.targets.slice(1).entries()) {
      const token = String(batch!.pages[i]!.json.next_page_token);
      expect(target).toBe(`/nmdcschema/linked_instances?${idsQuery}&page_token=${encodeURIComponent(token)}`);
    }
    const records = expectLinkedBatches(lineage, read, null, { maxPageSize: 10 });
    expect(records).toEqual(linkedInstances(lineage, RIVER_BIOSAMPLES, null));
    expect(new Set(idsOf(records as Array<{ id: string }>)).size).toBe(records.length);
  });

  it('get_linked_instances(types=["nmdc:PlannedProcess", "nmdc:Study"], ids=<the Columbia River samples>, hydrate=True, max_page_size=5): the first page whole, the later ones slim', async () => {
    const types = ['nmdc:PlannedProcess', 'nmdc:Study'];
    const read = await getLinkedInstances(server.url, {
      types,
      ids: RIVER_BIOSAMPLES,
      hydrate: true,
      maxPageSize: 5,
    });
    expect(read.batches[0]!.targets[1]).toMatch(
      /^\/nmdcschema\/linked_instances\?types=nmdc%3APlannedProcess&types=nmdc%3AStudy&ids=nmdc%3Absm-11-rz000000&.*&page_token=[^&]+$/,
    );
    const records = expectLinkedBatches(lineage, read, types, { hydrate: true, maxPageSize: 5 });
    // Data generations, material processing and workflow executions: subclasses match.
    expect(new Set(records.map((r) => r.type))).toEqual(
      new Set([
        'nmdc:Extraction',
        'nmdc:MetagenomeAssembly',
        'nmdc:NucleotideSequencing',
        'nmdc:Pooling',
        'nmdc:ReadQcAnalysis',
        'nmdc:Study',
      ]),
    );
    expect(Object.keys(records[0]!).length).toBeGreaterThan(3);
    expect(
      Object.keys(records.at(-1)!).every((k) => ['id', 'type', '_downstream_of', '_upstream_of'].includes(k)),
    ).toBe(true);
  });

  it('get_linked_instances(types=["nmdc:Study"], ids=<every biosample and data object, more than 250>) (test_get_linked_instance): two batches, concatenated', async () => {
    const biosamples = idsOf(await server.store.find('biosample_set', {}));
    const dataObjects = idsOf(await server.store.find('data_object_set', {}));
    const ids = [...biosamples, ...dataObjects];
    expect(ids.length).toBeGreaterThan(LINKED_IDS_PER_BATCH);
    expect(ids.length).toBeLessThanOrEqual(2 * LINKED_IDS_PER_BATCH);
    const read = await getLinkedInstances(server.url, { types: ['nmdc:Study'], ids });
    expect(read.batches.map((b) => b.ids)).toEqual([
      ids.slice(0, LINKED_IDS_PER_BATCH),
      ids.slice(LINKED_IDS_PER_BATCH),
    ]);
    expect(read.batches[0]!.targets[0]).toMatch(
      /^\/nmdcschema\/linked_instances\?types=nmdc%3AStudy&ids=nmdc%3Absm-11-[^&]+(&ids=nmdc%3A[a-z]+-[^&]+){249}&hydrate=False&max_page_size=500$/,
    );
    const records = expectLinkedBatches(lineage, read, ['nmdc:Study']);
    // A study met by both batches is in the list twice, each time with its own batch's ids.
    expect(records.length).toBe(
      linkedInstances(lineage, read.batches[0]!.ids, ['nmdc:Study']).length +
        linkedInstances(lineage, read.batches[1]!.ids, ['nmdc:Study']).length,
    );
    // What the client's test reads: every biosample with a study upstream is named once.
    const named = new Set(records.flatMap((r) => (r._upstream_of as string[] | undefined) ?? []));
    const withStudy = ids.filter((id) =>
      [...reach(lineage, id, 'upstream')].some((u) => lineage.records.get(u)?.type === 'nmdc:Study'),
    );
    expect([...named].sort()).toEqual([...withStudy].sort());
    expect(biosamples.every((id) => named.has(id))).toBe(true);
  });

  it('get_linked_instances(ids=<every biosample and data object>, max_page_size=100) (types=None): each batch paged past its first 100 in pages of 20', async () => {
    const ids = [
      ...idsOf(await server.store.find('biosample_set', {})),
      ...idsOf(await server.store.find('data_object_set', {})),
    ];
    const read = await getLinkedInstances(server.url, { ids, maxPageSize: 100 });
    expect(read.batches).toHaveLength(2);
    expectLinkedBatches(lineage, read, null, { maxPageSize: 100 });
    for (const batch of read.batches) expect(batch.pages.length).toBeGreaterThan(2);
  });

  it('a page token the client sends again (after a page that was not a 200) answers the same page again', async () => {
    const first = await get(
      `/nmdcschema/linked_instances?ids=${RIVER_BIOSAMPLES.map((id) => id.replace(':', '%3A')).join('&ids=')}&hydrate=False&max_page_size=10`,
    );
    expect(first.status, first.text).toBe(200);
    const again = `/nmdcschema/linked_instances?ids=${RIVER_BIOSAMPLES.map((id) => id.replace(':', '%3A')).join('&ids=')}&page_token=${first.json.next_page_token}`;
    const once = await get(again);
    const twice = await get(again);
    expect(once.status, once.text).toBe(200);
    expect(twice.status, twice.text).toBe(200);
    expect(twice.json).toEqual({ ...once.json, next_page_token: expect.any(String) });
    expect(twice.json.resources).toEqual(linkedInstances(lineage, RIVER_BIOSAMPLES, null).slice(10, 30));
  });

  it('get_linked_instances with an id that is no record: 404 naming it, which the client raises as RuntimeError', async () => {
    const read = await getLinkedInstances(server.url, {
      types: 'nmdc:Study',
      ids: ['nmdc:bsm-11-002vgm56', 'nmdc:bsm-11-zzzzzzzz'],
    });
    expect(read.failed?.status).toBe(404);
    expect(read.failed?.json).toEqual({ detail: "Some IDs not found: ['nmdc:bsm-11-zzzzzzzz']." });
  });

  it('get_linked_instances(types="Study", ...): a type without its prefix is 404, which the client raises', async () => {
    const read = await getLinkedInstances(server.url, { types: 'Study', ids: 'nmdc:bsm-11-002vgm56' });
    expect(read.batches[0]!.targets[0]).toBe(
      '/nmdcschema/linked_instances?types=Study&ids=nmdc%3Absm-11-002vgm56&hydrate=False&max_page_size=500',
    );
    expect(read.failed?.status).toBe(404);
    expect(read.failed?.json.detail).toMatch(
      /^Some types not found: \['Study'\]\. You may need to prefix with `nmdc:`/,
    );
  });
});

describe('nmdc_search.py NMDCSearch.get_linked_instances_and_associate_ids', () => {
  /** The association the brute-force walk gives: each start id's linked records of `types`, sorted. */
  function expectedAssociation(ids: string[], types: string[] | null): Map<string, string[]> {
    const wanted = typesMatching(types);
    const out = new Map<string, string[]>();
    for (const id of ids) {
      const linked = [...reach(lineage, id, 'upstream'), ...reach(lineage, id, 'downstream')].filter((l) =>
        wanted.has(String(lineage.records.get(l)?.type)),
      );
      if (linked.length > 0) out.set(id, linked.sort());
    }
    return out;
  }
  const sortedValues = (association: Map<string, Array<string | Doc>>) =>
    new Map(
      [...association].map(([k, v]) => [k, v.map((x) => (typeof x === 'string' ? x : x.id)).sort()] as const),
    );

  it('get_linked_instances_and_associate_ids(types=["nmdc:Study"], ids=["nmdc:bsm-11-002vgm56", "nmdc:bsm-11-006pnx90"]) (test_association)', async () => {
    const ids = ['nmdc:bsm-11-002vgm56', 'nmdc:bsm-11-006pnx90'];
    const read = await getLinkedInstances(server.url, { types: ['nmdc:Study'], ids });
    expect(read.batches[0]!.targets).toEqual([
      '/nmdcschema/linked_instances?types=nmdc%3AStudy&ids=nmdc%3Absm-11-002vgm56&ids=nmdc%3Absm-11-006pnx90&hydrate=False&max_page_size=500',
    ]);
    expectLinkedBatches(lineage, read, ['nmdc:Study']);
    const association = associateIds(read.records, false);
    expect(association).toEqual(
      new Map(ids.map((id) => [id, [FAIRBANKS_STUDY_ID, BOREAL_CAMPAIGN_ID]] as const)),
    );
    expect(sortedValues(association)).toEqual(expectedAssociation(ids, ['nmdc:Study']));
  });

  it('get_linked_instances_and_associate_ids(..., hydrate=True) (test_association_hydrate): whole study records without _upstream_of', async () => {
    const ids = ['nmdc:bsm-11-002vgm56', 'nmdc:bsm-11-006pnx90'];
    const read = await getLinkedInstances(server.url, { types: ['nmdc:Study'], ids, hydrate: true });
    expect(read.batches[0]!.targets[0]).toContain('&hydrate=True&max_page_size=500');
    expectLinkedBatches(lineage, read, ['nmdc:Study'], { hydrate: true });
    const studies = await Promise.all(
      [FAIRBANKS_STUDY_ID, BOREAL_CAMPAIGN_ID].map((id) => server.store.getById('study_set', id)),
    );
    const association = associateIds(read.records, true);
    expect(association).toEqual(new Map(ids.map((id) => [id, studies] as const)));
    for (const records of association.values()) {
      for (const record of records) expect(record).toHaveProperty('type');
    }
  });

  it('get_linked_instances_and_associate_ids(ids=<the Columbia River samples>, types=["nmdc:DataObject"], max_page_size=7): every page, each sample its own files, pooled samples both', async () => {
    const read = await getLinkedInstances(server.url, {
      ids: RIVER_BIOSAMPLES,
      types: ['nmdc:DataObject'],
      maxPageSize: 7,
    });
    expectLinkedBatches(lineage, read, ['nmdc:DataObject'], { maxPageSize: 7 });
    expect(read.batches[0]!.pages.length).toBeGreaterThan(1);
    const association = associateIds(read.records, false);
    expect(sortedValues(association)).toEqual(expectedAssociation(RIVER_BIOSAMPLES, ['nmdc:DataObject']));
    expect([...association.keys()].sort()).toEqual([...RIVER_BIOSAMPLES].sort());
    for (const id of RIVER_BIOSAMPLES) expect(association.get(id)).toHaveLength(5);
    expect(association.get(RIVER_POOLED[0]!)).toEqual(association.get(RIVER_POOLED[1]!));
  });

  it('get_linked_instances_and_associate_ids(ids=<data objects>, types=["nmdc:Biosample"]): the biosamples upstream of each file', async () => {
    const files = ['nmdc:dobj-11-rvr0ctg', 'nmdc:dobj-11-rvr3sca'];
    const read = await getLinkedInstances(server.url, { ids: files, types: ['nmdc:Biosample'] });
    expectLinkedBatches(lineage, read, ['nmdc:Biosample']);
    const association = associateIds(read.records, false);
    expect(association).toEqual(
      new Map([
        [files[0], [RIVER_SEQUENCED[0]]],
        [files[1], [...RIVER_POOLED]],
      ]),
    );
  });
});

describe('data_object_search.py', () => {
  it('DataObjectSearch.get_data_objects_for_study("nmdc:sty-11-aygzgv51") (test_get_data_objects_for_study): the raw id in the path, no query', async () => {
    const res = await get('/data_objects/study/nmdc:sty-11-aygzgv51');
    expect(res.status, res.text).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const expected = dataObjectsForStudy(lineage, RIVER_STUDY_ID);
    expect(res.json).toEqual(expected);
    // What the client's test reads.
    expect(res.json.length).toBeGreaterThan(0);
    expect(res.json[0]).toHaveProperty('data_objects');
    // Only the samples with data, each with its run's five files; the pooled ones share theirs.
    expect(res.json.map((g: { biosample_id: string }) => g.biosample_id)).toEqual(
      [...RIVER_BIOSAMPLES].sort(),
    );
    for (const group of res.json) expect(group.data_objects).toHaveLength(5);
    const pooled = res.json.filter((g: { biosample_id: string }) => RIVER_POOLED.includes(g.biosample_id));
    expect(pooled[0].data_objects).toEqual(pooled[1].data_objects);
    expect(pooled[0].data_objects[0]).toEqual(
      await server.store.getById('data_object_set', 'nmdc:dobj-11-rvr3ctg'),
    );
  });

  it('DataObjectSearch.get_data_objects_for_studies("nmdc:sty-11-aygzgv51", max_page_size=50) (deprecated): max_page_size ignored, the same request', async () => {
    const res = await get('/data_objects/study/nmdc:sty-11-aygzgv51');
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual(dataObjectsForStudy(lineage, RIVER_STUDY_ID));
  });

  it('DataObjectSearch.get_data_objects_for_studies("nmdc:sty-11-aygzgv51") as 0.6.1 sends it: ?max_page_size=100, which the endpoint ignores', async () => {
    const res = await get('/data_objects/study/nmdc:sty-11-aygzgv51?max_page_size=100', LEGACY_READ_HEADERS);
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual(dataObjectsForStudy(lineage, RIVER_STUDY_ID));
  });

  it('DataObjectSearch.get_data_objects_for_study of every study in the store: the walk from study to biosamples to files', async () => {
    const studies = await server.store.find('study_set', {});
    let withData = 0;
    for (const { id } of studies) {
      const res = await get(`/data_objects/study/${id}`);
      expect(res.status, `${id}: ${res.text}`).toBe(200);
      expect(res.json, id).toEqual(dataObjectsForStudy(lineage, id));
      if (res.json.length > 0) withData++;
    }
    // The generated studies and the Columbia River one have data.
    expect(withData).toBeGreaterThan(1);
  });

  it('DataObjectSearch.get_data_objects_for_study of a study without data: an empty list', async () => {
    const res = await get(`/data_objects/study/${LUQUILLO_STUDY_ID}`);
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual([]);
  });

  it('DataObjectSearch.get_data_objects_for_study of an unknown study: 404 Study not found, which the client raises as RuntimeError', async () => {
    const res = await get('/data_objects/study/nmdc:sty-11-00000000');
    expect(res.status).toBe(404);
    expect(res.json).toEqual({ detail: 'Study not found' });
  });
});
