/**
 * `update` and `delete` through `POST /queries:run`, tried as a careless user and as the original
 * 2.13.0's tests try them: statements checked as MongoDB checks them (no whole-collection delete
 * from a missing `q`), updates validated against the schema on copies, references that would be
 * left dangling refused unless `allow_broken_refs=true`, all or nothing. Every refusal is checked
 * for its detail and for a store left exactly as it was.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { setBcryptCost } from '../../src/accounts/index.ts';
import { RecordWriter } from '../../search/writer.ts';
import type { Doc } from '../../src/store/port.ts';
import type { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';
import { createTestApp, passwordToken, type TestApp } from '../support/server.ts';
import { updateStatementsOf } from '../../src/metadata/write-statements.ts';
import { Conflict } from '../../src/errors.ts';
import { commandsRacedBy } from '../support/racing-writes.ts';

setBcryptCost(4);

let t: TestApp;
let admin: string;
let writer: RecordWriter;

const term = (id: string) => ({
  type: 'nmdc:ControlledIdentifiedTermValue',
  term: { id, type: 'nmdc:OntologyClass' },
});
const studyDoc = (id: string, extra: Record<string, unknown> = {}): Doc => ({
  id,
  type: 'nmdc:Study',
  name: `Study ${id}`,
  study_category: 'research_study',
  ...extra,
});
const biosampleDoc = (id: string, study: string, extra: Record<string, unknown> = {}): Doc => ({
  id,
  type: 'nmdc:Biosample',
  name: `Biosample ${id}`,
  associated_studies: [study],
  env_broad_scale: term('ENVO:00000446'),
  env_local_scale: term('ENVO:00000114'),
  env_medium: term('ENVO:00001998'),
  ...extra,
});

/**
 * The graph of the original's `fake_studies_and_biosamples_in_mdb`: study B is part of study A,
 * biosample A belongs to study A, biosample B to study B. Fresh ids per call.
 */
async function seedGraph() {
  const tag = randomBytes(3).toString('hex');
  const studyA = studyDoc(`nmdc:sty-11-a${tag}`);
  const studyB = studyDoc(`nmdc:sty-11-b${tag}`, { part_of: [studyA.id] });
  const bsmA = biosampleDoc(`nmdc:bsm-11-a${tag}`, studyA.id);
  const bsmB = biosampleDoc(`nmdc:bsm-11-b${tag}`, studyB.id);
  await writer.upsert('study_set', [studyA, studyB]);
  await writer.upsert('biosample_set', [bsmA, bsmB]);
  return { studyA, studyB, bsmA, bsmB };
}

/** Every record of the collections a test touches, to compare before and after a refusal. */
async function snapshot() {
  const out: Record<string, Doc[]> = {};
  for (const c of ['study_set', 'biosample_set', 'workflow_execution_set', 'functional_annotation_agg'])
    out[c] = await t.store.find(c, {});
  return out;
}

const run = (body: unknown, query = '') =>
  request(t.app)
    .post(`/queries:run${query}`)
    .set('Authorization', `Bearer ${admin}`)
    .send(body as object);

/** A refusal: its status, a detail containing each of `says`, and nothing written. */
async function refused(body: unknown, status: number, ...says: string[]) {
  const before = await snapshot();
  const res = await run(body);
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(typeof res.body.detail).toBe('string');
  for (const text of says) expect(res.body.detail).toContain(text);
  expect(await snapshot()).toEqual(before);
  return res.body as {
    detail: string;
    broken_references?: unknown[];
    validation_errors?: Record<string, string[]>;
  };
}

beforeAll(async () => {
  t = await createTestApp({ ADMIN_USERNAME: 'writes-admin', ADMIN_PASSWORD: 'writes admin passphrase 42' });
  admin = await passwordToken(t.app, 'writes-admin', 'writes admin passphrase 42');
  writer = new RecordWriter(t.store, [t.searchIndex, t.edgeIndex]);
});
afterAll(async () => t?.close());

describe('delete statements are checked as MongoDB checks them (no delete of a whole collection)', () => {
  it('refuses a statement without q (the request that emptied biosample_set) with a 422 naming deletes[0].q', async () => {
    const { bsmA } = await seedGraph();
    const count = (await t.store.find('biosample_set', {})).length;
    const body = await refused(
      { delete: 'biosample_set', deletes: [{ id: bsmA.id }] },
      422,
      'deletes[0].q is missing',
      '(id is not a field of the statement)',
    );
    expect(body.detail).toBe(
      'deletes[0].q is missing: every delete statement needs its filter q ({} matches every record), as in MongoDB (id is not a field of the statement)',
    );
    expect((await t.store.find('biosample_set', {})).length).toBe(count);
  });

  it.each([
    [
      { deletes: [{ q: { id: 'nmdc:bsm-11-x' } }] },
      'deletes[0].limit is missing: every delete statement needs limit',
    ],
    [
      { deletes: [{ q: { id: 'nmdc:bsm-11-x' }, limit: 2 }] },
      'deletes[0].limit must be 0 (every match) or 1 (the first match), not 2',
    ],
    // The contract's shapes are checked first (body.<path> names the field), then MongoDB's rules.
    [{ deletes: [{ q: 'nmdc:bsm-11-x', limit: 1 }] }, 'body.deletes.0.q must be object'],
    [
      { deletes: [{ q: {}, limit: 0, collation: { locale: 'fr' } }] },
      'deletes[0].collation is not supported',
    ],
    [{ deletes: [{ q: { name: { $where: 'sleep(1)' } }, limit: 0 }] }, 'deletes[0].q: '],
    [{ deletes: [] }, 'deletes must hold between 1 and 100000 statements, not 0'],
    [{ deletes: { q: {}, limit: 0 } }, 'body.deletes must be array'],
    [{}, 'deletes is missing'],
    [{ deletes: [{ q: {}, limit: 0 }, { limit: 0 }] }, 'deletes[1].q is missing'],
    [{ deletes: [7] }, 'body.deletes.0 must be object'],
  ])('refuses %j with a 422 naming the field, deleting nothing', async (statements, says) => {
    await seedGraph();
    await refused({ delete: 'biosample_set', ...statements }, 422, says);
  });

  it("tells a body the contract refuses the rule it broke, not every other command's key", async () => {
    const res = await run({ delete: 'biosample_set', deletes: [{ q: 'nmdc:bsm-11-x', limit: 1 }] });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ detail: 'body.deletes.0.q must be object' });
    // A body that is no command at all hears of every command.
    const none = await run({ filter: {} });
    expect(none.status).toBe(422);
    expect(none.body.detail).toMatch(/^Unknown command: the body must name one of the commands /);
    for (const command of ['find', 'aggregate', 'update', 'delete', 'getMore'])
      expect(none.body.detail).toContain(command);
  });

  it('deletes with limit 1 the first match in id order, with limit 0 every match', async () => {
    const { bsmA, bsmB } = await seedGraph();
    const tag = bsmA.id.slice(-6);
    const one = await run({
      delete: 'biosample_set',
      deletes: [{ q: { id: { $in: [bsmA.id, bsmB.id] } }, limit: 1 }],
    });
    expect(one.status, JSON.stringify(one.body)).toBe(200);
    expect(one.body).toEqual({ ok: 1, n: 1 });
    expect(await t.store.getById('biosample_set', bsmA.id)).toBeNull();
    expect(await t.store.getById('biosample_set', bsmB.id)).not.toBeNull();
    const all = await run({
      delete: 'biosample_set',
      deletes: [{ q: { id: { $regex: tag.slice(1) } }, limit: 0 }],
    });
    expect(all.body).toEqual({ ok: 1, n: 1 });
    expect(await t.store.getById('biosample_set', bsmB.id)).toBeNull();
  });
});

describe('updates are checked, applied to copies and validated against the schema before anything is written', () => {
  it('refuses a $set that breaks the schema (a number for name, a slot the schema lacks), keeping the record', async () => {
    const { bsmA } = await seedGraph();
    const body = await refused(
      {
        update: 'biosample_set',
        updates: [{ q: { id: bsmA.id }, u: { $set: { name: 12345, not_a_slot: true } } }],
      },
      422,
      'Schema document(s) would be invalid after proposed update: ',
      'not_a_slot',
    );
    const messages = body.validation_errors!.biosample_set!;
    expect(messages.some((m) => m.includes('12345') && m.includes('/name'))).toBe(true);
    expect(messages.some((m) => m.includes('not_a_slot'))).toBe(true);
    expect(messages.every((m) => m.includes(bsmA.id))).toBe(true);
    expect(await t.store.getById('biosample_set', bsmA.id)).toEqual(bsmA);
  });

  it('refuses {"$unset": "notes"} with a 422 naming updates[0].u.$unset', async () => {
    const { bsmA } = await seedGraph();
    const body = await refused(
      { update: 'biosample_set', updates: [{ q: { id: bsmA.id }, u: { $unset: 'notes' } }] },
      422,
      'updates[0].u.$unset must be an object of field: value, not a string',
    );
    expect(body.detail).toContain('{"$unset": {"<field>": ...}}');
  });

  it.each([
    [{ u: { $set: { name: 'x' } } }, 'updates[0].q is missing: every update statement needs its filter q'],
    [{ q: {} }, 'updates[0].u is missing: every update statement needs u'],
    [{ q: {}, u: 'name' }, 'body.updates.0.u must be object'],
    [{ q: {}, u: [{ $set: { name: 'x' } }] }, 'body.updates.0.u must be object'],
    [{ q: {}, u: { $set: 5 } }, 'updates[0].u.$set must be an object of field: value, not a number'],
    [{ q: {}, u: { $foo: { name: 'x' } } }, 'updates[0].u.$foo is not an update operator'],
    [
      { q: {}, u: { $inc: { 'depth.has_numeric_value': 'ten' } } },
      'updates[0].u.$inc.depth.has_numeric_value must be a number, not "ten"',
    ],
    [{ q: {}, u: { $mul: { n: null } } }, 'updates[0].u.$mul.n must be a number, not null'],
    [{ q: {}, u: { $rename: { name: 5 } } }, 'updates[0].u.$rename.name must be a string'],
    [
      { q: {}, u: { $pop: { alternative_identifiers: 2 } } },
      'updates[0].u.$pop.alternative_identifiers must be 1',
    ],
    [
      { q: {}, u: { $pullAll: { alternative_identifiers: 'a' } } },
      'updates[0].u.$pullAll.alternative_identifiers must be a list',
    ],
    [{ q: {}, u: { $push: { alternative_identifiers: { $each: 'a' } } } }, 'needs $each, a list'],
    [{ q: {}, u: { $currentDate: { name: 'now' } } }, 'updates[0].u.$currentDate.name must be true'],
    [
      { q: {}, u: { $set: { name: 'a' }, $unset: { name: '' } } },
      "updating the path 'name' would create a conflict at 'name'",
    ],
    [
      { q: {}, u: { $set: { lat_lon: {}, 'lat_lon.latitude': 1 } } },
      "updating the path 'lat_lon.latitude' would create a conflict at 'lat_lon'",
    ],
    [
      { q: {}, u: { $set: { name: 'a' }, description: 'b' } },
      'updates[0].u mixes update operators ($set) and fields (description)',
    ],
    [{ q: {}, u: { $set: { '': 1 } } }, 'updates[0].u.$set: Field "" has an empty path segment'],
    [{ q: {}, u: { $set: { $where: 1 } } }, 'starts a name with $'],
    [{ q: {}, u: { $set: { '__proto__.x': 1 } } }, 'is not an attribute name'],
    [
      { q: {}, u: { name: 'x' }, multi: true },
      'updates[0].u is a replacement record, which replaces one record',
    ],
    [{ q: {}, u: { $set: { name: 'x' } }, multi: 'yes' }, 'body.updates.0.multi must be boolean'],
    [{ q: {}, u: { $set: { name: 'x' } }, upsert: 'sometimes' }, 'body.updates.0.upsert must be boolean'],
    [
      { q: {}, u: { $set: { 'a.$[e]': 1 } }, arrayFilters: [{ e: { $regex: '^(a+)+$' } }] },
      'updates[0].arrayFilters[0]: $regex is not supported here',
    ],
    [
      { q: {}, u: { $pull: { websites: { $regex: '^(a+)+$' } } } },
      'updates[0].u.$pull.websites: $regex is not supported here',
    ],
  ])('refuses the statement %j with a 422 naming the place, writing nothing', async (statement, says) => {
    await seedGraph();
    await refused({ update: 'biosample_set', updates: [statement] }, 422, says);
  });

  it("refuses what MongoDB refuses of the record's values: $inc of text, $push onto a non-list, a field inside text", async () => {
    const { bsmA } = await seedGraph();
    for (const [u, says] of [
      [
        { $inc: { name: 1 } },
        "updates[0].u.$inc.name: cannot apply $inc to the record's value, which is string, not a number",
      ],
      [
        { $push: { name: 'x' } },
        "updates[0].u.$push.name: the record's value must be a list for $push, but it is string",
      ],
      [
        { $set: { 'name.first': 'x' } },
        "updates[0].u.$set.name.first: cannot create the field 'first' inside name, which holds string",
      ],
    ] as const)
      await refused({ update: 'biosample_set', updates: [{ q: { id: bsmA.id }, u }] }, 422, says);
  });

  it('ignores fields a statement does not have, as the original does (nmdc_automation sends limit in updates)', async () => {
    const { bsmA, bsmB } = await seedGraph();
    const res = await run({
      update: 'biosample_set',
      updates: [
        { q: { id: { $in: [bsmA.id, bsmB.id] } }, u: { $set: { description: 'one only' } }, limit: 1 },
      ],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ ok: 1, n: 1, nModified: 1 });
    expect((await t.store.getById('biosample_set', bsmB.id))!.description).toBeUndefined();
    const del = await run({
      delete: 'biosample_set',
      deletes: [{ q: { id: bsmB.id }, limit: 1, comment: 'typo' }],
    });
    expect(del.body).toEqual({ ok: 1, n: 1 });
  });

  it('refuses an update that takes the id away or makes it no string, by the schema', async () => {
    const { bsmA } = await seedGraph();
    for (const u of [{ $unset: { id: '' } }, { $rename: { id: 'former_id' } }, { $set: { id: 5 } }])
      await refused(
        { update: 'biosample_set', updates: [{ q: { id: bsmA.id }, u }] },
        422,
        'Schema document(s) would be invalid after proposed update',
      );
    expect(await t.store.getById('biosample_set', bsmA.id)).toEqual(bsmA);
  });

  it('writes all statements or none: a valid first statement is not applied when the second breaks the schema', async () => {
    const { bsmA, bsmB } = await seedGraph();
    await refused(
      {
        update: 'biosample_set',
        updates: [
          { q: { id: bsmA.id }, u: { $set: { name: 'renamed first' } } },
          { q: { id: bsmB.id }, u: { $unset: { env_medium: '' } } },
        ],
      },
      422,
      'Schema document(s) would be invalid after proposed update',
      'env_medium',
    );
    expect((await t.store.getById('biosample_set', bsmA.id))!.name).toBe(bsmA.name);
  });

  it('refuses a positional $ placed by a $regex, before any backtracking engine meets it', async () => {
    const { studyA } = await seedGraph();
    // On a backtracking engine `^(a+)+$` tries 2^40 ways to split the first title before failing.
    const hostile = `${'a'.repeat(40)}!`;
    await writer.upsert('study_set', [{ ...studyA, alternative_titles: [hostile, 'aaa'] }]);
    await refused(
      {
        update: 'study_set',
        updates: [
          {
            q: { id: studyA.id, alternative_titles: { $regex: '^(a+)+$' } },
            u: { $set: { 'alternative_titles.$': 'renamed' } },
          },
        ],
      },
      422,
      'updates[0].q (with a positional $ update): $regex is not supported here',
    );
    expect((await t.store.getById('study_set', studyA.id))!.alternative_titles).toEqual([hostile, 'aaa']);
  });

  it('applies statements in order, a later one seeing an earlier one, and answers as MongoDB (n, nModified)', async () => {
    const { bsmA, bsmB } = await seedGraph();
    const res = await run({
      update: 'biosample_set',
      updates: [
        { q: { id: { $in: [bsmA.id, bsmB.id] } }, u: { $set: { description: 'first pass' } }, multi: true },
        {
          q: { description: 'first pass' },
          u: { $set: { depth: { has_numeric_value: 3, type: 'nmdc:QuantityValue', has_unit: 'm' } } },
          multi: true,
        },
        { q: { id: bsmA.id }, u: { $set: { name: bsmA.name } } },
      ],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ ok: 1, n: 5, nModified: 4 });
    for (const id of [bsmA.id, bsmB.id])
      expect(await t.store.getById('biosample_set', id)).toMatchObject({
        description: 'first pass',
        depth: { has_numeric_value: 3 },
      });
    // The search index followed.
    const found = await run({ count: 'biosample_set', query: { description: { $regex: '^first pass$' } } });
    expect(found.body.n).toBeGreaterThanOrEqual(2);
  });

  it('keeps counts exact while updates and deletes move records in and out of a counted filter', async () => {
    const { bsmA, bsmB } = await seedGraph();
    const tag = bsmA.id.slice(-6);
    const counts = async () => {
      const counted = await run({ count: 'biosample_set', query: { name: { $regex: `^${tag} soil` } } });
      const listed = await request(t.app).get(
        `/biosamples?filter=${encodeURIComponent(`name.search:${tag} soil`)}&per_page=5`,
      );
      expect(listed.status, JSON.stringify(listed.body)).toBe(200);
      return [counted.body.n, listed.body.meta.count, listed.body.results.map((r: Doc) => r.id).sort()];
    };
    const rename = async (id: string, name: string) =>
      expect(
        (await run({ update: 'biosample_set', updates: [{ q: { id }, u: { $set: { name } } }] })).body,
      ).toEqual({ ok: 1, n: 1, nModified: 1 });
    expect(await counts()).toEqual([0, 0, []]);
    await rename(bsmA.id, `${tag} soil A`);
    expect(await counts()).toEqual([1, 1, [bsmA.id]]);
    await rename(bsmB.id, `${tag} soil B`);
    expect(await counts()).toEqual([2, 2, [bsmA.id, bsmB.id].sort()]);
    await rename(bsmA.id, `${tag} water A`);
    expect(await counts()).toEqual([1, 1, [bsmB.id]]);
    const deleted = await run({ delete: 'biosample_set', deletes: [{ q: { id: bsmB.id }, limit: 1 }] });
    expect(deleted.body).toEqual({ ok: 1, n: 1 });
    expect(await counts()).toEqual([0, 0, []]);
  });

  it('upserts a new valid record from q and u, and refuses an upsert whose record the schema refuses', async () => {
    const { studyA } = await seedGraph();
    const id = `nmdc:bsm-11-u${randomBytes(3).toString('hex')}`;
    const template = biosampleDoc(id, studyA.id);
    const { id: _id, ...fields } = template;
    const res = await run({
      update: 'biosample_set',
      updates: [{ q: { id }, u: { $set: fields }, upsert: true }],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ ok: 1, n: 1, nModified: 0, upserted: [{ index: 0, id }] });
    expect(await t.store.getById('biosample_set', id)).toEqual(template);
    const other = `${id}z`;
    await refused(
      {
        update: 'biosample_set',
        updates: [{ q: { id: other }, u: { $set: { name: 'no study, no terms' } }, upsert: true }],
      },
      422,
      'Schema document(s) would be invalid after proposed update',
      'associated_studies',
    );
    expect(await t.store.getById('biosample_set', other)).toBeNull();
  });

  it('updates and deletes records of a collection without ids (kept under a key of their content)', async () => {
    const tag = randomBytes(3).toString('hex');
    const wfe = `nmdc:wfmgan-11-${tag}.1`;
    await writer.upsert('workflow_execution_set', [{ id: wfe, type: 'nmdc:MetagenomeAnnotation' }]);
    const member = (gene: string, count: number) => ({
      type: 'nmdc:FunctionalAnnotationAggMember',
      was_generated_by: wfe,
      gene_function_id: gene,
      count,
    });
    await writer.upsert('functional_annotation_agg', [
      member('KEGG.ORTHOLOGY:K00001', 3),
      member('KEGG.ORTHOLOGY:K00002', 5),
    ]);
    const res = await run({
      update: 'functional_annotation_agg',
      updates: [
        {
          q: { was_generated_by: wfe, gene_function_id: 'KEGG.ORTHOLOGY:K00001' },
          u: { $inc: { count: 4 } },
        },
      ],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ ok: 1, n: 1, nModified: 1 });
    const found = await run({
      find: 'functional_annotation_agg',
      filter: { was_generated_by: wfe },
      sort: { count: 1 },
    });
    expect(found.body.cursor.batch).toEqual([
      member('KEGG.ORTHOLOGY:K00002', 5),
      member('KEGG.ORTHOLOGY:K00001', 7),
    ]);
    // One record each: the old content's key is gone.
    expect(await t.store.count('functional_annotation_agg', { was_generated_by: wfe })).toBe(2);
    await refused(
      {
        update: 'functional_annotation_agg',
        updates: [{ q: { was_generated_by: wfe }, u: { $set: { count: 'many' } }, multi: true }],
      },
      422,
      'Schema document(s) would be invalid after proposed update',
    );
    const del = await run({
      delete: 'functional_annotation_agg',
      deletes: [{ q: { was_generated_by: wfe }, limit: 0 }],
    });
    expect(del.body).toEqual({ ok: 1, n: 2 });
    expect(await t.store.count('functional_annotation_agg', { was_generated_by: wfe })).toBe(0);
  });

  it('writes nothing and answers 409 when a record changes between the check and the write', async () => {
    const { bsmA, bsmB } = await seedGraph();
    // Someone else's write lands just before this command's transaction.
    const commands = commandsRacedBy(t, writer, () =>
      writer.upsert('biosample_set', [{ ...bsmB, description: 'written meanwhile' }]),
    );
    const statements = await updateStatementsOf({
      updates: [
        { q: { id: { $in: [bsmA.id, bsmB.id] } }, u: { $set: { name: 'both renamed' } }, multi: true },
      ],
    });
    const error = await commands
      .update('biosample_set', statements, { allowBrokenRefs: false })
      .catch((e) => e);
    expect(error).toBeInstanceOf(Conflict);
    expect(error.detail).toBe(
      `The record '${bsmB.id}' of biosample_set changed while this update was checked: run it again`,
    );
    expect(await t.store.getById('biosample_set', bsmA.id)).toEqual(bsmA);
    expect(await t.store.getById('biosample_set', bsmB.id)).toEqual({
      ...bsmB,
      description: 'written meanwhile',
    });
  });

  it('replaces a record with a replacement record, which keeps its id', async () => {
    const { bsmA } = await seedGraph();
    const { id: _id, ...rest } = bsmA;
    const res = await run({
      update: 'biosample_set',
      updates: [{ q: { id: bsmA.id }, u: { ...rest, name: 'replaced' } }],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(await t.store.getById('biosample_set', bsmA.id)).toEqual({ ...bsmA, name: 'replaced' });
  });
});

describe('references left dangling are refused unless allow_broken_refs=true, as in the original 2.13.0', () => {
  const BROKEN =
    'The operation was not performed, because performing it would have left behind one or more broken references.';

  it('refuses to delete a study that a biosample and a study reference, naming them (test_queries_run_rejects_deletions_...)', async () => {
    const { studyA, studyB, bsmA, bsmB } = await seedGraph();
    const body = await refused(
      { delete: 'study_set', deletes: [{ q: { id: studyA.id }, limit: 0 }] },
      422,
      `${BROKEN} For example: The document having 'id'='${studyA.id}' in the collection 'study_set' is referenced by the document having 'id'='`,
      'Deleting the former would leave behind a broken reference. Update or delete referring document(s) and try again.',
    );
    expect(body.broken_references).toEqual(
      expect.arrayContaining([
        {
          id: bsmA.id,
          collection: 'biosample_set',
          slot: 'associated_studies',
          target: studyA.id,
          target_collection: 'study_set',
        },
        {
          id: studyB.id,
          collection: 'study_set',
          slot: 'part_of',
          target: studyA.id,
          target_collection: 'study_set',
        },
      ]),
    );
    expect(body.broken_references).toHaveLength(2);
    // Study B: biosample B references it.
    const b = await refused(
      { delete: 'study_set', deletes: [{ q: { id: studyB.id }, limit: 0 }] },
      422,
      BROKEN,
      bsmB.id,
    );
    expect(b.broken_references).toEqual([
      {
        id: bsmB.id,
        collection: 'biosample_set',
        slot: 'associated_studies',
        target: studyB.id,
        target_collection: 'study_set',
      },
    ]);
    // Nothing references the biosamples; then the two studies go together (one references the other).
    const biosamples = await run({
      delete: 'biosample_set',
      deletes: [{ q: { id: { $in: [bsmA.id, bsmB.id] } }, limit: 0 }],
    });
    expect(biosamples.body).toEqual({ ok: 1, n: 2 });
    const studies = await run({
      delete: 'study_set',
      deletes: [{ q: { id: { $in: [studyA.id, studyB.id] } }, limit: 0 }],
    });
    expect(studies.status, JSON.stringify(studies.body)).toBe(200);
    expect(studies.body).toEqual({ ok: 1, n: 2 });
    expect(await t.store.getById('study_set', studyA.id)).toBeNull();
  });

  it('deletes a referenced study with allow_broken_refs=true, leaving its references behind', async () => {
    const { studyA, bsmA } = await seedGraph();
    const res = await run(
      { delete: 'study_set', deletes: [{ q: { id: studyA.id }, limit: 0 }] },
      '?allow_broken_refs=true',
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ ok: 1, n: 1 });
    expect(await t.store.getById('study_set', studyA.id)).toBeNull();
    expect(await t.store.getById('biosample_set', bsmA.id)).toEqual(bsmA);
  });

  it('reads allow_broken_refs as the original reads booleans, and refuses a value that is none', async () => {
    const { studyA } = await seedGraph();
    const del = { delete: 'study_set', deletes: [{ q: { id: studyA.id }, limit: 0 }] };
    await refused(del, 422, BROKEN);
    expect((await run(del, '?allow_broken_refs=false')).status).toBe(422);
    const bad = await run(del, '?allow_broken_refs=perhaps');
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toContain('allow_broken_refs');
    expect(await t.store.getById('study_set', studyA.id)).not.toBeNull();
    expect((await run(del, '?allow_broken_refs=yes')).body).toEqual({ ok: 1, n: 1 });
  });

  it('refuses an update adding a reference to a record that does not exist; allows it with allow_broken_refs=true', async () => {
    const { studyA } = await seedGraph();
    const missing = 'nmdc:sty-00-000099';
    const update = {
      update: 'study_set',
      updates: [{ q: { id: studyA.id }, u: { $set: { part_of: [missing] } } }],
    };
    const body = await refused(
      update,
      422,
      `${BROKEN} Details: The document having id='${studyA.id}' in the collection 'study_set' contains a reference (in its 'part_of' field, referring to the document having id='${missing}') which would be broken.`,
    );
    expect(body.broken_references).toEqual([
      { id: studyA.id, collection: 'study_set', slot: 'part_of', target: missing },
    ]);
    const allowed = await run(update, '?allow_broken_refs=true');
    expect(allowed.status, JSON.stringify(allowed.body)).toBe(200);
    expect((await t.store.getById('study_set', studyA.id))!.part_of).toEqual([missing]);
  });

  it('refuses giving a referenced study another id, naming its referrers; accepts it with the references repaired in the same command', async () => {
    const { studyA, studyB, bsmA } = await seedGraph();
    const newId = `${studyA.id}x`;
    const body = await refused(
      { update: 'study_set', updates: [{ q: { id: studyA.id }, u: { $set: { id: newId } } }] },
      422,
      BROKEN,
      `The document having id='${bsmA.id}' in the collection 'biosample_set' contains a reference (in its 'associated_studies' field, referring to the document having id='${studyA.id}') which would be broken.`,
      `The document having id='${studyB.id}' in the collection 'study_set' contains a reference (in its 'part_of' field`,
    );
    expect(body.broken_references).toHaveLength(2);
    // As the original's test: the referring biosample is deleted, the referring study repaired in the same command.
    expect(
      (await run({ delete: 'biosample_set', deletes: [{ q: { id: bsmA.id }, limit: 1 }] })).body,
    ).toEqual({ ok: 1, n: 1 });
    const res = await run({
      update: 'study_set',
      updates: [
        { q: { id: studyA.id }, u: { $set: { id: newId } } },
        { q: { id: studyB.id }, u: { $set: { part_of: [newId] } } },
      ],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ ok: 1, n: 2, nModified: 2 });
    expect(await t.store.getById('study_set', studyA.id)).toBeNull();
    expect(await t.store.getById('study_set', newId)).toEqual({ ...studyA, id: newId });
    // The provenance graph follows the new id.
    const linked = await request(t.app)
      .get(`/nmdcschema/linked_instances?ids=${newId}&types=nmdc:Study`)
      .expect(200);
    expect(linked.body.resources.map((r: { id: string }) => r.id)).toContain(studyB.id);
  });

  it("names a record by its id before the update, as the original does, when its new version's reference is broken", async () => {
    const { bsmA } = await seedGraph();
    const missing = 'nmdc:sty-00-000099';
    await refused(
      {
        update: 'biosample_set',
        updates: [
          { q: { id: bsmA.id }, u: { $set: { associated_studies: [missing] } } },
          { q: { id: bsmA.id }, u: { $set: { id: `${bsmA.id}z` } } },
        ],
      },
      422,
      `The document having id='${bsmA.id}' in the collection 'biosample_set' contains a reference (in its 'associated_studies' field, referring to the document having id='${missing}')`,
    );
  });

  it('refuses an id another record has', async () => {
    const { studyA, studyB } = await seedGraph();
    await refused(
      { update: 'study_set', updates: [{ q: { id: studyB.id }, u: { $set: { id: studyA.id } } }] },
      422,
      `The id '${studyA.id}' is already the id of a record of study_set`,
    );
  });

  it('refuses to delete a workflow execution that functional annotations (records without ids) reference', async () => {
    const tag = randomBytes(3).toString('hex');
    const wfe = { id: `nmdc:wfmgan-11-${tag}.1`, type: 'nmdc:MetagenomeAnnotation' };
    await writer.upsert('workflow_execution_set', [wfe]);
    await writer.upsert('functional_annotation_agg', [
      {
        type: 'nmdc:FunctionalAnnotationAggMember',
        was_generated_by: wfe.id,
        gene_function_id: 'KEGG.ORTHOLOGY:K00001',
        count: 3,
      },
    ]);
    const body = await refused(
      { delete: 'workflow_execution_set', deletes: [{ q: { id: wfe.id }, limit: 1 }] },
      422,
      `referenced by a document without id in the collection 'functional_annotation_agg'`,
    );
    expect(body.broken_references).toEqual([
      {
        id: null,
        collection: 'functional_annotation_agg',
        slot: 'was_generated_by',
        target: wfe.id,
        target_collection: 'workflow_execution_set',
      },
    ]);
  });
});

describe('updates and deletes of 1,000 records or more go to the writing thread', () => {
  const writesOnThread = () => (t.store as SqliteDocumentStore).counters.writesOnThread;

  /** A study and `n` biosamples of it, tagged so each test has its own. */
  async function seedMany(n: number) {
    const tag = randomBytes(3).toString('hex');
    const study = studyDoc(`nmdc:sty-11-m${tag}`);
    const samples = Array.from({ length: n }, (_, i) =>
      biosampleDoc(`nmdc:bsm-11-m${tag}${String(i).padStart(4, '0')}`, study.id, { samp_name: tag }),
    );
    await writer.upsert('study_set', [study]);
    await writer.upsert('biosample_set', samples);
    return { tag, samples };
  }

  it('updates 1,200 records there, the indexes following, and deletes 1,100 of them', async () => {
    const { tag, samples } = await seedMany(1200);
    const before = writesOnThread();
    const res = await run({
      update: 'biosample_set',
      updates: [{ q: { samp_name: tag }, u: { $set: { name: `renamed ${tag}` } }, multi: true }],
    });
    expect(res.body).toEqual({ ok: 1, n: 1200, nModified: 1200 });
    expect(writesOnThread()).toBe(before + 1);
    const stored = await t.store.find('biosample_set', { samp_name: tag });
    expect(stored).toHaveLength(1200);
    expect(stored.every((d) => d.name === `renamed ${tag}`)).toBe(true);
    // The search index was written in the same transaction, on the thread.
    const found = await run({
      count: 'biosample_set',
      query: { name: { $regex: `^renamed ${tag}$` } },
    });
    expect(found.body).toEqual({ ok: 1, n: 1200 });

    const ids = samples.slice(0, 1100).map((d) => d.id);
    const del = await run({ delete: 'biosample_set', deletes: [{ q: { id: { $in: ids } }, limit: 0 }] });
    expect(del.body).toEqual({ ok: 1, n: 1100 });
    expect(writesOnThread()).toBe(before + 2);
    expect(await t.store.count('biosample_set', { samp_name: tag })).toBe(100);
    const left = await run({ count: 'biosample_set', query: { name: { $regex: `^renamed ${tag}$` } } });
    expect(left.body).toEqual({ ok: 1, n: 100 });
  });

  it('deletes 1,200 records of a collection without ids there too', async () => {
    const tag = `nmdc:wfmgan-11-m${randomBytes(3).toString('hex')}.1`;
    const members = Array.from({ length: 1200 }, (_, i) => ({
      type: 'nmdc:FunctionalAnnotationAggMember',
      was_generated_by: tag,
      gene_function_id: `KEGG.ORTHOLOGY:K${String(i).padStart(5, '0')}`,
      count: i,
    }));
    await writer.upsert('functional_annotation_agg', members);
    expect(await t.store.count('functional_annotation_agg', { was_generated_by: tag })).toBe(1200);
    const before = writesOnThread();
    const del = await run({
      delete: 'functional_annotation_agg',
      deletes: [{ q: { was_generated_by: tag, count: { $lt: 1100 } }, limit: 0 }],
    });
    expect(del.body).toEqual({ ok: 1, n: 1100 });
    expect(writesOnThread()).toBe(before + 1);
    const left = await run({
      find: 'functional_annotation_agg',
      filter: { was_generated_by: tag },
      sort: { count: 1 },
    });
    expect(left.body.cursor.batch).toEqual(members.slice(1100));
  });

  it('writes nothing there and answers 409 when one of 1,200 records changed since it was read', async () => {
    const { tag, samples } = await seedMany(1200);
    const changed = samples[700]!;
    // Someone else's write lands just before this command's write.
    const commands = commandsRacedBy(t, writer, () =>
      writer.upsert('biosample_set', [{ ...changed, description: 'written meanwhile' }]),
    );
    const before = writesOnThread();
    const statements = await updateStatementsOf({
      updates: [{ q: { samp_name: tag }, u: { $set: { name: 'never written' } }, multi: true }],
    });
    const error = await commands
      .update('biosample_set', statements, { allowBrokenRefs: false })
      .catch((e) => e);
    expect(error).toBeInstanceOf(Conflict);
    expect(error.detail).toBe(
      `The record '${changed.id}' of biosample_set changed while this update was checked: run it again`,
    );
    expect(writesOnThread()).toBe(before + 1);
    expect(await t.store.count('biosample_set', { name: 'never written' })).toBe(0);
    expect(await t.store.getById('biosample_set', changed.id)).toEqual({
      ...changed,
      description: 'written meanwhile',
    });
  });
});
