/**
 * Writes on the embedded store's connection wait for another connection's write lock (another
 * server process on the same file) without holding the event loop (src/store/sqlite/busy.ts), and
 * are refused with 503 once they have waited too long. Short-lived state has a file of its own, so
 * its writes never wait for a write of records.
 */
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { StoreUnavailable } from '../../src/errors.ts';
import { SqliteDocumentStore, type SqliteStoreOptions } from '../../src/store/sqlite/index.ts';
import { stateFileBeside } from '../../src/store/sqlite/state-store.ts';
import { openTemporaryStore, type TemporaryStore } from '../support/temporary-store.ts';

const opened: TemporaryStore[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((t) => t.dispose()));
});

function open(options: Omit<SqliteStoreOptions, 'file'> = {}) {
  const t = openTemporaryStore(options);
  opened.push(t);
  // Another process's connection, holding the write lock until told.
  const other = new Database(t.file);
  return { ...t, other };
}

/** Counts turns of the event loop until `stop`. */
function countTurns(): { stop(): number } {
  let turns = 0;
  let done = false;
  void (async () => {
    while (!done) {
      turns++;
      await new Promise((resolve) => setImmediate(resolve));
    }
  })();
  return {
    stop: () => {
      done = true;
      return turns;
    },
  };
}

describe("writes while another connection holds the store file's write lock", () => {
  it('wait with the event loop turning, then write; state is written at once', async () => {
    const { store, other } = open();
    other.exec('BEGIN IMMEDIATE');
    const turns = countTurns();
    const events: string[] = [];
    const writes = Promise.all([
      store
        .upsertMany('biosample_set', [{ id: 'nmdc:bsm-1', name: 'core' }])
        .then(() => events.push('record')),
      store
        .insertIfAbsent('study_set', { id: 'nmdc:sty-1' })
        .then((inserted) => events.push(`insert ${inserted}`)),
      store.state.put('kind', 'key', { v: 1 }).then(() => events.push('state')),
      store.state.increment('counter', 'key', 60).then((n) => events.push(`increment ${n}`)),
    ]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    events.push('other commits');
    other.exec('COMMIT');
    await writes;
    other.close();
    expect(turns.stop()).toBeGreaterThan(20);
    expect(events.slice(0, 2).sort()).toEqual(['increment 1', 'state']);
    expect(events[2]).toBe('other commits');
    expect(events.slice(3).sort()).toEqual(['insert true', 'record']);
    expect(await store.getById('biosample_set', 'nmdc:bsm-1')).toEqual({ id: 'nmdc:bsm-1', name: 'core' });
    expect(await store.state.get('kind', 'key')).toEqual({ v: 1 });
  });

  it('are refused with StoreUnavailable (503) past the wait, having written nothing', async () => {
    const { store, other, file } = open({ writeWaitMs: 150 });
    other.exec('BEGIN IMMEDIATE');
    const refused = await store
      .upsertAtomically([{ collection: 'biosample_set', docs: [{ id: 'nmdc:bsm-2' }] }])
      .catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(StoreUnavailable);
    expect((refused as StoreUnavailable).retryAfterSeconds).toBe(5);
    expect((refused as StoreUnavailable).detail).toBe(
      'Another write holds the store for now; try again shortly',
    );
    other.exec('COMMIT');
    other.close();
    expect(await store.count('biosample_set', {})).toBe(0);
    await store.upsertAtomically([{ collection: 'biosample_set', docs: [{ id: 'nmdc:bsm-2' }] }]);
    expect(await store.count('biosample_set', {})).toBe(1);
    // The same for the state's own file, held by another connection.
    const otherState = new Database(stateFileBeside(file));
    otherState.exec('BEGIN IMMEDIATE');
    await expect(store.state.delete('kind', 'key')).rejects.toBeInstanceOf(StoreUnavailable);
    otherState.exec('COMMIT');
    otherState.close();
    await store.state.put('kind', 'key', 1);
    expect(await store.state.get('kind', 'key')).toBe(1);
  });

  it("moves the state an older version kept in the records' file into its own file, once", async () => {
    const first = openTemporaryStore();
    opened.push(first);
    await first.store.close();
    // As an older version left it: a state table in the records' file.
    const old = new Database(first.file);
    old.exec(
      'CREATE TABLE state (kind TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, expires_at INTEGER, ' +
        'PRIMARY KEY (kind, key)) WITHOUT ROWID',
    );
    old.prepare('INSERT INTO state VALUES (?, ?, ?, ?)').run('signing-key', 'k1', '{"kid":"k1"}', null);
    old.close();
    for (let round = 0; round < 2; round++) {
      const store = new SqliteDocumentStore({ file: first.file });
      try {
        expect(await store.state.get('signing-key', 'k1')).toEqual({ kid: 'k1' });
        expect(store.db.prepare("SELECT name FROM sqlite_master WHERE name = 'state'").get()).toBeUndefined();
      } finally {
        await store.close();
      }
    }
  });
});
