/**
 * A walk in id order with a body test reads ranges of ids, one statement each; the first range is
 * sized by the share of records the planner expects to pass, so a page is mostly found in one.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Doc } from '../../src/store/port.ts';
import { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';
import { firstRange } from '../../src/store/sqlite/id-order-scans.ts';
import { ON_LOOP_ROWS } from '../../src/store/sqlite/read-threads.ts';

describe('the first range of a body-tested walk', () => {
  it('holds twice the records the page needs at the expected share, within its bounds', () => {
    expect(firstRange(26, 0.1)).toBe(520);
    expect(firstRange(26, 0.5)).toBe(256); // never below the first range of old
    expect(firstRange(26, 0.001)).toBe(ON_LOOP_ROWS); // never more than a statement reads on the loop
    for (const pass of [undefined, 0, -1, Number.NaN]) expect(firstRange(26, pass)).toBe(256);
    for (const need of [undefined, Infinity]) expect(firstRange(need, 0.1)).toBe(256);
  });
});

describe('a body-tested walk in id order', () => {
  let dir: string;
  let store: SqliteDocumentStore;
  /** Every tenth record in id order holds the word the test looks for. */
  const docs: Doc[] = Array.from({ length: 2000 }, (_, i) => ({
    id: `r${String(i).padStart(4, '0')}`,
    geo: i % 10 === 9 ? `Toolik ${i}` : `Elsewhere ${i}`,
  }));
  const test = { sql: 'x.body GLOB +?', params: ['*Toolik*'] };

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'body-walk-'));
    // Every statement on this connection, where they are counted (a cold collection's larger reads
    // go to reading threads otherwise).
    store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite'), readThreads: 0 });
    await store.upsertMany('biosample_set', docs);
  });
  afterAll(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** The page of 26, and how many statements tested bodies to find it. */
  async function page(pass?: number): Promise<{ ids: string[]; statements: number }> {
    const proto = Object.getPrototypeOf(store.db.prepare('SELECT 1')) as {
      all: (...a: unknown[]) => unknown;
    };
    const all = proto.all;
    let statements = 0;
    proto.all = function (this: { source: string }, ...args: unknown[]) {
      if (this.source.includes('x.body GLOB +?')) statements++;
      return all.apply(this, args);
    };
    try {
      const found = await store.find(
        'biosample_set',
        { geo: { $regex: 'Toolik' } },
        { limit: 26, access: { path: 'id-walk', bodyTest: pass === undefined ? test : { ...test, pass } } },
      );
      return { ids: found.map((d) => d.id), statements };
    } finally {
      proto.all = all;
    }
  }

  it('finds the page in one statement at the share the planner expects, the same page as without it', async () => {
    const expected = docs
      .filter((d) => String(d.geo).startsWith('Toolik'))
      .slice(0, 26)
      .map((d) => d.id);
    // 256 ids hold 25 matches: the 26th takes a second range.
    expect(await page()).toEqual({ ids: expected, statements: 2 });
    expect(await page(0.1)).toEqual({ ids: expected, statements: 1 });
  });
});
