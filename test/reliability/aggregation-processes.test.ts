/**
 * Aggregation pipelines run in processes of their own (src/metadata/pipeline-processes.ts): a
 * pipeline that exhausts its heap, runs past its time limit or answers records too large is a 422
 * that says so, the service keeps answering meanwhile and afterwards, and what it reads and joins
 * into its own memory is bounded. `{$project: {a: {$range: [0, 10000000]}}}` over sixty records
 * ended the service's process before.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { createTestApp, passwordToken, type TestApp } from '../support/server.ts';
import { turnsDuring } from '../support/event-loop-turns.ts';
import { setBcryptCost } from '../../src/accounts/index.ts';
import type { Doc } from '../../src/store/port.ts';
import {
  AGGREGATE_RECORD_LIMIT,
  AggregationRunner,
  LOOKUP_JOIN_LIMIT,
} from '../../src/metadata/aggregation.ts';
import type { CollectionsReader } from '../../src/metadata/collections-reader.ts';
import { PipelineProcesses } from '../../src/metadata/pipeline-processes.ts';

setBcryptCost(4);

const ADMIN = { ADMIN_USERNAME: 'pipeline-admin', ADMIN_PASSWORD: 'pipelines run on their own' };
let t: TestApp;
let token: string;

const aggregate = (pipeline: unknown[]) =>
  request(t.app)
    .post('/queries:run')
    .set('Authorization', `Bearer ${token}`)
    .send({ aggregate: 'biosample_set', pipeline });

beforeAll(async () => {
  t = await createTestApp({ ...ADMIN, AGGREGATE_MEMORY_MB: '64', AGGREGATE_TIME_LIMIT_SECONDS: '3' });
  await t.store.upsertMany(
    'biosample_set',
    Array.from({ length: 60 }, (_, i) => ({
      id: `nmdc:bsm-11-agg${String(i).padStart(3, '0')}`,
      type: 'nmdc:Biosample',
      name: `Core ${i}`,
      ecosystem_type: i % 2 ? 'Soil' : 'Sediment',
    })),
  );
  token = await passwordToken(t.app, ADMIN.ADMIN_USERNAME, ADMIN.ADMIN_PASSWORD);
}, 60_000);
afterAll(async () => t?.close());

describe('aggregation pipelines in processes of their own', () => {
  it('answers as before: groups, sorts and projections', async () => {
    const res = await aggregate([
      { $group: { _id: '$ecosystem_type', n: { $sum: 1 } } },
      { $sort: { _id: 1 } },
    ]).expect(200);
    expect(res.body.cursor.firstBatch).toEqual([
      { _id: 'Sediment', n: 30 },
      { _id: 'Soil', n: 30 },
    ]);
  });

  it('gives a pipeline over the whole collection its records as stored, each with _id, in id order', async () => {
    const res = await aggregate([{ $limit: 3 }, { $project: { name: 1 } }]).expect(200);
    expect(res.body.cursor.firstBatch).toEqual(
      [0, 1, 2].map((i) => ({ _id: `nmdc:bsm-11-agg00${i}`, name: `Core ${i}` })),
    );
  });

  it('pages results stored in chunks with getMore, each result once and in order', async () => {
    // 60 results of 32 KiB each: about 2 MiB of JSON, more than one stored chunk.
    const pad = {
      $reduce: { input: { $range: [0, 15] }, initialValue: 'x', in: { $concat: ['$$value', '$$value'] } },
    };
    const first = await request(t.app)
      .post('/queries:run')
      .set('Authorization', `Bearer ${token}`)
      .send({
        aggregate: 'biosample_set',
        pipeline: [{ $sort: { id: 1 } }, { $project: { _id: 0, id: 1, pad } }],
        cursor: { batchSize: 25 },
      })
      .expect(200);
    const seen: Array<{ id: string; pad: string }> = [...first.body.cursor.firstBatch];
    let cursor: string | null = first.body.cursor.id;
    const sizes = [seen.length];
    while (cursor) {
      const more = await request(t.app)
        .post('/queries:run')
        .set('Authorization', `Bearer ${token}`)
        .send({ getMore: cursor, collection: 'biosample_set' })
        .expect(200);
      sizes.push(more.body.cursor.nextBatch.length);
      seen.push(...more.body.cursor.nextBatch);
      cursor = more.body.cursor.id;
    }
    expect(sizes).toEqual([25, 25, 10]);
    expect(seen.map((r) => r.id)).toEqual(
      Array.from({ length: 60 }, (_, i) => `nmdc:bsm-11-agg${String(i).padStart(3, '0')}`),
    );
    expect(new Set(seen.map((r) => r.pad.length))).toEqual(new Set([2 ** 15]));
  });

  it('answers 422 for a pipeline that exhausts its heap, then answers the next one', async () => {
    // Each record would hold an array of 10^7 numbers: 60 of them are gigabytes.
    const res = await aggregate([{ $project: { a: { $range: [0, 10_000_000] } } }]).expect(422);
    expect(res.body.detail).toBe(
      'The aggregation needed more than the 64 MiB its process may use; narrow it (a leading $match, ' +
        '$project or $limit) or raise AGGREGATE_MEMORY_MB',
    );
    const next = await aggregate([{ $match: { name: 'Core 7' } }, { $project: { _id: 0, name: 1 } }]).expect(
      200,
    );
    expect(next.body.cursor.firstBatch).toEqual([{ name: 'Core 7' }]);
  }, 30_000);

  it('answers 422 for a pipeline past its time limit, and keeps the event loop meanwhile', async () => {
    const slow = [
      {
        $project: {
          s: {
            $reduce: {
              input: { $range: [0, 200_000] },
              initialValue: 0,
              in: { $add: ['$$value', '$$this'] },
            },
          },
        },
      },
    ];
    const { result: res, turns } = await turnsDuring(() => aggregate(slow).then((r) => r));
    expect(res.status).toBe(422);
    expect(res.body.detail).toBe(
      'The aggregation ran for more than 3 s, the most one may; narrow it (a leading $match, ' +
        '$project or $limit) or raise AGGREGATE_TIME_LIMIT_SECONDS',
    );
    // Run on the event loop, the pipeline would have let hardly any turn in three seconds.
    expect(turns).toBeGreaterThan(100);
  }, 30_000);

  it('answers a 422 naming the pattern RE2 cannot run, from the pipeline process', async () => {
    const res = await aggregate([
      { $match: { $expr: { $regexMatch: { input: '$name', regex: '(a)\\1' } } } },
    ]);
    expect(res.status).toBe(422);
    expect(res.body.detail).toMatch(/not supported/);
  });
});

describe('what an aggregation reads into the service', () => {
  const processes = new PipelineProcesses({ memoryMb: 256, timeMs: 30_000, processes: 1 });
  afterAll(() => processes.close());
  /** A reader answering `count` records for any find (the runner asks for one over its limit). */
  const readerOf = (records: (limit?: number) => Doc[]) =>
    ({
      find: async (_c: string[], _f: unknown, page: { limit?: number }) => records(page.limit),
    }) as unknown as CollectionsReader;

  it(`refuses a pipeline that would read more than ${AGGREGATE_RECORD_LIMIT} records`, async () => {
    const many = (limit?: number) => Array.from({ length: limit ?? 10 }, (_, i) => ({ id: `r${i}` }) as Doc);
    const runner = new AggregationRunner(readerOf(many), processes);
    await expect(runner.run('biosample_set', [{ $count: 'n' }])).rejects.toThrow(
      `The pipeline would read more than ${AGGREGATE_RECORD_LIMIT} records of biosample_set; begin it ` +
        'with a $match that narrows them (a leading $match is answered by the indexes)',
    );
  });

  /** A collection's stored texts, `batches` batches of `size` records made as they are read; `pulled` counts reads. */
  const storedOf =
    (batches: number, size: number, pulled: number[] = []) =>
    () =>
      (async function* scan() {
        for (let b = 0; b < batches; b++) {
          pulled.push(b);
          yield Array.from({ length: size }, (_, i) => JSON.stringify({ id: `r${b * size + i}`, n: b }));
        }
      })();

  it(`refuses a pipeline over stored records past ${AGGREGATE_RECORD_LIMIT}, and the next pipeline sees only its own`, async () => {
    const over = new AggregationRunner(
      readerOf(() => []),
      processes,
      storedOf(AGGREGATE_RECORD_LIMIT / 1000 + 1, 1000),
    );
    await expect(over.run('biosample_set', [{ $count: 'n' }])).rejects.toThrow(
      `The pipeline would read more than ${AGGREGATE_RECORD_LIMIT} records of biosample_set`,
    );
    // The process that was given part of those records is not given another pipeline.
    const next = new AggregationRunner(
      readerOf(() => []),
      processes,
      storedOf(3, 1),
    );
    expect((await next.run('biosample_set', [{ $count: 'n' }])).map((r) => r.text)).toEqual(['{"n":3}']);
  }, 30_000);

  it('reads stored records no faster than the pipeline process takes them', async () => {
    // Each batch is one chunk to the process: a batch is read only once all but the last two
    // chunks before it have gone to the process (gathering them first read every batch before any went).
    const takenAtRead: number[] = [];
    const from = processes.counters.chunksTaken;
    const pulled = {
      push: () => takenAtRead.push(processes.counters.chunksTaken - from),
    } as unknown as number[];
    const runner = new AggregationRunner(
      readerOf(() => []),
      processes,
      storedOf(40, 500, pulled),
    );
    const out = await runner.run('biosample_set', [
      { $group: { _id: null, n: { $sum: 1 }, last: { $max: '$n' } } },
    ]);
    expect(out.map((r) => r.text)).toEqual(['{"_id":null,"n":20000,"last":39}']);
    expect(takenAtRead).toHaveLength(40);
    takenAtRead.forEach((sent, batch) =>
      expect(sent, `chunks taken when batch ${batch} was read`).toBeGreaterThanOrEqual(batch - 2),
    );
  }, 30_000);

  it(`refuses a $lookup that would join more than ${LOOKUP_JOIN_LIMIT} records in all`, async () => {
    // 1,001 records each joining the same 1,000 foreign records.
    const records = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `r${i}`, kind: 'k' }) as Doc);
    let calls = 0;
    const runner = new AggregationRunner(
      readerOf(() => records(calls++ === 0 ? 1001 : 1000)),
      processes,
    );
    await expect(
      runner.run('biosample_set', [
        { $lookup: { from: 'study_set', localField: 'kind', foreignField: 'kind', as: 'joined' } },
      ]),
    ).rejects.toThrow(
      `$lookup would join 1001000 records in all, more than the ${LOOKUP_JOIN_LIMIT} one may; narrow ` +
        'the records before it (a $match) or the records it joins (localField and foreignField)',
    );
  });

  it('refuses a result record over 16 MiB of JSON, as MongoDB refuses such a document', async () => {
    const runner = new AggregationRunner(
      readerOf(() => [{ id: 'r0' } as Doc]),
      processes,
    );
    // A string doubled 24 times: 2^24 characters, and the record's other 19.
    const doubling = {
      $reduce: { input: { $range: [0, 24] }, initialValue: 'x', in: { $concat: ['$$value', '$$value'] } },
    };
    await expect(runner.run('biosample_set', [{ $project: { s: doubling } }])).rejects.toThrow(
      'A result record of the aggregation is 16777235 characters of JSON, more than the 16777216 a ' +
        "record may be (MongoDB's 16 MiB document limit)",
    );
  }, 30_000);

  it('joins and runs per record in the concise form, in one process', async () => {
    const locals = [
      { id: 'a', kind: 'x' },
      { id: 'b', kind: 'y' },
    ] as Doc[];
    const foreign = [
      { id: 'f1', kind: 'x', n: 1 },
      { id: 'f2', kind: 'x', n: 2 },
      { id: 'f3', kind: 'y', n: 3 },
    ] as Doc[];
    let calls = 0;
    const runner = new AggregationRunner(
      readerOf(() => (calls++ === 0 ? locals : foreign)),
      processes,
    );
    const out = await runner.run('biosample_set', [
      {
        $lookup: {
          from: 'study_set',
          localField: 'kind',
          foreignField: 'kind',
          pipeline: [{ $match: { n: { $gte: 2 } } }, { $project: { _id: 0, n: 1 } }],
          as: 'joined',
        },
      },
      { $project: { _id: 0, id: 1, joined: 1 } },
    ]);
    // Each result is its JSON text, as the pipeline's process wrote it.
    expect(out.map((r) => r.text)).toEqual([
      JSON.stringify({ id: 'a', joined: [{ n: 2 }] }),
      JSON.stringify({ id: 'b', joined: [{ n: 3 }] }),
    ]);
  });
});
