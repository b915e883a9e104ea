/**
 * Updates and deletes through `POST /queries:run` on the MongoDB stand-in, where the store has no
 * `writeIfUnchanged`: the record writer makes the same checked change in the store's
 * read-modify-write transaction.
 */
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Doc } from '../../src/store/port.ts';
import { StandInServer } from '../support/mongo-standin.ts';
import { standInApp, type StandInApp } from '../support/mongo-standin-app.ts';
import { passwordToken, type TestApp } from '../support/server.ts';
import { RecordWriter } from '../../search/writer.ts';
import { Conflict } from '../../src/errors.ts';
import { commandsRacedBy } from '../support/racing-writes.ts';
import { updateStatementsOf } from '../../src/metadata/write-statements.ts';

const server = new StandInServer();
const env = {
  MONGO_URL: 'mongodb://db1,db2,db3/?replicaSet=rs0',
  ADMIN_USERNAME: 'mongo-writes-admin',
  ADMIN_PASSWORD: 'mongo writes admin passphrase',
};
let standIn: StandInApp;
let t: TestApp;
let token: string;

const docs: Doc[] = Array.from({ length: 6 }, (_, n) => ({
  id: `nmdc:bsm-11-w${n}`,
  type: 'nmdc:Biosample',
  name: `sample ${n}`,
  samp_name: n < 4 ? 'first four' : 'last two',
  associated_studies: ['nmdc:sty-11-w0'],
  env_broad_scale: {
    term: { id: 'ENVO:00000446', type: 'nmdc:OntologyClass' },
    type: 'nmdc:ControlledIdentifiedTermValue',
  },
  env_local_scale: {
    term: { id: 'ENVO:00000114', type: 'nmdc:OntologyClass' },
    type: 'nmdc:ControlledIdentifiedTermValue',
  },
  env_medium: {
    term: { id: 'ENVO:00001998', type: 'nmdc:OntologyClass' },
    type: 'nmdc:ControlledIdentifiedTermValue',
  },
}));

beforeAll(async () => {
  standIn = await standInApp(server, env, (store) => store.upsertMany('biosample_set', docs));
  t = standIn.app;
  token = await passwordToken(t.app, env.ADMIN_USERNAME, env.ADMIN_PASSWORD);
}, 60_000);

afterAll(async () => {
  await standIn?.close();
});

const run = (body: unknown) =>
  request(t.app)
    .post('/queries:run?allow_broken_refs=true')
    .set('Authorization', `Bearer ${token}`)
    .send(body as object);

describe('updates and deletes on MongoDB', () => {
  it('updates and deletes through the read-modify-write transaction', async () => {
    const updated = await run({
      update: 'biosample_set',
      updates: [{ q: { samp_name: 'first four' }, u: { $set: { name: 'renamed' } }, multi: true }],
    });
    expect(updated.body).toEqual({ ok: 1, n: 4, nModified: 4 });
    expect((await t.store.find('biosample_set', { name: 'renamed' })).map((d) => d.id)).toEqual(
      docs.slice(0, 4).map((d) => d.id),
    );
    const deleted = await run({
      delete: 'biosample_set',
      deletes: [{ q: { id: { $in: [docs[0]!.id, docs[1]!.id, 'nmdc:bsm-11-absent'] } }, limit: 0 }],
    });
    expect(deleted.body).toEqual({ ok: 1, n: 2 });
    expect(await t.store.count('biosample_set', {})).toBe(4);
  });

  it('writes nothing and answers 409 when a record changed since it was read', async () => {
    const writer = new RecordWriter(t.store, [t.searchIndex, t.edgeIndex]);
    const changed = docs[5]!;
    // Someone else's write lands just before this command's write.
    const commands = commandsRacedBy(t, writer, () =>
      writer.upsert('biosample_set', [{ ...changed, description: 'written meanwhile' }]),
    );
    const statements = await updateStatementsOf({
      updates: [{ q: { samp_name: 'last two' }, u: { $set: { name: 'never written' } }, multi: true }],
    });
    const error = await commands
      .update('biosample_set', statements, { allowBrokenRefs: true })
      .catch((e) => e);
    expect(error).toBeInstanceOf(Conflict);
    expect(error.detail).toBe(
      `The record '${changed.id}' of biosample_set changed while this update was checked: run it again`,
    );
    expect(await t.store.count('biosample_set', { name: 'never written' })).toBe(0);
  });
});
