/**
 * The embedded store's samples for the planner: a whole small collection, an even draw from a
 * large one whatever the order records were written in, read in slices that take turns.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';
import { turnsDuring } from '../support/event-loop-turns.ts';

describe('sampleTexts', () => {
  let dir: string;
  let store: SqliteDocumentStore;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-sampling-'));
    // Slices of 3,000 index entries: the 20,000 biosamples are drawn in seven turns.
    store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite'), sampling: { slice: 3000 } });
    // Written interleaved with another collection, every tenth record marked: a periodic pattern
    // in write order that a draw keyed on row numbers could line up with.
    for (let batch = 0; batch < 20; batch++) {
      await store.upsertMany(
        'biosample_set',
        Array.from({ length: 1000 }, (_, i) => {
          const n = batch * 1000 + i;
          return { id: `nmdc:bsm-11-${String(n).padStart(6, '0')}`, marked: n % 10 === 3 };
        }),
      );
      await store.upsertMany('study_set', [{ id: `nmdc:sty-11-${batch}` }]);
    }
  });

  afterAll(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('gives every record of a collection no larger than the sample, in id order', async () => {
    const texts = await store.sampleTexts('study_set', 2000);
    expect(texts.map((t) => JSON.parse(t).id)).toEqual(
      Array.from({ length: 20 }, (_, i) => `nmdc:sty-11-${i}`).sort(),
    );
  });

  it('draws about the sample size evenly from a larger collection, taking turns between slices', async () => {
    const { result: texts, turns } = await turnsDuring(() => store.sampleTexts('biosample_set', 2000));
    expect(turns).toBeGreaterThanOrEqual(6);
    expect(texts.length).toBeGreaterThan(1500);
    expect(texts.length).toBeLessThanOrEqual(4000);
    const docs = texts.map((t) => JSON.parse(t));
    expect(new Set(docs.map((d) => d.id)).size).toBe(docs.length);
    const share = docs.filter((d) => d.marked).length / docs.length;
    // 10% marked; a binomial draw of ~2,000 stays well within ±4 points.
    expect(share).toBeGreaterThan(0.06);
    expect(share).toBeLessThan(0.14);
    // Spread over the whole id range, not its start.
    const late = docs.filter((d) => d.id > 'nmdc:bsm-11-015000').length / docs.length;
    expect(late).toBeGreaterThan(0.15);
  });
});
