import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';
import { CountCache } from '../../search/count-cache.ts';

describe('CountCache', () => {
  let dir: string;
  let store: SqliteDocumentStore;
  let computed: number;
  const filter = { name: { $regex: 'soil', $options: 'i' } };
  const countSoil = (cache: CountCache, collection = 'biosample_set') =>
    cache.count(collection, filter, async () => {
      computed++;
      return store.count(collection, filter);
    });

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'count-cache-'));
    store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
    computed = 0;
    await store.upsertMany('biosample_set', [
      { id: 'nmdc:bsm-11-a', name: 'Soil core' },
      { id: 'nmdc:bsm-11-b', name: 'Lake water' },
    ]);
  });
  afterEach(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('answers a repeated count without recomputing it', async () => {
    const cache = new CountCache(store);
    expect(await countSoil(cache)).toBe(1);
    expect(await countSoil(cache)).toBe(1);
    expect(computed).toBe(1);
  });

  it('computes a count once for requests that ask for it at the same time, and again after it expires', async () => {
    const cache = new CountCache(store, 30);
    expect(await Promise.all(Array.from({ length: 20 }, () => countSoil(cache)))).toEqual(Array(20).fill(1));
    expect(computed).toBe(1);
    await new Promise((r) => setTimeout(r, 40));
    expect(await Promise.all(Array.from({ length: 20 }, () => countSoil(cache)))).toEqual(Array(20).fill(1));
    expect(computed).toBe(2);
  });

  it('recomputes after a write to the same collection, even one made by another process', async () => {
    const cache = new CountCache(store);
    expect(await countSoil(cache)).toBe(1);
    // A second store handle on the same file stands for another server process.
    const other = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
    await other.upsertMany('biosample_set', [{ id: 'nmdc:bsm-11-c', name: 'Forest soil' }]);
    await other.close();
    expect(await countSoil(cache)).toBe(2);
    await store.deleteMany('biosample_set', { id: 'nmdc:bsm-11-a' });
    expect(await countSoil(cache)).toBe(1);
    expect(computed).toBe(3);
  });

  it('forgets every count when changes it had not seen were pruned from the log (gap)', async () => {
    const cache = new CountCache(store);
    expect(await countSoil(cache)).toBe(1);
    expect(await cache.count('study_set', {}, async () => 7)).toBe(7);
    // Another process writes; the sweep prunes those changes before this cache looks.
    const other = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite'), changesRetained: 1 });
    await other.upsertMany('biosample_set', [
      { id: 'nmdc:bsm-11-c', name: 'Forest soil' },
      { id: 'nmdc:bsm-11-d', name: 'Peat soil' },
    ]);
    other.sweep();
    await other.close();
    expect(await countSoil(cache)).toBe(3);
    expect(await cache.count('study_set', {}, async () => 8)).toBe(8);
  });

  it('keeps counts of collections that were not written', async () => {
    const cache = new CountCache(store);
    await countSoil(cache);
    await store.upsertMany('study_set', [{ id: 'nmdc:sty-11-x', name: 'Soil study' }]);
    expect(await countSoil(cache)).toBe(1);
    expect(computed).toBe(1);
  });

  it('expires entries after its time bound', async () => {
    const cache = new CountCache(store, 0);
    await countSoil(cache);
    await countSoil(cache);
    expect(computed).toBe(2);
  });

  it('lets counts computed together expire apart, each within its time bound', async () => {
    const cache = new CountCache(store, 1000);
    const recounted = new Set<number>();
    const countAll = (tag: boolean) =>
      Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          cache.count('biosample_set', { n: i }, async () => {
            if (tag) recounted.add(i);
            return i;
          }),
        ),
      );
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      const start = Date.now();
      expect(await countAll(false)).toEqual(Array.from({ length: 40 }, (_, i) => i));
      vi.setSystemTime(start + 499);
      await countAll(true);
      expect(recounted.size).toBe(0);
      vi.setSystemTime(start + 750);
      await countAll(true);
      // About half expired by now: 2 in 2^40 runs see all or none of them on one side.
      expect(recounted.size).toBeGreaterThan(0);
      expect(recounted.size).toBeLessThan(40);
      const early = recounted.size;
      vi.setSystemTime(start + 1000);
      recounted.clear();
      await countAll(true);
      // Every count kept since the start has met its bound; those recounted at 750 ms live on.
      expect(recounted.size).toBe(40 - early);
      vi.setSystemTime(start + 2000);
      recounted.clear();
      await countAll(true);
      expect(recounted.size).toBe(40);
    } finally {
      vi.useRealTimers();
    }
  });

  it('shares and keeps cheap counts, and keeps nothing when the cheap way declines', async () => {
    const cache = new CountCache(store);
    let cheap = 0;
    const countCheap = (n: number | undefined) =>
      cache.countIfCheap('biosample_set', filter, async () => {
        cheap++;
        return n;
      });
    // Declined: nothing kept, the full count runs.
    expect(await countCheap(undefined)).toBeUndefined();
    expect(await countSoil(cache)).toBe(1);
    expect(computed).toBe(1);
    // The full count is kept and answers a cheap ask without computing.
    expect(await countCheap(5)).toBe(1);
    expect(cheap).toBe(1);
    await store.upsertMany('biosample_set', [{ id: 'nmdc:bsm-11-c', name: 'Forest soil' }]);
    // Concurrent asks share one cheap computation, and a full count shares it too.
    const all = await Promise.all([countCheap(2), countCheap(9), countSoil(cache)]);
    expect(all).toEqual([2, 2, 2]);
    expect(cheap).toBe(2);
    expect(computed).toBe(1);
    expect(await countSoil(cache)).toBe(2);
    expect(computed).toBe(1);
  });

  it('never makes a cheap ask wait for a full count, and a full count computes when a shared cheap one declines', async () => {
    const cache = new CountCache(store);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const full = cache.count('biosample_set', filter, async () => {
      await gate;
      return 4;
    });
    await new Promise((r) => setImmediate(r));
    expect(await cache.countIfCheap('biosample_set', filter, async () => 3)).toBeUndefined();
    release();
    expect(await full).toBe(4);

    const other = { name: 'x' };
    const declining = cache.countIfCheap('biosample_set', other, async () => undefined);
    const counted = cache.count('biosample_set', other, async () => 6);
    expect(await declining).toBeUndefined();
    expect(await counted).toBe(6);
  });
});
