import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';
import { FtsSearchIndex, ftsMatchOf } from '../../search/sqlite/fts-index.ts';
import { trigramQueryOf } from '../../search/regex/trigram-query.ts';
import { describeSearchIndex } from './behaviour.ts';

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'search-fts-'));
}

describeSearchIndex('FTS5 in the embedded store (write hook)', async () => {
  const dir = tempDir();
  const store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
  const index = FtsSearchIndex.attachTo(store);
  return {
    index,
    settle: async () => {},
    dispose: async () => {
      await index.close();
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
});

describeSearchIndex('FTS5 in a file of its own', async () => {
  const index = new FtsSearchIndex(new Database(':memory:'), { hooked: false, ownsDatabase: true });
  return { index, settle: async () => {}, dispose: () => index.close() };
});

describe('FTS5 index kept in step by the store', () => {
  it('indexes and unindexes records inside the store write, with no index() call', async () => {
    const dir = tempDir();
    const store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
    const index = FtsSearchIndex.attachTo(store);
    try {
      await store.upsertMany('biosample_set', [
        { id: 'a', name: 'Permafrost thaw gradient' },
        { id: 'b', name: 'Hot spring mat' },
      ]);
      const q = { kind: 'regex' as const, path: 'name', pattern: 'thaw', flags: '' };
      expect(await index.candidates('biosample_set', q, 10)).toEqual({ all: false, ids: new Set(['a']) });
      await store.deleteMany('biosample_set', { id: 'a' });
      expect(await index.candidates('biosample_set', q, 10)).toEqual({ all: false, ids: new Set() });
      expect(index.synchronous).toBe(true);
    } finally {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('rolls the index back with a failed store write', async () => {
    const dir = tempDir();
    const store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
    const index = FtsSearchIndex.attachTo(store);
    try {
      await expect(
        store.upsertMany('biosample_set', [{ id: 'x', name: 'Glacier ice' }, { name: 'no id' } as never]),
      ).rejects.toThrow();
      expect(
        await index.candidates('biosample_set', { kind: 'search', path: 'name', text: 'glacier' }, 10),
      ).toEqual({
        all: false,
        ids: new Set(),
      });
    } finally {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('renders trigram queries as FTS5 MATCH expressions of quoted substrings', () => {
    expect(ftsMatchOf(trigramQueryOf('abc|x"yz'))).toBe('"abc" OR "x""yz"');
    expect(ftsMatchOf(trigramQueryOf('abc.*(def|ghi)'))).toBe('"abc" AND ("def" OR "ghi")');
  });
});
