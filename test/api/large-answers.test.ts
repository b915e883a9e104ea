/**
 * Pages of more than 10,000 records are read and answered a few at a time (src/large-answers.ts):
 * ten public requests for a page of 10^5 biosamples held 3.5 GiB of a heap of about 4 GiB, and
 * a few more ended the process. Beyond the slots and the queue, 503 with `Retry-After`; smaller
 * pages never wait.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { setBcryptCost } from '../../src/accounts/index.ts';
import { ServerBusy } from '../../src/errors.ts';
import {
  LARGE_ANSWER_QUEUE,
  LARGE_ANSWER_SLOTS,
  LargeAnswers,
  isLargePage,
} from '../../src/large-answers.ts';
import { BATCH_CHARS } from '../../src/metadata/query-commands.ts';
import { createTestApp, passwordToken, type TestApp } from '../support/server.ts';

setBcryptCost(4);

const ADMIN = { ADMIN_USERNAME: 'large-pages-admin', ADMIN_PASSWORD: 'large pages wait their turn' };

/** A promise and the means to settle it. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

describe('LargeAnswers', () => {
  it('runs at most its slots at once, hands a slot to the next waiting, and refuses beyond its queue', async () => {
    const answers = new LargeAnswers(2, 1);
    const order: string[] = [];
    const first = gate();
    const second = gate();
    const a = answers.run(async () => {
      await first.opened;
      order.push('a');
    });
    const b = answers.run(async () => {
      await second.opened;
      order.push('b');
    });
    const c = answers.run(async () => {
      order.push('c');
      throw new Error('c failed');
    });
    expect(answers.load).toEqual({ running: 2, waiting: 1 });
    const refused = answers.run(async () => order.push('d'));
    await expect(refused).rejects.toBeInstanceOf(ServerBusy);
    await expect(refused).rejects.toThrow(
      '2 pages of more than 10000 records are being answered and 1 wait: send this one again later, or ask for pages of at most 10000 records',
    );
    first.open();
    await a;
    // c ran in a's slot and failed: its slot is free again, and b still holds the other.
    await expect(c).rejects.toThrow('c failed');
    expect(answers.load).toEqual({ running: 1, waiting: 0 });
    second.open();
    await b;
    expect(order).toEqual(['a', 'c', 'b']);
    expect(answers.load).toEqual({ running: 0, waiting: 0 });
    expect([isLargePage(10_000), isLargePage(10_001), isLargePage(0), isLargePage(20)]).toEqual([
      false,
      true,
      true,
      false,
    ]);
  });
});

describe('large pages through the API', () => {
  let t: TestApp;
  let token: string;

  beforeAll(async () => {
    t = await createTestApp(ADMIN);
    await t.store.upsertMany(
      'biosample_set',
      Array.from({ length: 30 }, (_, i) => ({
        id: `nmdc:bsm-11-lp${String(i).padStart(3, '0')}`,
        type: 'nmdc:Biosample',
      })),
    );
    token = await passwordToken(t.app, ADMIN.ADMIN_USERNAME, ADMIN.ADMIN_PASSWORD);
  }, 60_000);
  afterAll(async () => t?.close());
  const run = (body: object) =>
    request(t.app).post('/queries:run').set('Authorization', `Bearer ${token}`).send(body);

  it('answers 503 with Retry-After while every slot is taken and the queue is full, and small pages at once', async () => {
    const held = gate();
    const holders = Array.from({ length: LARGE_ANSWER_SLOTS + LARGE_ANSWER_QUEUE }, () =>
      t.largeAnswers.run(() => held.opened),
    );
    expect(t.largeAnswers.load).toEqual({ running: LARGE_ANSWER_SLOTS, waiting: LARGE_ANSWER_QUEUE });
    try {
      const large = await request(t.app).get('/nmdcschema/biosample_set').query({ max_page_size: 20_000 });
      expect(large.status).toBe(503);
      expect(large.headers['retry-after']).toBe('5');
      expect(large.body.detail).toMatch(/^2 pages of more than 10000 records are being answered and 16 wait/);
      const all = await request(t.app).get('/nmdcschema/biosample_set').query({ max_page_size: 0 });
      expect(all.status).toBe(503);
      const linked = await request(t.app)
        .get('/nmdcschema/linked_instances')
        .query({ ids: 'nmdc:bsm-11-lp000', max_page_size: 50_000 });
      expect(linked.status).toBe(503);
      expect((await run({ find: 'biosample_set', batchSize: 20_000 })).status).toBe(503);
      expect(
        (await run({ aggregate: 'biosample_set', pipeline: [], cursor: { batchSize: 20_000 } })).status,
      ).toBe(503);
      // A find whose limit keeps its batch small, and small pages, are answered at once.
      const limited = await run({ find: 'biosample_set', batchSize: 20_000, limit: 5 });
      expect(limited.status).toBe(200);
      expect(limited.body.cursor.firstBatch).toHaveLength(5);
      const small = await request(t.app).get('/nmdcschema/biosample_set').query({ max_page_size: 20 });
      expect(small.status).toBe(200);
      expect(small.body.resources).toHaveLength(20);
      // A getMore keeps its cursor's batch size: a cursor of large batches waits as its find did.
      const cursor = await run({ find: 'biosample_set', batchSize: 10 });
      const more = await run({ getMore: cursor.body.cursor.id, batchSize: 20_000 });
      expect(more.status).toBe(503);
    } finally {
      held.open();
      await Promise.all(holders);
    }
    const large = await request(t.app).get('/nmdcschema/biosample_set').query({ max_page_size: 20_000 });
    expect(large.status).toBe(200);
    expect(large.body.resources).toHaveLength(30);
    // Odd batch sizes and cursors are the command's to refuse (4xx with a detail), not the gate's.
    for (const body of [
      { find: 'biosample_set', batchSize: 'lots' },
      { find: 'biosample_set', batchSize: -20_000 },
      { getMore: 'x'.repeat(10_000) },
      { getMore: 12_345 },
      { aggregate: 'biosample_set', pipeline: [], cursor: 7 },
    ]) {
      const res = await run(body);
      expect(res.status, JSON.stringify(body).slice(0, 60)).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(res.body.detail).toBeTypeOf('string');
    }
    expect(t.largeAnswers.load).toEqual({ running: 0, waiting: 0 });
  });

  it('ends a /queries:run batch at 16 MiB of records, as MongoDB does, and gives the rest by its cursor', async () => {
    // Twelve records of 1.5 MiB: ten fit in 16 MiB, the eleventh would not.
    const big = (i: number) => ({
      id: `nmdc:bsm-11-big${String(i).padStart(2, '0')}`,
      type: 'nmdc:Biosample',
      description: String.fromCharCode(97 + i).repeat(1.5 * 2 ** 20),
    });
    await t.store.upsertMany(
      'biosample_set',
      Array.from({ length: 12 }, (_, i) => big(i)),
    );
    const fits = Math.floor(BATCH_CHARS / JSON.stringify(big(0)).length);
    expect(fits).toBe(10);
    const filter = { id: { $regex: '^nmdc:bsm-11-big' } };
    const ids = (batch: Array<{ id: string; description?: string }>) =>
      batch.map((r) => `${r.id}:${r.description?.length}`);
    const expected = (order: number[]) => order.map((i) => `${big(i).id}:${1.5 * 2 ** 20}`);
    const order = Array.from({ length: 12 }, (_, i) => i);
    for (const [sort, inOrder] of [
      [undefined, order],
      [{ id: -1 }, [...order].reverse()],
      [{ description: 1 }, order],
    ] as const) {
      const first = await run({ find: 'biosample_set', filter, sort, batchSize: 100 });
      expect(first.status).toBe(200);
      expect(ids(first.body.cursor.batch)).toEqual(expected(inOrder.slice(0, fits)));
      expect(ids(first.body.cursor.firstBatch)).toEqual(expected(inOrder.slice(0, fits)));
      expect(first.body.cursor.id).toBeTypeOf('string');
      const rest = await run({ getMore: first.body.cursor.id });
      expect(ids(rest.body.cursor.nextBatch)).toEqual(expected(inOrder.slice(fits)));
      expect(rest.body.cursor.id).toBeNull();
    }
    // Without the long field, every record fits in one batch; a limit still ends it.
    const slim = await run({ find: 'biosample_set', filter, projection: { description: 0 }, batchSize: 100 });
    expect(ids(slim.body.cursor.batch)).toEqual(order.map((i) => `${big(i).id}:undefined`));
    expect(slim.body.cursor.id).toBeNull();
    const limited = await run({ find: 'biosample_set', filter, limit: 11, batchSize: 100 });
    expect(ids(limited.body.cursor.batch)).toEqual(expected(order.slice(0, fits)));
    const next = await run({ getMore: limited.body.cursor.id });
    expect(ids(next.body.cursor.batch)).toEqual(expected([fits]));
    expect(next.body.cursor.id).toBeNull();
    // An aggregation's results end at the same size.
    const aggregated = await run({
      aggregate: 'biosample_set',
      pipeline: [{ $match: filter }, { $sort: { id: 1 } }],
      cursor: { batchSize: 100 },
    });
    expect(aggregated.status).toBe(200);
    expect(ids(aggregated.body.cursor.batch)).toEqual(expected(order.slice(0, fits)));
    const aggregatedRest = await run({ getMore: aggregated.body.cursor.id });
    expect(ids(aggregatedRest.body.cursor.batch)).toEqual(expected(order.slice(fits)));
    expect(aggregatedRest.body.cursor.id).toBeNull();
    // A getMore of kept results ends there too.
    const one = await run({
      aggregate: 'biosample_set',
      pipeline: [{ $match: filter }, { $sort: { id: 1 } }],
      cursor: { batchSize: 1 },
    });
    const kept = await run({ getMore: one.body.cursor.id, batchSize: 100 });
    expect(ids(kept.body.cursor.batch)).toEqual(expected(order.slice(1, 1 + fits)));
    const last = await run({ getMore: kept.body.cursor.id, batchSize: 100 });
    expect(ids(last.body.cursor.batch)).toEqual(expected(order.slice(1 + fits)));
    expect(last.body.cursor.id).toBeNull();
  }, 60_000);
});
