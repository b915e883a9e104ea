/**
 * Sorted listings on MongoDB through HTTP: the service on the stand-in (a replica set in
 * process, test/support/mongo-standin.ts) configured like a server that can neither hold a large
 * sort in memory nor spill it to disk, so every page below must be read off an index in key
 * order; the answers are checked against the embedded store's order (id ascending breaking ties
 * in both directions).
 */
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sortDocs } from '../../src/store/ordering.ts';
import type { Doc } from '../../src/store/port.ts';
import { StandInServer } from '../support/mongo-standin.ts';
import { standInApp, type StandInApp } from '../support/mongo-standin-app.ts';
import type { TestApp } from '../support/server.ts';

const server = new StandInServer();
const env = { MONGO_URL: 'mongodb://db1,db2,db3/?replicaSet=rs0' };
let standIn: StandInApp;
let t: TestApp;

const docs: Doc[] = Array.from({ length: 400 }, (_, n) => ({
  id: `nmdc:bsm-11-m${String((n * 163) % 400).padStart(4, '0')}`,
  type: 'nmdc:Biosample',
  // 23 names over 400 records: most of the order among equal names is the id tie-breaker's.
  name: `sample ${String(n % 23).padStart(2, '0')}`,
  ecosystem_category: n % 3 ? 'Plants' : 'Terrestrial',
  description: 'x'.repeat(120),
}));

beforeAll(async () => {
  standIn = await standInApp(server, env, (store) => store.upsertMany('biosample_set', docs));
  t = standIn.app;
  // Sorting 25 of these records in memory is over this limit.
  server.allowDiskUseByDefault = false;
  server.sortMemoryBytes = 2048;
}, 60_000);

afterAll(async () => {
  await standIn?.close();
});

/** The indexes that gave the sorts of the finds on biosample_set since `from` in the log. */
const sortIndexes = (from: number) =>
  server.log
    .slice(from)
    .filter((o) => o.op === 'find' && o.collection === 'biosample_set' && o.sortIndex !== undefined)
    .map((o) => o.sortIndex);

describe('sorted listings on MongoDB through HTTP', () => {
  it.each([
    ['desc', -1, 'name_-1_id_1'],
    ['asc', 1, 'name_1_id_1'],
  ] as const)(
    'pages sorted by name %s, with and without a filter, off the index in key order',
    async (word, direction, index) => {
      for (const filter of [undefined, 'ecosystem_category:Plants']) {
        const matches = filter ? docs.filter((d) => d.ecosystem_category === 'Plants') : docs;
        const expected = sortDocs([...matches], [['name', direction]]).map((d) => d.id);
        const from = server.log.length;
        const third = await request(t.app)
          .get('/biosamples')
          .query({ sort: `name:${word}`, per_page: 25, page: 3, ...(filter ? { filter } : {}) })
          .expect(200);
        expect(third.body.results.map((r: Doc) => r.id)).toEqual(expected.slice(50, 75));
        expect(third.body.results[0].name).toBe(matches.find((d) => d.id === expected[50])!.name);

        const seen: string[] = [];
        let cursor = '*';
        for (let pages = 0; pages < 3; pages++) {
          const res = await request(t.app)
            .get('/biosamples')
            .query({ sort: `name:${word}`, per_page: 20, cursor, ...(filter ? { filter } : {}) })
            .expect(200);
          seen.push(...res.body.results.map((r: Doc) => r.id));
          cursor = res.body.meta.next_cursor;
        }
        expect(seen).toEqual(expected.slice(0, 60));
        const used = sortIndexes(from);
        expect(used.length).toBeGreaterThan(0);
        expect(new Set(used)).toEqual(new Set([index]));
      }
    },
  );
});
