import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';
import { CountCache, MAX_NOTED } from '../../search/count-cache.ts';
import { RecordWriter } from '../../search/writer.ts';
import type { Doc } from '../../src/store/port.ts';

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

  it('forgets every count after a write larger than it could follow, reading no more of its changes than that', async () => {
    const cache = new CountCache(store);
    expect(await countSoil(cache)).toBe(1);
    expect(await cache.count('study_set', {}, async () => 7)).toBe(7);
    // A small write is read from the log: the study count stays.
    await store.upsertMany('biosample_set', [{ id: 'nmdc:bsm-11-c', name: 'Forest soil' }]);
    const read = vi.spyOn(store, 'changesSince');
    expect(await countSoil(cache)).toBe(2);
    expect(read).toHaveBeenCalled();
    expect(await cache.count('study_set', {}, async () => 8)).toBe(7);
    // 2,001 changes: more than a count is ever adjusted by, so none is read and every count goes.
    const many = Array.from({ length: 2001 }, (_, i) => ({
      id: `nmdc:bsm-11-m${i}`,
      name: `Peat soil ${i}`,
    }));
    await store.upsertMany('biosample_set', many);
    read.mockClear();
    expect(await countSoil(cache)).toBe(2003);
    expect(read).toHaveBeenCalled();
    for (const [, limit] of read.mock.calls) expect(limit).toBe(2000);
    for (const page of read.mock.results) expect((await page.value).changes.length).toBeLessThanOrEqual(2000);
    expect(await cache.count('study_set', {}, async () => 8)).toBe(8);
    expect(computed).toBe(3);
    // And it follows the log from there on.
    await store.upsertMany('biosample_set', [{ id: 'nmdc:bsm-11-z', name: 'Dry soil' }]);
    expect(await countSoil(cache)).toBe(2004);
    expect(read).toHaveBeenCalled();
    expect(computed).toBe(4);
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

  describe('following writes its writer notes', () => {
    const writerFor = (cache: CountCache) => {
      const writer = new RecordWriter(store, []);
      writer.observe(cache);
      return writer;
    };
    /** Writes (and deletes) through the checked path, as `/queries:run` does; true when made. */
    const change = async (writer: RecordWriter, docs: Doc[], deletes: string[] = []) => {
      const ids = [...docs.map((d) => String(d.id)), ...deletes];
      const expected = await Promise.all(
        ids.map(async (id) => ({
          collection: 'biosample_set',
          id,
          doc: await store.getById('biosample_set', id),
        })),
      );
      const result = await writer.writeIfUnchanged({
        expected,
        writes: docs.length > 0 ? [{ collection: 'biosample_set', docs }] : [],
        deletes: deletes.map((id) => ({ collection: 'biosample_set', id })),
      });
      return result.changed < 0;
    };

    it('moves a kept count by the records a noted write changes, without counting again', async () => {
      const cache = new CountCache(store);
      const writer = writerFor(cache);
      expect(await countSoil(cache)).toBe(1);
      expect(await change(writer, [{ id: 'nmdc:bsm-11-b', name: 'Lake soil' }])).toBe(true);
      expect(await countSoil(cache)).toBe(2);
      expect(await change(writer, [{ id: 'nmdc:bsm-11-c', name: 'Forest soil' }], ['nmdc:bsm-11-a'])).toBe(
        true,
      );
      expect(await countSoil(cache)).toBe(2);
      expect(await change(writer, [{ id: 'nmdc:bsm-11-c', name: 'Forest litter' }])).toBe(true);
      expect(await countSoil(cache)).toBe(1);
      expect(computed).toBe(1);
      expect(await store.count('biosample_set', filter)).toBe(1);
    });

    it('counts again when a write it was not told of, or a larger one, comes with the noted ones', async () => {
      const cache = new CountCache(store);
      const writer = writerFor(cache);
      expect(await countSoil(cache)).toBe(1);
      await store.upsertMany('biosample_set', [{ id: 'nmdc:bsm-11-d', name: 'Peat soil' }]);
      await change(writer, [{ id: 'nmdc:bsm-11-b', name: 'Lake soil' }]);
      expect(await countSoil(cache)).toBe(3);
      expect(computed).toBe(2);
      const many = Array.from({ length: MAX_NOTED + 1 }, (_, i) => ({
        id: `nmdc:bsm-11-m${i}`,
        name: 'Marsh soil',
      }));
      await change(writer, many);
      expect(await countSoil(cache)).toBe(3 + MAX_NOTED + 1);
      expect(computed).toBe(3);
    });

    it('takes no note for a change another process made to a noted record before the noted write', async () => {
      const cache = new CountCache(store);
      expect(await countSoil(cache)).toBe(1);
      // Noted as a rename of 'Lake water' to 'Lake soil'; another process renames it otherwise first.
      const noted = cache.note([
        {
          collection: 'biosample_set',
          id: 'nmdc:bsm-11-b',
          before: { id: 'nmdc:bsm-11-b', name: 'Lake water' },
          after: { id: 'nmdc:bsm-11-b', name: 'Lake soil' },
        },
      ]);
      const other = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
      await other.upsertMany('biosample_set', [{ id: 'nmdc:bsm-11-b', name: 'Lake mud' }]);
      await other.close();
      expect(await countSoil(cache)).toBe(1);
      expect(computed).toBe(2);
      await noted.settle();
      // The noted write, refused (the record changed), leaves nothing behind to match a later change.
      const writer = writerFor(cache);
      expect(await change(writer, [{ id: 'nmdc:bsm-11-b', name: 'Lake soil' }])).toBe(true);
      expect(await countSoil(cache)).toBe(2);
      expect(computed).toBe(2);
    });

    it('counts again when two noted writes change one record at once', async () => {
      const cache = new CountCache(store);
      expect(await countSoil(cache)).toBe(1);
      const rename = (name: string) =>
        cache.note([
          {
            collection: 'biosample_set',
            id: 'nmdc:bsm-11-b',
            before: { id: 'nmdc:bsm-11-b', name: 'Lake water' },
            after: { id: 'nmdc:bsm-11-b', name },
          },
        ]);
      const first = rename('Lake soil');
      const second = rename('Lake soil');
      await store.upsertMany('biosample_set', [{ id: 'nmdc:bsm-11-b', name: 'Lake soil' }]);
      expect(await countSoil(cache)).toBe(2);
      expect(computed).toBe(2);
      await first.settle();
      await second.settle();
    });

    it('answers a noted write made when the change log cannot be read, and counts again after it', async () => {
      let failing = false;
      const flaky = new Proxy(store, {
        get(target, name, receiver) {
          if (name === 'changesSince' && failing)
            return async () => Promise.reject(new Error('disk I/O error'));
          const value = Reflect.get(target, name, receiver) as unknown;
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      const cache = new CountCache(flaky);
      const writer = writerFor(cache);
      expect(await countSoil(cache)).toBe(1);
      failing = true;
      expect(await change(writer, [{ id: 'nmdc:bsm-11-b', name: 'Lake soil' }])).toBe(true);
      failing = false;
      expect(await countSoil(cache)).toBe(2);
      expect(computed).toBe(2);
    });

    it('keeps exact counts through a run of random noted writes (differential)', async () => {
      const cache = new CountCache(store);
      const writer = writerFor(cache);
      const filters = [filter, { name: { $regex: '^Lake' } }, { depth: { $gte: 5 } }, {}];
      const counts = () =>
        Promise.all(
          filters.map((f) =>
            cache.count('biosample_set', f, async () => {
              computed++;
              return store.count('biosample_set', f);
            }),
          ),
        );
      let seed = 20261127;
      const random = (n: number) => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        return seed % n;
      };
      const names = ['Lake soil', 'Lake water', 'Soil core', 'Forest litter', 'Peat SOIL'];
      await counts();
      for (let step = 0; step < 120; step++) {
        const id = `nmdc:bsm-11-r${random(12)}`;
        const existing = await store.getById('biosample_set', id);
        if (existing && random(4) === 0) await change(writer, [], [id]);
        else {
          const doc: Doc = { id, name: names[random(names.length)]! };
          if (random(2) === 0) doc.depth = random(10);
          await change(writer, [doc]);
        }
        const exact = await Promise.all(filters.map((f) => store.count('biosample_set', f)));
        expect(await counts()).toEqual(exact);
      }
      // Every write was followed: the first counts were the only ones computed.
      expect(computed).toBe(filters.length);
    });
  });
});
