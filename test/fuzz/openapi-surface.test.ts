/**
 * A bounded part of `npm run bench:fuzz` in `npm test`: the service as its own process (under
 * its primary), every operation of API 2.13.0 and 1.2.0 sent generated and malformed requests,
 * anonymous and with each kind of token, and the hostile corpus aimed at the fields that meet a
 * pattern. Every answer is below 500, a 4xx carries a `detail`, each arrives within the deadline,
 * and no server process dies.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SEED, runs } from './inputs.ts';
import { startFuzzTarget, type FuzzTarget } from './target.ts';
import { corpusRequests, generatedRequests, newTally, operationsOf, sendAll, type Tally } from './surface.ts';

/** Longest an answer may take on a 2-core machine shared with other work. */
const DEADLINE_MS = 5000;

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-surface-'));
let target: FuzzTarget;
const { operations, resolve } = operationsOf();

beforeAll(async () => {
  target = await startFuzzTarget(dataDir);
}, 120_000);
afterAll(async () => {
  await target?.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

function expectClean(tally: Tally): void {
  expect(tally.failures, tally.failures.slice(0, 10).join('\n')).toEqual([]);
  expect(tally.sent).toBeGreaterThan(0);
}

describe('the whole HTTP surface, fuzzed', () => {
  it('lists every operation of both API versions', () => {
    const versions = new Set(operations.map((op) => op.version));
    expect(versions).toEqual(new Set(['2.13.0', '1.2.0']));
    expect(operations.some((op) => op.path === '/activities' && op.version === '1.2.0')).toBe(true);
    expect(operations.length).toBeGreaterThan(140);
  });

  it('answers the hostile corpus (schema patterns, $regex everywhere, long numerals) within the deadline', async () => {
    const tally = newTally();
    await sendAll(target.url, corpusRequests(target.context, target.adminAuth, { values: 3 }), tally, {
      deadlineMs: DEADLINE_MS,
    });
    expectClean(tally);
    // Requests of every kind were answered, refusals and results alike.
    expect(tally.byStatus.get(200)).toBeGreaterThan(0);
    expect(tally.byStatus.get(422)).toBeGreaterThan(0);
  }, 180_000);

  for (const version of ['2.13.0', '1.2.0']) {
    it(`answers generated requests to every ${version} operation below 500, with a detail, in time`, async () => {
      const tally = newTally();
      const ops = operations.filter((op) => op.version === version);
      await sendAll(target.url, generatedRequests(ops, resolve, target.context, runs(2), SEED), tally, {
        deadlineMs: DEADLINE_MS,
      });
      expectClean(tally);
      expect(tally.sent).toBe(ops.length * runs(2));
      expect([...tally.byStatus.keys()].some((s) => s >= 200 && s < 300)).toBe(true);
    }, 180_000);
  }

  it('ends with no server process dead and the service answering', async () => {
    expect(target.deaths()).toEqual([]);
    expect(await target.healthy()).toBe(true);
  });
});
