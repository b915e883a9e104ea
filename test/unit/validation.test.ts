/**
 * MetadataValidator: the three passes of `POST /metadata/json:validate` (collection names, JSON
 * Schema of each record's class, referential integrity against the payload and the store), the
 * messages' texts and places, and the answer shapes; the cases follow the original service's
 * tests of `validate_json`.
 */
import { describe, expect, it } from 'vitest';
import {
  MetadataValidator,
  pythonText,
  validationAnswer,
  type ValidationOutcome,
} from '../../src/validation/index.ts';
import type { Doc, DocumentStore, Filter } from '../../src/store/port.ts';
import { LARGE_RECORD_VALUES, MAX_RECORD_VALUES } from '../../src/validation/schema-violations.ts';

/** A store holding `records` by collection, answering the validator's id lookups and counting them. */
function storeWith(records: Record<string, string[]> = {}) {
  const queries: Array<{ collection: string; ids: string[] }> = [];
  const store: Pick<DocumentStore, 'find'> = {
    find: async (collection: string, filter: Filter) => {
      const ids = (filter as { id: { $in: string[] } }).id.$in;
      queries.push({ collection, ids });
      const held = new Set(records[collection] ?? []);
      return ids.filter((id) => held.has(id)).map((id) => ({ id }) as Doc);
    },
  };
  return { store: store as DocumentStore, queries };
}

const study = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  type: 'nmdc:Study',
  study_category: 'research_study',
  ...extra,
});

const term = (id: string) => ({
  term: { id, type: 'nmdc:OntologyClass' },
  type: 'nmdc:ControlledIdentifiedTermValue',
});

const biosample = (id: string, studyId: string, extra: Record<string, unknown> = {}) => ({
  id,
  type: 'nmdc:Biosample',
  name: `sample ${id}`,
  associated_studies: [studyId],
  env_broad_scale: term('ENVO:00000446'),
  env_local_scale: term('ENVO:00000114'),
  env_medium: term('ENVO:00001998'),
  ...extra,
});

const messagesOf = (outcome: ValidationOutcome) => (outcome.valid ? {} : outcome.detail);

describe('MetadataValidator', () => {
  it('accepts an empty payload, empty collections and @type Database', async () => {
    const v = new MetadataValidator(storeWith().store);
    expect(await v.validateDatabase({})).toEqual({ valid: true });
    expect(await v.validateDatabase({ study_set: [], biosample_set: [] })).toEqual({ valid: true });
    expect(await v.validateDatabase({ study_set: [], '@type': 'Database' })).toEqual({ valid: true });
    expect(await v.validateDatabase({ study_set: [], '@type': 'nmdc:Database' })).toEqual({ valid: true });
    expect(await v.validateDatabase({ study_set: null })).toEqual({ valid: true });
  });

  it('names an unknown collection, and an @type other than Database, as the original does', async () => {
    const v = new MetadataValidator(storeWith().store);
    const outcome = await v.validateDatabase({ studi_set: [], study_set: [], '@type': 'Biosample' });
    expect(outcome).toEqual({
      valid: false,
      detail: {
        studi_set: ["'studi_set' is not a known schema collection name"],
        study_set: [],
        '@type': ["'@type' is not a known schema collection name"],
      },
    });
  });

  it('checks each record against its class: message names the rule, the JSON pointer and the id', async () => {
    const v = new MetadataValidator(storeWith().store);
    const bad = biosample('nmdc:bsm-11-aaaa0001', 'nmdc:sty-11-aaaa0001', {
      lat_lon: { latitude: 'north', type: 'nmdc:GeolocationValue' },
      env_medium: 'soil',
      depth: { has_numeric_value: 3, has_unit: 'cm', type: 'nmdc:QuantityValue' },
      colour: 'brown',
    });
    const { name: _name, ...nameless } = biosample('nmdc:bsm-11-aaaa0002', 'nmdc:sty-11-aaaa0001');
    const outcome = await v.validateDatabase({ biosample_set: [bad, nameless] });
    expect(outcome).toEqual({
      valid: false,
      detail: {
        biosample_set: [
          "Additional properties are not allowed ('colour' was unexpected) in /biosample_set/0 (id 'nmdc:bsm-11-aaaa0001')",
          "'soil' is not of type 'object' in /biosample_set/0/env_medium (id 'nmdc:bsm-11-aaaa0001')",
          // The slot also has a pattern for the raw text `name [PREFIX:id]`, which applies to strings.
          "'soil' does not match '^([^\\\\s-]{1,2}|[^\\\\s-]+.+[^\\\\s-]+) \\\\[[a-zA-Z]{2,}:[a-zA-Z0-9]\\\\d+\\\\]$' in /biosample_set/0/env_medium (id 'nmdc:bsm-11-aaaa0001')",
          "'longitude' is a required property in /biosample_set/0/lat_lon (id 'nmdc:bsm-11-aaaa0001')",
          "'north' is not of type 'number' in /biosample_set/0/lat_lon/latitude (id 'nmdc:bsm-11-aaaa0001')",
          "QuantityValue at /biosample_set/0/depth has unit 'cm' which is not allowed for slot 'depth' (allowed: m) (id 'nmdc:bsm-11-aaaa0001')",
          "'name' is a required property in /biosample_set/1 (id 'nmdc:bsm-11-aaaa0002')",
        ],
      },
    });
  });

  it('describes a record of more than 10,000 values (checked on the validation thread) as it does a small one', async () => {
    const v = new MetadataValidator(storeWith().store);
    const bad = (ids: number) =>
      biosample('nmdc:bsm-11-aaaa0001', 'nmdc:sty-11-aaaa0001', {
        lat_lon: { latitude: 'north', type: 'nmdc:GeolocationValue' },
        env_medium: 'soil',
        colour: 'brown',
        alternative_identifiers: [...Array.from({ length: ids }, (_, i) => `ex:${i}`), 'not an identifier'],
      });
    const small = await v.validateDatabase({ biosample_set: [bad(10)] });
    const large = await v.validateDatabase({ biosample_set: [bad(LARGE_RECORD_VALUES)] });
    const messages = (o: ValidationOutcome) => (o.valid ? [] : o.detail.biosample_set!);
    expect(messages(small)).toHaveLength(6);
    expect(messages(large)).toEqual(
      messages(small).map((m) =>
        m.replace('alternative_identifiers/10 ', `alternative_identifiers/${LARGE_RECORD_VALUES} `),
      ),
    );
    expect(
      messages(large).find((m) => m.startsWith("'not an identifier' does not match '^[a-zA-Z0-9]")),
    ).toMatch(
      new RegExp(
        ` in /biosample_set/0/alternative_identifiers/${LARGE_RECORD_VALUES} \\(id 'nmdc:bsm-11-aaaa0001'\\)$`,
      ),
    );
  });

  it('refuses a record of more than 6,000,000 values before checking it against the schema', async () => {
    const v = new MetadataValidator(storeWith().store);
    // The record, its three members and the list's items: one value more than allowed. Its
    // schema check would keep an error per null (about 1.6 GB).
    const record = {
      id: 'nmdc:bsm-11-aaaa0001',
      type: 'nmdc:Biosample',
      alternative_identifiers: Array<null>(MAX_RECORD_VALUES - 3).fill(null),
    };
    expect(await v.validateDatabase({ biosample_set: [record] })).toEqual({
      valid: false,
      detail: {
        biosample_set: [
          "The record at /biosample_set/0 holds 6000001 values, more than the 6000000 a record may (MongoDB's 16 MiB document limit)",
        ],
      },
    });
  });

  it("refuses an id that does not follow its class's pattern (the original's `nmdc:OTHER-00-000001` case)", async () => {
    const v = new MetadataValidator(storeWith().store);
    const outcome = await v.validateDatabase({ study_set: [study('nmdc:OTHER-00-000001')] });
    expect(messagesOf(outcome)).toEqual({
      study_set: [
        "'nmdc:OTHER-00-000001' does not match '^(nmdc):sty-([0-9][a-z]{0,6}[0-9])-([A-Za-z0-9]{1,})$' in /study_set/0/id",
      ],
    });
  });

  it('validates a record of a polymorphic collection against the class its type names', async () => {
    const v = new MetadataValidator(storeWith().store);
    const outcome = await v.validateDatabase({
      workflow_execution_set: [
        { id: 'nmdc:wfmgas-11-aaaa0001.1', type: 'nmdc:MetagenomeAssembly' },
        { id: 'nmdc:wfrqc-11-aaaa0001.1', type: 'nmdc:WorkflowExecution' },
        { id: 'nmdc:wfrqc-11-aaaa0002.1' },
        'nmdc:wfrqc-11-aaaa0003.1',
      ],
    });
    const messages = messagesOf(outcome).workflow_execution_set!;
    // The assembly is checked as an assembly: its own required slots, not every class's.
    const assembly = messages.filter((m) => m.includes('/workflow_execution_set/0'));
    expect(assembly).toContain(
      "'was_informed_by' is a required property in /workflow_execution_set/0 (id 'nmdc:wfmgas-11-aaaa0001.1')",
    );
    expect(assembly.every((m) => m.endsWith("(id 'nmdc:wfmgas-11-aaaa0001.1')"))).toBe(true);
    expect(messages.find((m) => m.includes('/workflow_execution_set/1'))).toMatch(
      /^'nmdc:WorkflowExecution' is not one of \['nmdc:MetagenomeAssembly', .*\] \(the classes workflow_execution_set may hold\) in \/workflow_execution_set\/1\/type/,
    );
    expect(messages.find((m) => m.includes('/workflow_execution_set/2'))).toMatch(
      /^'type' is a required property \(one of \['nmdc:MetagenomeAssembly', .*\]\) in \/workflow_execution_set\/2 /,
    );
    expect(messages).toContain(
      "'nmdc:wfrqc-11-aaaa0003.1' is not of type 'object' in /workflow_execution_set/3",
    );
  });

  it('picks the branch a term value means by its type (OntologyClass or NcbiTaxon)', async () => {
    const v = new MetadataValidator(storeWith().store);
    const outcome = await v.validateDatabase({
      biosample_set: [
        biosample('nmdc:bsm-11-aaaa0001', 'nmdc:sty-11-aaaa0001', {
          env_medium: {
            term: { id: 'ENVO:1', type: 'nmdc:NcbiTaxon' },
            type: 'nmdc:ControlledIdentifiedTermValue',
          },
        }),
      ],
    });
    expect(messagesOf(outcome).biosample_set).toEqual([
      "'ENVO:1' does not match '^NCBITaxon:\\\\d+$' in /biosample_set/0/env_medium/term/id (id 'nmdc:bsm-11-aaaa0001')",
    ]);
  });

  it('says a collection that is not a list is not one, and repeats of an id in a collection', async () => {
    const v = new MetadataValidator(storeWith().store);
    const site = {
      id: 'nmdc:frsite-11-s2dqk408',
      type: 'nmdc:FieldResearchSite',
      name: 'BESC-470-CL2_38_23',
    };
    const outcome = await v.validateDatabase({ field_research_site_set: [site, site], study_set: 'x' });
    expect(messagesOf(outcome)).toEqual({
      field_research_site_set: [
        "Duplicate id 'nmdc:frsite-11-s2dqk408' in /field_research_site_set/1/id: the record at /field_research_site_set/0 has it too (ids are unique in a collection)",
      ],
      study_set: ["'x' is not of type 'array', 'null' in /study_set"],
    });
  });

  it('reports each broken reference with the original text and the place, after the schema passes only', async () => {
    const { store, queries } = storeWith();
    const v = new MetadataValidator(store);
    const payload = {
      study_set: [study('nmdc:sty-00-000001', { part_of: ['nmdc:sty-00-000008', 'nmdc:sty-00-000009'] })],
    };
    expect(messagesOf(await v.validateDatabase(payload))).toEqual({
      study_set: [
        "Document 'nmdc:sty-00-000001' in collection 'study_set' has a field 'part_of' that references a document having id 'nmdc:sty-00-000008', but the latter document does not exist in any of the collections the NMDC Schema says it can exist in (study_set); at /study_set/0/part_of/0",
        "Document 'nmdc:sty-00-000001' in collection 'study_set' has a field 'part_of' that references a document having id 'nmdc:sty-00-000009', but the latter document does not exist in any of the collections the NMDC Schema says it can exist in (study_set); at /study_set/0/part_of/1",
      ],
    });
    // One query for both ids.
    expect(queries).toEqual([{ collection: 'study_set', ids: ['nmdc:sty-00-000008', 'nmdc:sty-00-000009'] }]);

    // A schema error stops before the reference pass (one message, not two; no query).
    queries.length = 0;
    const defiant = { study_set: [study('nmdc:OTHER-00-000001', { part_of: ['nmdc:sty-00-000009'] })] };
    expect(messagesOf(await v.validateDatabase(defiant)).study_set).toHaveLength(1);
    expect(queries).toEqual([]);
  });

  it('finds referenced records in the same payload, in any collection order, and in the store', async () => {
    const { store, queries } = storeWith({ study_set: ['nmdc:sty-00-000001'] });
    const v = new MetadataValidator(store);
    // The biosample comes first and references a study later in the payload.
    const payload = {
      biosample_set: [biosample('nmdc:bsm-00-000001', 'nmdc:sty-00-000002')],
      study_set: [study('nmdc:sty-00-000002', { part_of: ['nmdc:sty-00-000001'] })],
    };
    expect(await v.validateDatabase(payload)).toEqual({ valid: true });
    expect(queries).toEqual([{ collection: 'study_set', ids: ['nmdc:sty-00-000001'] }]);
  });

  it('requires a referenced record in a collection the slot allows, not just anywhere', async () => {
    // The id exists, but in biosample_set: a study's part_of must name a study.
    const { store } = storeWith({ biosample_set: ['nmdc:sty-00-000007'] });
    const v = new MetadataValidator(store);
    const outcome = await v.validateDatabase({
      study_set: [study('nmdc:sty-00-000001', { part_of: ['nmdc:sty-00-000007'] })],
    });
    expect(messagesOf(outcome).study_set).toEqual([expect.stringContaining("id 'nmdc:sty-00-000007'")]);
  });

  it('looks ids up in batches, one query per collection and batch', async () => {
    const { store, queries } = storeWith();
    const v = new MetadataValidator(store);
    const studies = Array.from({ length: 1200 }, (_, i) => `nmdc:sty-11-${String(i).padStart(6, '0')}`);
    const samples = studies.map((s, i) => biosample(`nmdc:bsm-11-${String(i).padStart(6, '0')}`, s));
    const outcome = await v.validateDatabase({ biosample_set: samples });
    // 1,000 listed (PROBLEMS_LISTED), the other 200 counted.
    expect(messagesOf(outcome).biosample_set).toHaveLength(1001);
    expect(messagesOf(outcome).biosample_set.at(-1)).toBe(
      'and 200 more references of /biosample_set that resolve nowhere (not listed)',
    );
    expect(queries.map((q) => [q.collection, q.ids.length])).toEqual([
      ['study_set', 500],
      ['study_set', 500],
      ['study_set', 200],
    ]);
  });

  it('answers in the shapes of the original', () => {
    expect(validationAnswer({ valid: true })).toEqual({ result: 'All Okay!' });
    expect(validationAnswer({ valid: false, detail: { study_set: ['x'] } })).toEqual({
      result: 'errors',
      detail: { study_set: ['x'] },
    });
  });

  it('keeps a payload key named __proto__ as a key', async () => {
    const v = new MetadataValidator(storeWith().store);
    const outcome = await v.validateDatabase(JSON.parse('{"__proto__": [], "study_set": []}'));
    expect(outcome.valid).toBe(false);
    expect(Object.entries(outcome.valid ? {} : outcome.detail)).toEqual([
      ['__proto__', ["'__proto__' is not a known schema collection name"]],
      ['study_set', []],
    ]);
  });

  it('never throws for bad input', async () => {
    const v = new MetadataValidator(storeWith().store);
    for (const payload of [
      null,
      [],
      'x',
      3,
      { biosample_set: [null, [], 1, 'a', { id: 5 }] },
      { study_set: {} },
    ])
      expect((await v.validateDatabase(payload as Record<string, unknown>)).valid).toBe(false);
  });
});

describe('pythonText', () => {
  it("spells a validation answer as Python's repr of the equal dict, as the original's 422 details do", () => {
    expect(
      pythonText({
        result: 'errors',
        detail: { study_set: ["Document 'nmdc:sty-00-000002' has a field 'part_of'"], biosample_set: [] },
      }),
    ).toBe(
      `{'result': 'errors', 'detail': {'study_set': ["Document 'nmdc:sty-00-000002' has a field 'part_of'"], 'biosample_set': []}}`,
    );
  });

  it("quotes and escapes strings as Python's repr does", () => {
    expect(pythonText('plain')).toBe("'plain'");
    expect(pythonText(`both ' and "`)).toBe(`'both \\' and "'`);
    expect(pythonText('only "double"')).toBe(`'only "double"'`);
    expect(pythonText('back\\slash\nnew\ttab\u0001')).toBe("'back\\\\slash\\nnew\\ttab\\x01'");
    expect(pythonText('ünï')).toBe("'ünï'");
    expect(pythonText([1, 2.5, true, false, null])).toBe('[1, 2.5, True, False, None]');
  });
});
