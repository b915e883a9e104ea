/**
 * The embedded store's reading threads: a collection is read on them while it is cold (since the
 * store opened, or after a slow statement on the loop) and for statements larger than a chunk,
 * handing out the same records as its own connection; a thread that fails, or a scan inside a
 * transaction, reads on the loop instead.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Doc, ExecutionStats, FindOptions } from '../../src/store/port.ts';
import { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';
import type { ReadThreads } from '../../src/store/sqlite/read-threads.ts';

const C = 'biosample_set';
const S = 'study_set';
const docs: Doc[] = Array.from({ length: 3000 }, (_, i) => ({
  id: `nmdc:bsm-11-${String(i).padStart(6, '0')}`,
  name: `sample ${i}`,
  ecosystem_category: i % 3 === 0 ? 'Terrestrial' : 'Aquatic',
}));
const studies: Doc[] = Array.from({ length: 60 }, (_, i) => ({
  id: `nmdc:sty-11-${String(i).padStart(3, '0')}`,
}));
/** A body-tested walk for a rare name: it crosses ranges of 256 to 2,048 records. */
const rare = {
  filter: { name: { $regex: '^sample 2999$' } },
  access: {
    path: 'id-walk' as const,
    bodyTest: { sql: "x.body LIKE +? ESCAPE '\\'", params: ['%sample 2999%'] },
  },
};
/** One that ends in the first range. */
const broad = {
  filter: { name: { $regex: 'sample 1' } },
  access: {
    path: 'id-walk' as const,
    bodyTest: { sql: "x.body LIKE +? ESCAPE '\\'", params: ['%sample 1%'] },
  },
};

const readersOf = (store: SqliteDocumentStore) =>
  (store as unknown as { context: { readers?: ReadThreads } }).context.readers!;

/**
 * A body-tested walk whose test of each record's text takes 40 ms once: a slow statement, with
 * every page in memory. `spun` tells whether the test has run.
 */
function slowOnce(store: SqliteDocumentStore) {
  let spun = false;
  store.db.function('spin_once', () => {
    if (!spun) {
      spun = true;
      const until = performance.now() + 40;
      while (performance.now() < until);
    }
    return 1;
  });
  return {
    access: {
      path: 'id-walk' as const,
      bodyTest: { sql: 'spin_once() AND x.body LIKE +?', params: ['%sample%'] },
    },
    spun: () => spun,
  };
}

describe("the store's reading threads", () => {
  let dir: string;
  let file: string;
  /** The same file, read on its connection only. */
  let plain: SqliteDocumentStore;
  const opened: SqliteDocumentStore[] = [];
  const open = () => {
    const store = new SqliteDocumentStore({ file, sweepIntervalMs: 0 });
    opened.push(store);
    return store;
  };

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-read-threads-'));
    file = path.join(dir, 'nmdc.sqlite');
    plain = new SqliteDocumentStore({ file, sweepIntervalMs: 0, readThreads: 0 });
    await plain.upsertMany(C, docs);
    await plain.upsertMany(S, studies);
  });

  afterAll(async () => {
    for (const store of opened) await store.close();
    await plain.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('reads a collection on its threads until a quick read finds it warm, then on the loop', async () => {
    const store = open();
    const warmth = readersOf(store).warmth;
    expect(warmth.cold(C)).toBe(true);
    const options: FindOptions[] = [
      { limit: 25 },
      { skip: 100, limit: 30 },
      { afterId: docs[2000]!.id, limit: 5 },
    ];
    for (const o of options) expect(await store.find(C, {}, o)).toEqual(await plain.find(C, {}, o));
    expect(store.counters.readsOffLoop).toBeGreaterThanOrEqual(1);
    // Warm once quick statements (under 3 ms each) on a thread have read a thousand rows in a row.
    for (let i = 0; i < 20 && warmth.cold(C); i++)
      await store.find(C, {}, { limit: 500, skip: (i * 500) % 2500 });
    expect(warmth.cold(C)).toBe(false);
    // Another collection is still cold: it has not been read.
    expect(warmth.cold(S)).toBe(true);
    const before = store.counters.readsOffLoop;
    expect(await store.find(C, { ecosystem_category: 'Terrestrial' }, { limit: 25 })).toEqual(
      await plain.find(C, { ecosystem_category: 'Terrestrial' }, { limit: 25 }),
    );
    expect(store.counters.readsOffLoop).toBe(before);
  });

  it('walks ranges larger than a chunk on its threads, warm or not, with the same pages and counts', async () => {
    const store = open();
    for (let i = 0; i < 20 && readersOf(store).warmth.cold(C); i++) await store.find(C, {}, { limit: 500 });
    expect(readersOf(store).warmth.cold(C)).toBe(false);
    for (const { filter, access } of [rare, broad]) {
      for (const o of [{ limit: 5 }, { skip: 3, limit: 40 }, {}] as FindOptions[]) {
        const before = store.counters.readsOffLoop;
        const stats: ExecutionStats = { docsExamined: 0, keysExamined: 0, docsParsed: 0 };
        const expectedStats: ExecutionStats = { docsExamined: 0, keysExamined: 0, docsParsed: 0 };
        const label = JSON.stringify({ filter, o });
        expect(await store.find(C, filter, { ...o, access, stats }), label).toEqual(
          await plain.find(C, filter, { ...o, access, stats: expectedStats }),
        );
        expect(stats, label).toEqual(expectedStats);
        // The rare name is past the 1,024-record range: the 2,048 one is read on a thread. The
        // broad name's pages end within 1,024 records, on the loop.
        if (filter === rare.filter) expect(store.counters.readsOffLoop, label).toBeGreaterThan(before);
        else if (o.limit !== undefined) expect(store.counters.readsOffLoop, label).toBe(before);
      }
    }
  });

  it("reads a cold collection's sorted walk ahead on a thread, with the same pages", async () => {
    const store = open();
    // A slow statement on the loop that read from disk begins a spell that nothing ends early.
    readersOf(store).warmth.tookOnLoop(C, 1000, true);
    expect(readersOf(store).warmth.cold(C)).toBe(true);
    const filter = { ecosystem_category: 'Terrestrial' };
    for (const [skip, limit, direction] of [
      [0, 25, 1],
      [0, 25, -1],
      [600, 30, 1],
    ] as const) {
      const options: FindOptions = { sort: [['name', direction]], skip, limit };
      const before = { ...store.counters };
      expect(await store.find(C, filter, options)).toEqual(await plain.find(C, filter, options));
      expect(store.counters.sortedIndexWalks).toBe(before.sortedIndexWalks + 1);
      // The walk's slices were read on a thread first (nothing else in a sorted walk is).
      expect(store.counters.readsOffLoop, JSON.stringify(options)).toBeGreaterThan(before.readsOffLoop);
    }
  });

  it('reads a few records at random places when a collection is first asked about, and takes it as warm when they are quick', async () => {
    // One read of the probe that a busy machine makes slower than 3 ms gives up on it: a few
    // stores, each probed once, for one whose probe ended the spell.
    let warmed: SqliteDocumentStore | undefined;
    for (let attempt = 0; attempt < 3 && !warmed; attempt++) {
      const store = open();
      const { warmth } = readersOf(store);
      expect(warmth.cold(C)).toBe(true);
      const until = Date.now() + 2000;
      while (warmth.cold(C) && warmth.inOpeningSpell(C) && Date.now() < until)
        await new Promise((resolve) => setTimeout(resolve, 5));
      if (!warmth.cold(C)) warmed = store;
    }
    expect(warmed).toBeDefined();
    // Nothing of the collection read by a scan: the probe decided.
    expect(warmed!.counters.readsOffLoop).toBe(0);
  });

  it('starts no thread once the store is closed (a probe under way would hold the file open)', async () => {
    const store = new SqliteDocumentStore({ file, sweepIntervalMs: 0 });
    const readers = readersOf(store);
    expect(readers.warmth.cold(C)).toBe(true); // starts a probe
    await store.close();
    await expect(readers.all('SELECT count(*) FROM docs', [], true)).rejects.toThrow('the store is closed');
  });

  it('reads on the loop when a thread fails, and inside a transaction', async () => {
    const store = open();
    const readers = readersOf(store);
    const all = readers.all.bind(readers);
    readers.all = () => Promise.reject(new Error('the thread exited'));
    try {
      expect(readers.warmth.cold(C)).toBe(true);
      expect(await store.find(C, rare.filter, { access: rare.access })).toEqual(
        await plain.find(C, rare.filter, { access: rare.access }),
      );
      expect(await store.find(C, {}, { limit: 25 })).toEqual(await plain.find(C, {}, { limit: 25 }));
      expect(await store.count(C, { ecosystem_category: 'Terrestrial' })).toBe(1000);
      expect(store.counters.readsOffLoop).toBe(0);
    } finally {
      readers.all = all;
    }
    // deleteMany scans inside its write transaction, where a scan cannot wait for a thread: the
    // cold collection's records are read on the loop.
    expect(readers.warmth.cold(S)).toBe(true);
    const deleted = await store.deleteMany(S, { id: { $gte: studies[50]!.id } });
    expect(deleted).toEqual(studies.slice(50).map((d) => d.id));
    expect(store.counters.readsOffLoop).toBe(0);
    expect(await plain.find(S, {})).toEqual(studies.slice(0, 50));
  });

  it('takes a collection as warm after quick reads in a row, and as cold after a slow statement on the loop', () => {
    const store = open();
    const { warmth } = readersOf(store);
    // Cold from the first time it is asked about.
    for (const c of [C, S, 'data_object_set']) expect(warmth.cold(c)).toBe(true);
    warmth.tookOnThread(C, 1, 600);
    warmth.tookOnThread(C, 0.5, 0);
    warmth.tookOnThread(C, 1, 300);
    expect(warmth.cold(C)).toBe(true);
    // One that took a little longer (a busy machine) neither counts nor starts the count again.
    warmth.tookOnThread(C, 5, 200);
    expect(warmth.cold(C)).toBe(true);
    // A slow one (the disk) starts it again.
    warmth.tookOnThread(C, 40, 200);
    warmth.tookOnThread(C, 1, 900);
    expect(warmth.cold(C)).toBe(true);
    warmth.tookOnThread(C, 1, 100);
    expect(warmth.cold(C)).toBe(false);
    // Or after 16 quick statements that found records, however few.
    for (let i = 0; i < 15; i++) warmth.tookOnThread('data_object_set', 1, 5);
    expect(warmth.cold('data_object_set')).toBe(true);
    warmth.tookOnThread('data_object_set', 1, 5);
    expect(warmth.cold('data_object_set')).toBe(false);
    // By collection.
    expect(warmth.cold(S)).toBe(true);
    warmth.tookOnThread(S, 2, 1000);
    expect([warmth.cold(C), warmth.cold(S)]).toEqual([false, false]);
    warmth.tookOnLoop(C, 25, true);
    expect(warmth.cold(C)).toBe(false);
    // Slow without reading from disk: a busy machine, not a cold file.
    warmth.tookOnLoop(C, 45, false);
    expect(warmth.cold(C)).toBe(false);
    warmth.tookOnLoop(C, 45, true);
    expect([warmth.cold(C), warmth.cold(S)]).toEqual([true, false]);
    // Quick reads do not end a spell a slow statement began.
    warmth.tookOnThread(C, 1, 1000);
    expect(warmth.cold(C)).toBe(true);
  });

  it('takes a statement on the loop that was slow without reading from disk for a busy machine', async () => {
    const store = open();
    const { warmth } = readersOf(store);
    const slow = slowOnce(store);
    await store.find(C, {}, { limit: 1 });
    warmth.shownWarm(C);
    expect(warmth.cold(C)).toBe(false);
    const { access } = slow;
    const filter = { name: { $regex: 'sample' } };
    const before = store.counters.readsOffLoop;
    expect(await store.find(C, filter, { limit: 5, access })).toEqual(
      await plain.find(C, filter, { limit: 5 }),
    );
    expect(slow.spun()).toBe(true);
    // Read on the loop (its first range is small), slow, and the collection is still warm.
    expect(store.counters.readsOffLoop).toBe(before);
    expect(warmth.cold(C)).toBe(false);
  });

  it('asks the process what it read from disk at most every 5 ms, and after a slow statement', async () => {
    const store = open();
    const { warmth } = readersOf(store);
    await store.find(C, {}, { limit: 1 });
    warmth.shownWarm(C);
    const asked = vi.spyOn(process, 'resourceUsage');
    const told = vi.spyOn(warmth, 'tookOnLoop');
    try {
      const started = performance.now();
      for (let i = 0; i < 200; i++) await store.find(C, { name: { $ne: `sample ${i}` } }, { limit: 2 });
      const ms = performance.now() - started;
      // 200 statements on the loop, each once timed; the process is asked for a count at most
      // once in 5 ms, and none was slow enough to be told of.
      expect(asked.mock.calls.length).toBeLessThanOrEqual(Math.ceil(ms / 5) + 1);
      expect(told).not.toHaveBeenCalled();
      const slow = slowOnce(store);
      await store.find(C, { name: { $regex: 'sample' } }, { limit: 5, access: slow.access });
      expect(slow.spun()).toBe(true);
      expect(told).toHaveBeenCalledTimes(1);
      expect(told.mock.calls[0]![0]).toBe(C);
      expect(told.mock.calls[0]![1]).toBeGreaterThan(30);
      expect(told.mock.calls[0]![2]).toBe(false);
    } finally {
      asked.mockRestore();
      told.mockRestore();
    }
  });

  it('ends a spell 10 s after it began, the first one too', () => {
    vi.useFakeTimers({ toFake: ['performance'] });
    try {
      const store = open();
      const { warmth } = readersOf(store);
      vi.advanceTimersByTime(60_000); // time since opening does not count, only since first asked
      expect(warmth.cold(C)).toBe(true);
      vi.advanceTimersByTime(9_900);
      expect(warmth.cold(C)).toBe(true);
      vi.advanceTimersByTime(200);
      expect(warmth.cold(C)).toBe(false);
      warmth.tookOnLoop(C, 45, true);
      vi.advanceTimersByTime(9_900);
      expect(warmth.cold(C)).toBe(true);
      vi.advanceTimersByTime(200);
      expect(warmth.cold(C)).toBe(false);
    } finally {
      vi.useRealTimers();
    }
  });
});
