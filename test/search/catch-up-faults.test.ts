/**
 * Fault tests of an index written outside the store's transaction (Elasticsearch, or FTS5 beside
 * MongoDB), caught up from the change log: an index far behind, and a catch-up that lands while a
 * search is being planned. Searches must never miss a record, and catch-up must not stall. Each
 * runs on FTS5 beside the store and on the Elasticsearch stand-in.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';
import { QueryPlanner } from '../../src/query/planner/planner.ts';
import { FtsSearchIndex } from '../../search/sqlite/fts-index.ts';
import { catchUp, checkCollection, hasDrift } from '../../search/maintenance.ts';
import type { SearchIndex } from '../../search/port.ts';
import { Client } from '@elastic/elasticsearch';
import { ElasticsearchIndex } from '../../search/elasticsearch/elasticsearch-index.ts';
import { ElasticsearchStandIn } from '../support/elasticsearch-stand-in.ts';
import { asDeployed } from '../support/deployed-store.ts';

const C = 'biosample_set';
const base = Array.from({ length: 1000 }, (_, i) => ({
  id: `nmdc:bsm-11-${String(i).padStart(6, '0')}`,
  name: `sample ${i}`,
}));
const needle = { id: 'nmdc:bsm-11-zzzzzz', name: 'the needle of Harvard Forest' };
const byNeedle = { name: { $regex: 'needle of Harvard' } };

interface Variant {
  name: string;
  open(
    store: SqliteDocumentStore,
  ): Promise<{ index: SearchIndex; planned: SqliteDocumentStore; close(): Promise<void> }>;
}

const variants: Variant[] = [
  {
    name: 'FTS5 beside the store',
    open: async (store) => {
      const index = new FtsSearchIndex(new Database(':memory:'), { hooked: false, ownsDatabase: true });
      return { index, planned: store, close: () => index.close() };
    },
  },
  {
    name: 'Elasticsearch (stand-in)',
    open: async (store) => {
      const standIn = await ElasticsearchStandIn.start();
      const index = new ElasticsearchIndex(new Client({ node: standIn.url }), 'nmdc');
      return {
        index,
        planned: asDeployed(store),
        close: async () => {
          await index.close();
          await standIn.close();
        },
      };
    },
  },
];

describe.each(variants)('an index written outside the store transaction: $name', (variant) => {
  let dir: string;
  let store: SqliteDocumentStore;
  let index: SearchIndex;
  let planned: SqliteDocumentStore;
  let close: () => Promise<void>;
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'catch-up-faults-'));
    store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
    ({ index, planned, close } = await variant.open(store));
    await store.upsertMany(C, base);
    await catchUp(store, index);
  });
  afterEach(async () => {
    await close();
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('150,000 changes behind: searches still find the newest write, and one catch-up reads every page', async () => {
    // 150 rounds of updates to the same 1,000 records, then one new record after them all.
    for (let round = 0; round < 150; round++)
      await store.upsertMany(
        C,
        base.map((d) => ({ ...d, name: `${d.name} round ${round}` })),
      );
    await store.upsertMany(C, [needle]);
    const mark = await index.watermark();
    expect((await store.latestSeq()) - mark).toBe(150_001);
    const planner = new QueryPlanner(planned, index);
    const read = vi.spyOn(planned, 'changesSince');
    expect((await planner.find(C, byNeedle)).map((d) => d.id)).toEqual([needle.id]);
    expect(read.mock.calls.filter(([since]) => since === mark)).toHaveLength(1);
    // Found too far behind once, the watermark is not read past again while it stays.
    expect(await planner.count(C, byNeedle)).toBe(1);
    expect((await planner.find(C, byNeedle)).map((d) => d.id)).toEqual([needle.id]);
    expect(read.mock.calls.filter(([since]) => since === mark)).toHaveLength(1);
    read.mockRestore();
    // The first page of the log ends before the new record: the log says more follow.
    const first = await store.changesSince(mark);
    expect(first.more).toBe(true);
    expect(first.changes.map((c) => c.id)).not.toContain(needle.id);

    expect(await catchUp(store, index)).toBe(1000 + 1000 + 1);
    expect(await index.watermark()).toBe(await store.latestSeq());
    expect(hasDrift(await checkCollection(store, index, C))).toBe(false);
    expect((await planner.find(C, byNeedle)).map((d) => d.id)).toEqual([needle.id]);
  }, 60_000);

  it('searches while the index is behind read the log on from where the last one stopped', async () => {
    const mark = await index.watermark();
    const ids = async () => (await planner.find(C, byNeedle)).map((d) => d.id).sort();
    const planner = new QueryPlanner(planned, index);
    const read = vi.spyOn(planned, 'changesSince');
    await store.upsertMany(C, [needle]);
    expect(await ids()).toEqual([needle.id]);
    expect(read.mock.calls.map(([since]) => since)).toContain(mark);
    // A second fresh write: found, and the log is read only past what the first search read.
    const other = { id: 'nmdc:bsm-11-zzzzzy', name: 'another needle of Harvard Forest' };
    await store.upsertMany(C, [other]);
    read.mockClear();
    expect(await ids()).toEqual([other.id, needle.id]);
    expect(read).toHaveBeenCalled();
    for (const [since] of read.mock.calls) expect(since).toBeGreaterThan(mark);
    // A fresh delete is followed too, and a write after it.
    await store.deleteMany(C, { id: needle.id });
    expect(await ids()).toEqual([other.id]);
    await store.upsertMany(C, [needle]);
    expect(await ids()).toEqual([other.id, needle.id]);
    // Once the index catches up, its new watermark is read from.
    await catchUp(store, index);
    const caughtUp = await index.watermark();
    expect(caughtUp).toBeGreaterThan(mark);
    read.mockClear();
    expect(await ids()).toEqual([other.id, needle.id]);
    expect(read.mock.calls.map(([since]) => since)).toContain(caughtUp);
  });

  it('a catch-up landing between the index query and the freshness read cannot hide a record', async () => {
    await store.upsertMany(C, [needle]);
    // The index answers before it has the record; a catch-up (another process) then indexes it
    // and moves the watermark past it before the planner adds the fresh writes.
    const racing: SearchIndex = Object.assign(Object.create(index) as SearchIndex, {
      candidates: async (...args: Parameters<SearchIndex['candidates']>) => {
        const found = await index.candidates(...args);
        await catchUp(store, index);
        return found;
      },
    });
    const planner = new QueryPlanner(planned, racing);
    expect((await planner.find(C, byNeedle)).map((d) => d.id)).toEqual([needle.id]);
  });
});
