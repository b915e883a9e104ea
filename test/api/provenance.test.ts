/**
 * The provenance graph's endpoints over a small hand-made lineage: a study, two biosamples (one
 * through an extraction), two sequencing runs, three workflow executions, their data objects,
 * and a reference to a data object that arrives later.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { createTestApp, type TestApp } from '../support/server.ts';
import type { Doc } from '../../src/store/port.ts';

let t: TestApp;

const S = 'nmdc:sty-11-s1';
const B1 = 'nmdc:bsm-11-b1';
const B2 = 'nmdc:bsm-11-b2';
const E = 'nmdc:extrp-11-e1';
const PS = 'nmdc:procsm-11-p1';
const DG1 = 'nmdc:dgns-11-g1';
const DG2 = 'nmdc:dgns-11-g2';
const WE1 = 'nmdc:wfrqc-11-w1.1';
const WE2 = 'nmdc:wfmgas-11-w2.1';
const WE3 = 'nmdc:wfmgan-11-w3.1';
const DO = (n: number) => `nmdc:dobj-11-d${n}`;
const LATER = 'nmdc:dobj-11-later';

const records: Record<string, Doc[]> = {
  study_set: [{ id: S, type: 'nmdc:Study', name: 'Lineage study' }],
  biosample_set: [
    { id: B1, type: 'nmdc:Biosample', name: 'Soil 1', associated_studies: [S] },
    { id: B2, type: 'nmdc:Biosample', name: 'Soil 2', associated_studies: [S] },
  ],
  material_processing_set: [{ id: E, type: 'nmdc:Extraction', has_input: [B2], has_output: [PS] }],
  processed_sample_set: [{ id: PS, type: 'nmdc:ProcessedSample', name: 'Extract of soil 2' }],
  data_generation_set: [
    {
      id: DG1,
      type: 'nmdc:NucleotideSequencing',
      has_input: [B1],
      has_output: [DO(1)],
      associated_studies: [S],
    },
    {
      id: DG2,
      type: 'nmdc:NucleotideSequencing',
      has_input: [PS],
      has_output: [DO(2)],
      associated_studies: [S],
    },
  ],
  workflow_execution_set: [
    {
      id: WE1,
      type: 'nmdc:ReadQcAnalysis',
      was_informed_by: [DG1],
      has_input: [DO(1)],
      has_output: [DO(3), DO(4)],
    },
    {
      id: WE2,
      type: 'nmdc:MetagenomeAssembly',
      was_informed_by: [DG1],
      has_input: [DO(3)],
      has_output: [DO(5)],
    },
    {
      id: WE3,
      type: 'nmdc:MetagenomeAnnotation',
      was_informed_by: [DG1],
      has_input: [DO(5)],
      has_output: [LATER],
    },
  ],
  data_object_set: [1, 2, 3, 4, 5].map((n) => ({
    id: DO(n),
    type: 'nmdc:DataObject',
    name: `file ${n}`,
    ...(n === 1 ? { was_generated_by: DG1 } : n === 2 ? { was_generated_by: DG2 } : {}),
  })),
};

beforeAll(async () => {
  t = await createTestApp();
  for (const [collection, docs] of Object.entries(records)) await t.store.upsertMany(collection, docs);
});
afterAll(async () => t?.close());

const linked = (query: string) => request(t.app).get(`/nmdcschema/linked_instances?${query}`);
const ids = (body: { resources: Array<{ id: string }> }) => body.resources.map((r) => r.id);

describe('GET /nmdcschema/linked_instances', () => {
  it('follows links downstream and upstream, saying which start id each record is linked to', async () => {
    const res = await linked(`ids=${B1}&max_page_size=100`).expect(200);
    expect(res.body.next_page_token).toBeUndefined();
    expect(res.body.resources).toEqual(
      [
        { id: DG1, type: 'nmdc:NucleotideSequencing', _downstream_of: [B1] },
        { id: DO(1), type: 'nmdc:DataObject', _downstream_of: [B1] },
        { id: DO(3), type: 'nmdc:DataObject', _downstream_of: [B1] },
        { id: DO(4), type: 'nmdc:DataObject', _downstream_of: [B1] },
        { id: DO(5), type: 'nmdc:DataObject', _downstream_of: [B1] },
        { id: S, type: 'nmdc:Study', _upstream_of: [B1] },
        { id: WE3, type: 'nmdc:MetagenomeAnnotation', _downstream_of: [B1] },
        { id: WE2, type: 'nmdc:MetagenomeAssembly', _downstream_of: [B1] },
        { id: WE1, type: 'nmdc:ReadQcAnalysis', _downstream_of: [B1] },
      ].sort((a, b) => (a.id < b.id ? -1 : 1)),
    );
  });

  it('matches subclasses of the types asked for, and merges start ids', async () => {
    const res = await linked(`ids=${B1}&ids=${B2}&types=nmdc%3APlannedProcess&max_page_size=100`).expect(200);
    expect(res.body.resources).toEqual([
      { id: DG1, type: 'nmdc:NucleotideSequencing', _downstream_of: [B1] },
      { id: DG2, type: 'nmdc:NucleotideSequencing', _downstream_of: [B2] },
      { id: E, type: 'nmdc:Extraction', _downstream_of: [B2] },
      { id: WE3, type: 'nmdc:MetagenomeAnnotation', _downstream_of: [B1] },
      { id: WE2, type: 'nmdc:MetagenomeAssembly', _downstream_of: [B1] },
      { id: WE1, type: 'nmdc:ReadQcAnalysis', _downstream_of: [B1] },
    ]);
    const studies = await linked(`ids=${DO(5)}&ids=${DO(2)}&types=nmdc:Study`).expect(200);
    expect(studies.body.resources).toEqual([{ id: S, type: 'nmdc:Study', _upstream_of: [DO(2), DO(5)] }]);
  });

  it('gives a record both fields when it is downstream of one start id and upstream of another', async () => {
    const res = await linked(`ids=${B1}&ids=${DO(4)}&types=nmdc:ReadQcAnalysis`).expect(200);
    expect(res.body.resources).toEqual([
      { id: WE1, type: 'nmdc:ReadQcAnalysis', _downstream_of: [B1], _upstream_of: [DO(4)] },
    ]);
  });

  it('hydrates whole records when asked as the Python client asks (hydrate=True)', async () => {
    const res = await linked(`ids=${DG2}&types=nmdc:Biosample&hydrate=True&max_page_size=500`).expect(200);
    expect(res.body.resources).toEqual([{ ...records.biosample_set![1], _upstream_of: [DG2] }]);
  });

  it('pages with tokens that carry the ids and types on', async () => {
    const all = await linked(`ids=${B1}&ids=${B2}&max_page_size=0`).expect(200);
    expect(all.body.resources.length).toBeGreaterThan(10);
    const seen: string[] = [];
    let res = await linked(`ids=${B1}&ids=${B2}&max_page_size=4`).expect(200);
    for (;;) {
      expect(res.body.resources.length).toBeLessThanOrEqual(4);
      seen.push(...ids(res.body));
      if (!res.body.next_page_token) break;
      res = await linked(`ids=${B1}&ids=${B2}&page_token=${res.body.next_page_token}&max_page_size=4`).expect(
        200,
      );
    }
    expect(seen).toEqual(ids(all.body));
  });

  it('answers 404 for ids that are not records and for unknown types, naming them', async () => {
    const missing = await linked(`ids=${B1}&ids=nmdc:bsm-11-nope`).expect(404);
    expect(missing.body.detail).toBe("Some IDs not found: ['nmdc:bsm-11-nope'].");
    const type = await linked(`ids=${B1}&types=Biosample`).expect(404);
    expect(type.body.detail).toMatch(
      /^Some types not found: \['Biosample'\]\. You may need to prefix with `nmdc:`/,
    );
    expect(type.body.detail).toContain("'nmdc:Biosample'");
    const noIds = await linked('types=nmdc:Study').expect(422);
    expect(JSON.stringify(noIds.body.detail)).toMatch(/ids/);
    const token = await linked(`ids=${B1}&page_token=unknown`).expect(400);
    expect(token.body.detail).toBe('`page_token` not found');
  });

  it('is public: a bearer token, even a bad one, is ignored', async () => {
    const res = await linked(`ids=${S}&types=nmdc:Biosample`)
      .set('Authorization', 'Bearer nonsense')
      .expect(200);
    expect(ids(res.body)).toEqual([B1, B2]);
  });

  it('is never stale: a record written now is in the very next answer', async () => {
    const before = await linked(`ids=${WE3}&types=nmdc:DataObject`).expect(200);
    expect(ids(before.body)).toEqual([DO(1), DO(3), DO(5)]);
    await t.store.upsertMany('data_object_set', [
      { id: LATER, type: 'nmdc:DataObject', name: 'arrived later' },
    ]);
    const after = await linked(`ids=${WE3}&types=nmdc:DataObject`).expect(200);
    expect(after.body.resources).toEqual([
      { id: DO(1), type: 'nmdc:DataObject', _upstream_of: [WE3] },
      { id: DO(3), type: 'nmdc:DataObject', _upstream_of: [WE3] },
      { id: DO(5), type: 'nmdc:DataObject', _upstream_of: [WE3] },
      { id: LATER, type: 'nmdc:DataObject', _downstream_of: [WE3] },
    ]);
    await t.store.deleteMany('data_object_set', { id: LATER });
    const gone = await linked(`ids=${WE3}&types=nmdc:DataObject`).expect(200);
    expect(ids(gone.body)).toEqual([DO(1), DO(3), DO(5)]);
  });
});

describe('GET /data_objects/study/{study_id}', () => {
  it("lists each biosample's downstream data objects as whole records", async () => {
    const res = await request(t.app).get(`/data_objects/study/${S}`).expect(200);
    const byId = new Map(records.data_object_set!.map((d) => [d.id, d]));
    expect(res.body).toEqual([
      { biosample_id: B1, data_objects: [1, 3, 4, 5].map((n) => byId.get(DO(n))) },
      { biosample_id: B2, data_objects: [byId.get(DO(2))] },
    ]);
  });

  it('answers 404 "Study not found" for an unknown study', async () => {
    const res = await request(t.app).get('/data_objects/study/nmdc:sty-11-nope').expect(404);
    expect(res.body).toEqual({ detail: 'Study not found' });
  });
});

describe('GET /workflow_executions/{id}/related_resources', () => {
  it('gathers data objects, the pipeline, the biosamples and their studies', async () => {
    const res = await request(t.app).get(`/workflow_executions/${WE2}/related_resources`).expect(200);
    expect(res.body.workflow_execution_id).toBe(WE2);
    expect(res.body.workflow_execution).toEqual(records.workflow_execution_set![1]);
    const idsOf = (list: Doc[]) => list.map((d) => d.id).sort();
    expect(idsOf(res.body.data_objects)).toEqual([DO(1), DO(3), DO(4), DO(5)]);
    expect(idsOf(res.body.related_workflow_executions)).toEqual([WE3, WE1].sort());
    expect(res.body.biosamples).toEqual([records.biosample_set![0]]);
    expect(res.body.studies).toEqual(records.study_set);
  });

  it('walks up through processed samples to the biosample', async () => {
    await t.store.upsertMany('workflow_execution_set', [
      { id: 'nmdc:wfrqc-11-w4.1', type: 'nmdc:ReadQcAnalysis', was_informed_by: [DG2], has_input: [DO(2)] },
    ]);
    const res = await request(t.app)
      .get('/workflow_executions/nmdc:wfrqc-11-w4.1/related_resources')
      .expect(200);
    expect(res.body.biosamples.map((b: Doc) => b.id)).toEqual([B2]);
    expect(res.body.studies.map((s: Doc) => s.id)).toEqual([S]);
    expect(res.body.data_objects.map((d: Doc) => d.id)).toEqual([DO(2)]);
    await t.store.deleteMany('workflow_execution_set', { id: 'nmdc:wfrqc-11-w4.1' });
  });

  it('answers 404 "Workflow execution not found"', async () => {
    const res = await request(t.app)
      .get('/workflow_executions/nmdc:wfmgas-11-nope.1/related_resources')
      .expect(404);
    expect(res.body).toEqual({ detail: 'Workflow execution not found' });
  });
});
