/**
 * The EdgeIndex behaviour suite against the embedded adapter: once with records written through
 * the store (the write hook keeps the edges in the same transaction), once through the index's
 * own `index` and `remove` (as a rebuild writes them).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';
import { SqliteEdgeIndex } from '../../src/provenance/sqlite/edge-index.ts';
import { openEdgeIndex } from '../../src/provenance/index.ts';
import { loadConfig } from '../../src/config.ts';
import { edgeIndexBehaviour, biosample1, study, BSM1, STUDY } from './behaviour.ts';

function temporaryStore(): { store: SqliteDocumentStore; dispose: () => Promise<void> } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-edges-'));
  const store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
  return {
    store,
    dispose: async () => {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

edgeIndexBehaviour('SQLite, written through the store', async () => {
  const { store, dispose } = temporaryStore();
  const index = SqliteEdgeIndex.attachTo(store);
  return {
    index,
    upsert: async (collection, docs) => {
      await store.upsertMany(collection, docs);
    },
    remove: async (collection, ids) => {
      await store.deleteMany(collection, { id: { $in: ids } });
    },
    dispose,
  };
});

edgeIndexBehaviour('SQLite, written directly', async () => {
  const { store, dispose } = temporaryStore();
  const index = SqliteEdgeIndex.attachTo(store);
  return {
    index,
    upsert: (collection, docs) => index.index(collection, docs),
    remove: (collection, ids) => index.remove(collection, ids),
    dispose,
  };
});

describe('embedded edge index on open', () => {
  it('builds the edges of the records a store held before the edge index existed, once', async () => {
    const { store, dispose } = temporaryStore();
    try {
      await store.upsertMany('study_set', [study]);
      await store.upsertMany('biosample_set', [biosample1]);
      const config = loadConfig({ LOG_LEVEL: 'silent' });
      const logger = pino({ level: 'silent' });
      const index = await openEdgeIndex(config, store, logger);
      expect(index.engine).toBe('sqlite');
      expect((index as SqliteEdgeIndex).isBuilt()).toBe(true);
      expect(await index.step([BSM1], 'upstream')).toEqual([
        { from: BSM1, to: STUDY, slot: 'associated_studies', type: 'nmdc:Study', collection: 'study_set' },
      ]);
    } finally {
      await dispose();
    }
  });
});
