/**
 * Port of the original's tests/test_ops/test_materialize_alldocs.py (v2.13.0), the test that reads
 * what the `alldocs` cache is for: the records linked to a biosample or a data object, of a type or
 * any of its subclasses. The original seeds records, materializes `alldocs` (a Dagster op) and runs
 * the aggregation behind `GET /nmdcschema/linked_instances` on it; here the provenance edges are
 * written with the records and the port asks that endpoint. (`test_materialize_alldocs`, the
 * Dagster op's own test, is listed in README.md.)
 */
import { describe, expect, it } from 'vitest';
import { withUpstreamServer, type UpstreamServer } from './support/harness.ts';

let server: UpstreamServer;
withUpstreamServer((started) => (server = started));

const STUDY = 'nmdc:sty-11-r2h77870';
const BIOSAMPLE = 'nmdc:bsm-11-6zd5nb38';
const DATA_OBJECT = 'nmdc:dobj-11-cpv4y420';
const SEQUENCING = 'nmdc:omprc-11-nmtj1g51';
const ANNOTATION = 'nmdc:wfmgan-11-fqq66x60.1';

const envTerm = (raw: string, id: string, name: string) => ({
  has_raw_value: raw,
  term: { id, name, type: 'nmdc:OntologyClass' },
  type: 'nmdc:ControlledIdentifiedTermValue',
});

/** The fixture `docs_1ea_bsm_sty_omprc_wfmgan_dobj`, by collection (`seeded_db`). */
const SEED: Record<string, Array<Record<string, unknown>>> = {
  study_set: [{ id: STUDY, type: 'nmdc:Study', study_category: 'research_study' }],
  biosample_set: [
    {
      id: BIOSAMPLE,
      type: 'nmdc:Biosample',
      associated_studies: [STUDY],
      env_broad_scale: envTerm('ENVO_00000446', 'ENVO:00000446', 'terrestrial biome'),
      env_local_scale: envTerm('ENVO_00005801', 'ENVO:00005801', 'rhizosphere'),
      env_medium: envTerm('ENVO_00001998', 'ENVO:00001998', 'soil'),
    },
  ],
  data_generation_set: [
    {
      id: SEQUENCING,
      type: 'nmdc:NucleotideSequencing',
      has_input: [BIOSAMPLE],
      associated_studies: [STUDY],
      analyte_category: 'metagenome',
    },
  ],
  workflow_execution_set: [
    {
      id: ANNOTATION,
      type: 'nmdc:MetagenomeAnnotation',
      has_input: [BIOSAMPLE],
      has_output: [DATA_OBJECT],
      was_informed_by: [SEQUENCING],
      started_at_time: '2023-03-24T02:02:59.479107+00:00',
      ended_at_time: '2023-03-24T02:02:59.479129+00:00',
      execution_resource: 'JGI',
      git_url: 'https://www.example.com',
    },
  ],
  data_object_set: [
    {
      id: DATA_OBJECT,
      type: 'nmdc:DataObject',
      name: 'Raw sequencer read data',
      description: 'Metagenome Raw Reads for nmdc:omprc-11-nmtj1g51',
    },
  ],
};

type Linked = { id: string; type: string; _upstream_of?: string[]; _downstream_of?: string[] };

/** `GET /nmdcschema/linked_instances` for one id, of some types: every page. */
async function linked(id: string, types: string[] = []): Promise<Linked[]> {
  const found: Linked[] = [];
  let token: string | undefined;
  do {
    const query = [`ids=${id}`, ...types.map((t) => `types=${t}`), ...(token ? [`page_token=${token}`] : [])];
    const res = await server.userClient().request('GET', `/nmdcschema/linked_instances?${query.join('&')}`);
    expect(res.status).toBe(200);
    found.push(...(res.json.resources as Linked[]));
    token = res.json.next_page_token ?? undefined;
  } while (token);
  return found;
}

/** Those linked downstream of (`_downstream_of` naming) the id, or upstream of it. */
const downstreamOf = (id: string, of: Linked[]) => of.filter((r) => r._downstream_of?.includes(id));
const upstreamOf = (id: string, of: Linked[]) => of.filter((r) => r._upstream_of?.includes(id));

describe('tests/test_ops/test_materialize_alldocs.py', () => {
  it('test_materialize_alldocs.py::test_alldocs_linked_instances_with_type_and_ancestors', async () => {
    for (const [collection, docs] of Object.entries(SEED)) await server.add(collection, docs);
    for (const [collection, docs] of Object.entries(SEED))
      expect(await server.count(collection, { id: { $in: docs.map((d) => d.id as string) } })).toBe(
        docs.length,
      );

    // The workflow execution is downstream of the biosample, found by its class and by an
    // ancestor class (the original's `_type_and_ancestors`).
    for (const type of ['nmdc:MetagenomeAnnotation', 'nmdc:WorkflowExecution']) {
      const executions = downstreamOf(BIOSAMPLE, await linked(BIOSAMPLE, [type]));
      expect(
        executions.map((r) => ({ id: r.id, type: r.type })),
        type,
      ).toEqual([{ id: ANNOTATION, type: 'nmdc:MetagenomeAnnotation' }]);
    }
    // A class both processes descend from: the sequencing run too.
    const processes = downstreamOf(BIOSAMPLE, await linked(BIOSAMPLE, ['nmdc:PlannedProcess']));
    expect(new Set(processes.map((r) => r.id))).toEqual(new Set([ANNOTATION, SEQUENCING]));

    // The data objects linked downstream of the biosample.
    const dataObjects = downstreamOf(BIOSAMPLE, await linked(BIOSAMPLE, ['nmdc:DataObject']));
    expect(dataObjects.map((r) => r.id)).toContain(DATA_OBJECT);
    expect(dataObjects.every((r) => r.type === 'nmdc:DataObject')).toBe(true);

    // And the reverse: the biosamples linked upstream of the data object, exactly one.
    const biosamples = upstreamOf(DATA_OBJECT, await linked(DATA_OBJECT, ['nmdc:Biosample']));
    expect(biosamples).toHaveLength(1);
    expect(biosamples[0]!.id).toBe(BIOSAMPLE);
    expect(biosamples[0]!.type).toBe('nmdc:Biosample');
    // Through an ancestor of Biosample, the same biosample (beside other material entities: none).
    const materials = upstreamOf(DATA_OBJECT, await linked(DATA_OBJECT, ['nmdc:MaterialEntity']));
    expect(materials.map((r) => r.id)).toEqual([BIOSAMPLE]);
  });
});
