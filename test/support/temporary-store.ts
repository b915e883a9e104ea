/**
 * An embedded store in a folder of its own under the system's temporary folder, removed with it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SqliteDocumentStore, type SqliteStoreOptions } from '../../src/store/sqlite/index.ts';

export interface TemporaryStore {
  store: SqliteDocumentStore;
  /** The store's database file (for a second connection to it). */
  file: string;
  /** Closes the store and removes its folder. */
  dispose: () => Promise<void>;
}

export function openTemporaryStore(options: Omit<SqliteStoreOptions, 'file'> = {}): TemporaryStore {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-store-'));
  const file = path.join(dir, 'nmdc.sqlite');
  const store = new SqliteDocumentStore({ ...options, file });
  return {
    store,
    file,
    dispose: async () => {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Runs `run` on a temporary store, then disposes of it whatever happened. */
export async function withTemporaryStore(
  run: (store: SqliteDocumentStore) => Promise<void>,
  options: Omit<SqliteStoreOptions, 'file'> = {},
): Promise<void> {
  const { store, dispose } = openTemporaryStore(options);
  try {
    await run(store);
  } finally {
    await dispose();
  }
}
