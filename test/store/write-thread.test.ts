/**
 * The embedded store's writing thread (src/store/sqlite/write-thread.ts): large atomic writes run
 * on a connection of its own, with the same write hooks, while the main thread keeps answering
 * and its own writes wait for the thread's commit.
 */
import Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { generateDatabase } from '../../src/data/generator.ts';
import { SqliteEdgeIndex } from '../../src/provenance/sqlite/edge-index.ts';
import type { Doc } from '../../src/store/port.ts';
import type { WriteThreadOptions } from '../../src/store/sqlite/write-thread.ts';
import { FtsSearchIndex } from '../../search/sqlite/fts-index.ts';
import { RecordWriter } from '../../search/writer.ts';
import { tables } from '../support/store-tables.ts';
import { openTemporaryStore, type TemporaryStore } from '../support/temporary-store.ts';

const ENTRY = new URL('../../src/write-thread.ts', import.meta.url);

interface Embedded extends TemporaryStore {
  search: FtsSearchIndex;
  writer: RecordWriter;
}

const opened: Embedded[] = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map((e) => e.dispose()));
});

/** A store with the service's write hooks, its large writes on the thread when `thread` is given. */
function embedded(thread?: Omit<WriteThreadOptions, 'entry'>, entry = ENTRY): Embedded {
  const temporary = openTemporaryStore();
  const search = FtsSearchIndex.attachTo(temporary.store);
  const edges = SqliteEdgeIndex.attachTo(temporary.store);
  if (thread) temporary.store.offloadAtomicWrites({ entry, ...thread });
  const e = { ...temporary, search, writer: new RecordWriter(temporary.store, [search, edges]) };
  opened.push(e);
  return e;
}

/** Writes `db` as a submission does: prepared (staged) ahead, then one atomic write. */
async function submit(e: Embedded, db: Record<string, Doc[]>): Promise<void> {
  const prepared = e.writer.prepare(Object.entries(db).map(([collection, docs]) => ({ collection, docs })));
  try {
    await e.writer.upsertAll(await prepared.ready);
  } finally {
    prepared.release();
  }
}

const DATABASE = generateDatabase({ studies: 2, biosamples: 60, dataObjects: 300, seed: 5 });

/** DATABASE's data objects as writes of 50 records each (staged one by one, as a submission's are). */
function dataObjectBatches(): Array<{ collection: string; docs: Doc[] }> {
  const docs = DATABASE.data_object_set!;
  return Array.from({ length: docs.length / 50 }, (_, i) => ({
    collection: 'data_object_set',
    docs: docs.slice(i * 50, i * 50 + 50),
  }));
}

/**
 * `writes` as a stream that gives the first `shown` at once and holds the others back until
 * `give` is called; then fails with `fail`, when given, instead of giving them.
 */
function heldBack<T>(writes: T[], shown: number, fail?: Error): { stream: AsyncIterable<T>; give(): void } {
  let give = () => {};
  const given = new Promise<void>((resolve) => (give = resolve));
  async function* stream() {
    yield* writes.slice(0, shown);
    await given;
    if (fail) throw fail;
    yield* writes.slice(shown);
  }
  return { stream: stream(), give };
}

/** Nothing of a failed write is left in `e`'s file (as `before`), and the next large write goes in. */
async function expectNothingLeftAndNextWritten(
  e: Embedded,
  before: Record<string, unknown[]>,
): Promise<void> {
  expect(tables(e.file)).toEqual(before);
  await e.writer.upsertAll([{ collection: 'biosample_set', docs: DATABASE.biosample_set!.slice(0, 50) }]);
  expect(await e.store.count('biosample_set', {})).toBe(50);
}

/** Some of DATABASE's biosamples changed, and new ones. */
function changes(): Doc[] {
  const changed = DATABASE.biosample_set!.slice(0, 20).map((d) => ({
    ...d,
    name: `${String(d.name)} again`,
  }));
  const added = generateDatabase({ studies: 1, biosamples: 15, dataObjects: 0, seed: 9 }).biosample_set!;
  return [...changed, ...added.map((d) => ({ ...d, id: `${d.id}x` }))];
}

describe("the embedded store's writing thread", () => {
  it('writes every table as the store connection itself would, staged or not', async () => {
    const reference = embedded();
    const threaded = embedded({ minRecords: 10 });
    for (const e of [reference, threaded]) {
      await submit(e, DATABASE);
      await e.writer.upsertAll([{ collection: 'biosample_set', docs: changes() }]);
      // Small: written on the store's own connection either way.
      await e.writer.upsert('study_set', [{ ...DATABASE.study_set![0]!, title: 'renamed' }]);
    }
    expect(threaded.store.counters.writesOnThread).toBe(2);
    expect(reference.store.counters.writesOnThread).toBe(0);
    // Nothing was prepared on this thread: the writing thread prepared the staged records.
    expect(threaded.search.counters.preparedAhead).toBe(0);
    // Its workers prepared them for the store too: it parsed only the records posted as texts
    // (collections too small to stage, and the changes).
    const unstaged = Object.values(DATABASE).filter((docs) => docs.length < 10);
    expect(unstaged.length).toBeGreaterThan(0);
    expect(threaded.store.counters.recordsParsedOnThread).toBe(
      unstaged.reduce((n, docs) => n + docs.length, 0) + changes().length,
    );
    const written = tables(threaded.file);
    expect(written.docs!.length).toBe(Object.values(DATABASE).reduce((n, docs) => n + docs.length, 0) + 15);
    expect(written).toEqual(tables(reference.file));
    // And the main thread's reads see the thread's commits at once.
    expect(await threaded.store.getById('biosample_set', DATABASE.biosample_set![0]!.id)).toMatchObject({
      name: `${String(DATABASE.biosample_set![0]!.name)} again`,
    });
    const found = await threaded.search.candidates(
      'biosample_set',
      { kind: 'regex', path: 'name', pattern: 'again$', flags: '' },
      100,
    );
    expect(found.all).toBe(false);
    const ids = found.all ? [] : [...found.ids];
    expect(ids.sort()).toEqual(
      DATABASE.biosample_set!.slice(0, 20)
        .map((d) => d.id)
        .sort(),
    );
  });

  it('leaves nothing of a write that fails inside its transaction, and writes the next one', async () => {
    const threaded = embedded({ minRecords: 10, fault: { afterRecords: 100, kind: 'throw' } });
    const before = tables(threaded.file);
    await expect(submit(threaded, DATABASE)).rejects.toThrow('injected failure after 100 records');
    await expectNothingLeftAndNextWritten(threaded, before);
    expect(threaded.store.counters.writesOnThread).toBe(1);
  });

  it('leaves nothing of a write whose thread dies in it, and frees the file for the next', async () => {
    const threaded = embedded({ minRecords: 10, fault: { afterRecords: 100, kind: 'exit' } });
    const before = tables(threaded.file);
    await expect(submit(threaded, DATABASE)).rejects.toThrow(/writing thread exited/);
    expect(tables(threaded.file)).toEqual(before);
    // The store's own connection can write at once: the dead thread's lock went with it.
    await threaded.store.upsertMany('biosample_set', DATABASE.biosample_set!.slice(0, 3));
    await threaded.store.state.put('kind', 'key', { ok: true });
    expect(await threaded.store.count('biosample_set', {})).toBe(3);
    // A new thread takes the next large write.
    await threaded.writer.upsertAll([
      { collection: 'biosample_set', docs: DATABASE.biosample_set!.slice(3, 50) },
    ]);
    expect(await threaded.store.count('biosample_set', {})).toBe(50);
  });

  it('holds a write open: unseen until finished with the last records, then all of it committed, as written at once', async () => {
    const reference = embedded();
    const threaded = embedded({ minRecords: 10 });
    await submit(reference, DATABASE);
    const prepared = threaded.writer.prepare(
      Object.entries(DATABASE).map(([collection, docs]) => ({ collection, docs })),
    );
    const writes = await prepared.ready;
    const last = writes.pop()!;
    const held = await threaded.writer.hold(writes);
    expect(held).toBeDefined();
    // Nothing of it is seen while it is held, and this process's writes wait for its end.
    expect(await threaded.store.count('biosample_set', {})).toBe(0);
    let waited = false;
    // (A collection the search and edge indexes keep nothing of, so the tables compared below agree.)
    const small = threaded.store.upsertMany('jobs', [{ id: 'waiting' }]).then(() => (waited = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(waited).toBe(false);
    const result = await held!.finish([last]);
    expect(result.inserted).toBe(Object.values(DATABASE).reduce((n, docs) => n + docs.length, 0));
    await small;
    prepared.release();
    await threaded.store.deleteMany('jobs', { id: 'waiting' });
    expect(threaded.store.counters).toMatchObject({ holdsFinished: 1, holdsAborted: 0, writesOnThread: 1 });
    const written = tables(threaded.file);
    const expected = tables(reference.file);
    // The change log and statistics name the waiting record too (written and deleted): the records and indexes agree.
    for (const table of ['docs', 'attr_index', 'search_values', 'search_strings', 'graph_edges'])
      expect(written[table], table).toEqual(expected[table]);
  });

  it('rolls a held write back on abort, and on a failure at its finish, and writes the next one', async () => {
    const threaded = embedded({ minRecords: 10 });
    const before = tables(threaded.file);
    const prepared = threaded.writer.prepare([
      { collection: 'biosample_set', docs: DATABASE.biosample_set! },
    ]);
    const writes = await prepared.ready;
    prepared.release();
    const aborted = await threaded.writer.hold(writes);
    await aborted!.abort();
    await expect(aborted!.abort()).rejects.toThrow('already ended');
    expect(tables(threaded.file)).toEqual(before);
    // Last records that cannot be written (no id; a body SQLite refuses): the whole write is rolled back.
    const refused = await threaded.writer.hold(writes);
    await expect(refused!.finish([{ collection: 'study_set', docs: [{ name: 'no id' }] }])).rejects.toThrow();
    const failing = await threaded.writer.hold(writes);
    await expect(
      failing!.finish([{ collection: 'study_set', docs: [{ id: 'x' }], texts: ['not json'] }]),
    ).rejects.toThrow();
    expect(tables(threaded.file)).toEqual(before);
    expect(threaded.store.counters).toMatchObject({ holdsFinished: 0, writesOnThread: 0 });
    expect(threaded.store.counters.holdsAborted).toBeGreaterThanOrEqual(2);
    await threaded.writer.upsertAll(writes);
    expect(await threaded.store.count('biosample_set', {})).toBe(DATABASE.biosample_set!.length);
  });

  it('leaves nothing of a held write that fails while it is written, and writes the next one', async () => {
    const threaded = embedded({ minRecords: 10, fault: { afterRecords: 100, kind: 'throw' } });
    const before = tables(threaded.file);
    // Staged in batches of 50: the write fails in the third, with later batches not yet reached.
    const prepared = threaded.writer.prepare(dataObjectBatches());
    await expect(threaded.writer.hold(await prepared.ready)).rejects.toThrow(
      'injected failure after 100 records',
    );
    prepared.release();
    await expectNothingLeftAndNextWritten(threaded, before);
  });

  it('stops a held write given up while it is written, leaving nothing of it', async () => {
    const threaded = embedded({ minRecords: 10 });
    await threaded.writer.upsertAll([{ collection: 'study_set', docs: DATABASE.study_set! }]);
    const before = tables(threaded.file);
    const prepared = threaded.writer.prepare(dataObjectBatches());
    const writes = await prepared.ready;
    const giveUp = new AbortController();
    const holding = threaded.writer.hold(writes, giveUp.signal);
    giveUp.abort();
    await expect(holding).rejects.toThrow('abandoned');
    prepared.release();
    expect(threaded.store.counters).toMatchObject({ holdsAborted: 1, holdsFinished: 0 });
    // Given up before it began: refused at once.
    await expect(threaded.writer.hold(writes, giveUp.signal)).rejects.toThrow('abandoned');
    await expectNothingLeftAndNextWritten(threaded, before);
  });

  it('writes a held write as its records come, answers once the last came, and leaves nothing when they fail', async () => {
    const threaded = embedded({ minRecords: 10 });
    const before = tables(threaded.file);
    const prepared = threaded.writer.prepare(dataObjectBatches());
    const writes = await prepared.ready;
    const coming = heldBack(writes, 1);
    let answered = false;
    const holding = threaded.writer.hold(coming.stream).then((held) => ((answered = true), held));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(answered).toBe(false);
    coming.give();
    const held = await holding;
    expect(await held!.finish([])).toEqual({ inserted: 300, updated: 0 });
    expect(await threaded.store.count('data_object_set', {})).toBe(300);
    prepared.release();

    // Records that fail to come: the write is rolled back and the failure thrown.
    const other = embedded({ minRecords: 10 });
    const refusing = other.writer.prepare(dataObjectBatches());
    await refusing.ready;
    const refused = heldBack(writes, 1, new Error('a record has no id'));
    const failing = other.writer.hold(refused.stream);
    refused.give();
    await expect(failing).rejects.toThrow('a record has no id');
    refusing.release();
    expect(other.store.counters).toMatchObject({ holdsFinished: 0, writesOnThread: 0 });
    await expectNothingLeftAndNextWritten(other, before);
  });

  it('fails a held write that fails in its first records at once, without waiting for the rest', async () => {
    const threaded = embedded({ minRecords: 10, fault: { afterRecords: 100, kind: 'throw' } });
    const before = tables(threaded.file);
    const prepared = threaded.writer.prepare(dataObjectBatches());
    // The rest never comes while the write fails.
    const coming = heldBack(await prepared.ready, 3);
    await expect(threaded.writer.hold(coming.stream)).rejects.toThrow('injected failure after 100 records');
    coming.give();
    prepared.release();
    await expectNothingLeftAndNextWritten(threaded, before);
  });

  it('leaves nothing of a held write whose thread dies, and frees the file for the next', async () => {
    const threaded = embedded({ minRecords: 10, fault: { afterRecords: 100, kind: 'exit' } });
    const before = tables(threaded.file);
    const docs = DATABASE.data_object_set!;
    await expect(
      threaded.writer.hold([
        { collection: 'data_object_set', docs, texts: docs.map((d) => JSON.stringify(d)) },
      ]),
    ).rejects.toThrow(/writing thread exited/);
    expect(tables(threaded.file)).toEqual(before);
    await threaded.store.upsertMany('biosample_set', DATABASE.biosample_set!.slice(0, 3));
    expect(await threaded.store.count('biosample_set', {})).toBe(3);
  });

  it("copies its writes' WAL into the file itself after answering, the store's own checkpoints paused until it has", async () => {
    const threaded = embedded({ minRecords: 10 });
    const size = () => fs.statSync(threaded.file).size;
    const before = size();
    const events: string[] = [];
    const pragma = threaded.store.db.pragma.bind(threaded.store.db);
    vi.spyOn(threaded.store.db, 'pragma').mockImplementation((source, options) => {
      if (source.startsWith('wal_autocheckpoint =')) events.push(source);
      return pragma(source, options);
    });
    // Far below the 1,000 pages at which a commit would checkpoint: only the thread's own
    // checkpoint puts these records in the file. Nothing commits on the store's connection.
    await submit(threaded, DATABASE);
    events.push('answered');
    expect(threaded.store.counters.writesOnThread).toBe(1);
    for (let waited = 0; (size() === before || events.length < 3) && waited < 5000; waited += 20)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(size()).toBeGreaterThan(before);
    // Paused before the answer let the store's next commit through; resumed once the thread's is over.
    expect(events[0]).toBe('wal_autocheckpoint = 0');
    expect(events.filter((e) => e !== 'answered')).toEqual([
      'wal_autocheckpoint = 0',
      'wal_autocheckpoint = 1000',
    ]);
    expect(threaded.store.db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
  });

  it('writes on the store connection when the thread cannot start', async () => {
    const broken = embedded({ minRecords: 10 }, new URL('./no-such-module.ts', import.meta.url));
    const reference = embedded();
    for (const e of [broken, reference]) {
      await submit(e, DATABASE);
      await e.writer.upsertAll([{ collection: 'biosample_set', docs: changes() }]);
    }
    expect(broken.store.counters.writesOnThread).toBe(0);
    expect(tables(broken.file)).toEqual(tables(reference.file));
  });

  it('starts the thread and its preparing workers ahead when warmed, so the first write starts none', async () => {
    const threaded = embedded({ minRecords: 10 });
    const threads = () => fs.readdirSync('/proc/self/task').length;
    const before = threads();
    await threaded.store.warmWriteThread();
    // The writing thread and at least one worker preparing its search batches.
    const warmed = threads();
    expect(warmed).toBeGreaterThanOrEqual(before + 2);
    // (Collections of fewer records than the thread takes would be prepared on this thread's own workers.)
    const large = { biosample_set: DATABASE.biosample_set!, data_object_set: DATABASE.data_object_set! };
    await submit(threaded, large);
    expect(threaded.store.counters.writesOnThread).toBe(1);
    expect(threads()).toBe(warmed);
    expect(await threaded.store.count('data_object_set', {})).toBe(DATABASE.data_object_set!.length);
    // A thread that cannot start says so, and the writes stay on the store's connection.
    const broken = embedded({ minRecords: 10 }, new URL('./no-such-module.ts', import.meta.url));
    await expect(broken.store.warmWriteThread()).rejects.toThrow('could not start');
    await submit(broken, large);
    expect(broken.store.counters.writesOnThread).toBe(0);
  });

  it.runIf(process.platform === 'linux')(
    'runs at the nice value it is given, and so do the preparing workers it starts; this thread keeps its own',
    async () => {
      /** The nice value of each thread of this process (field 19 of /proc/self/task/<tid>/stat). */
      const niceValues = () =>
        fs.readdirSync('/proc/self/task').flatMap((tid) => {
          try {
            const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
            return [Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])];
          } catch {
            return []; // a thread that ended meanwhile
          }
        });
      const NICE = 7; // a value nothing else here runs at
      const before = niceValues().filter((n) => n === NICE).length;
      const threaded = embedded({ minRecords: 10, nice: NICE });
      await threaded.store.warmWriteThread();
      // The writing thread and at least one preparing worker it started.
      expect(niceValues().filter((n) => n === NICE).length).toBeGreaterThanOrEqual(before + 2);
      expect(os.getPriority(0)).toBe(0);
      await submit(threaded, { data_object_set: DATABASE.data_object_set! });
      expect(threaded.store.counters.writesOnThread).toBe(1);
      expect(await threaded.store.count('data_object_set', {})).toBe(DATABASE.data_object_set!.length);
      // Without a nice value the thread runs as the process does.
      const plain = embedded({ minRecords: 10 });
      const counted = niceValues().filter((n) => n === NICE).length;
      await plain.store.warmWriteThread();
      expect(niceValues().filter((n) => n === NICE).length).toBe(counted);
    },
  );

  it('keeps the event loop turning while it writes; records are written after it without waiting in SQLite, state at once', async () => {
    const threaded = embedded({ minRecords: 10 });
    // Warm: the thread's start-up is not what this test is about.
    await threaded.writer.upsertAll([{ collection: 'study_set', docs: DATABASE.study_set! }]);
    const many = generateDatabase({ studies: 1, biosamples: 4000, dataObjects: 0, seed: 3 }).biosample_set!;
    const events: string[] = [];
    // What another connection sees committed, at the moment it is asked.
    const reader = new Database(threaded.file, { readonly: true });
    const committed = () =>
      reader.prepare("SELECT count(*) FROM docs WHERE collection = 'biosample_set'").pluck().get() as number;
    let turns = 0;
    let writing = true;
    const turning = (async () => {
      while (writing) {
        turns++;
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    const write = threaded.writer.upsertAll([{ collection: 'biosample_set', docs: many }]).then(() => {
      writing = false;
    });
    // Reads are answered meanwhile, from the last commit.
    expect(await threaded.store.getById('biosample_set', many[0]!.id)).toBeNull();
    events.push(`read answered with ${committed()} committed`);
    // Records written on the store's own connection wait for the thread's commit; state (a file
    // of its own) is written at once.
    const stateWrite = threaded.store.state
      .put('kind', 'key', { n: 1 })
      .then(() => events.push(`state written with ${committed()} committed`));
    const recordWrite = threaded.store
      .upsertMany('study_set', [{ ...DATABASE.study_set![0]!, title: 'meanwhile' }])
      .then(() => events.push(`record written with ${committed()} committed`));
    try {
      await Promise.all([write, stateWrite, recordWrite, turning]);
    } finally {
      reader.close();
    }
    expect(events).toEqual([
      'read answered with 0 committed',
      'state written with 0 committed',
      'record written with 4000 committed',
    ]);
    // Many turns of the event loop passed while the thread wrote.
    expect(turns).toBeGreaterThan(50);
    expect(await threaded.store.count('biosample_set', {})).toBe(4000);
    expect(await threaded.store.state.get('kind', 'key')).toEqual({ n: 1 });
    expect(await threaded.store.getById('study_set', DATABASE.study_set![0]!.id)).toMatchObject({
      title: 'meanwhile',
    });
  });

  it('posts texts of over 4 MiB in parts ahead of the message that names them, and writes as the store would', async () => {
    const reference = embedded();
    const threaded = embedded({ minRecords: 10 });
    // 1,200 biosamples of about 5 KB: 6 MB of texts each way.
    const pad = 'padded '.repeat(700);
    const many: Doc[] = generateDatabase({
      studies: 1,
      biosamples: 1200,
      dataObjects: 0,
      seed: 9,
    }).biosample_set!.map((d) => ({ ...d, description: pad }));
    /** Characters of text in each message posted to the thread, and the kinds posted. */
    const sizes: number[] = [];
    const kinds = new Set<string>();
    const charsOf = (value: unknown): number =>
      typeof value === 'string'
        ? value.length
        : Array.isArray(value)
          ? value.reduce((n: number, v) => n + charsOf(v), 0)
          : value && typeof value === 'object' && !ArrayBuffer.isView(value)
            ? Object.values(value).reduce((n: number, v) => n + charsOf(v), 0)
            : 0;
    const post = Worker.prototype.postMessage;
    const spy = vi.spyOn(Worker.prototype, 'postMessage').mockImplementation(function (
      this: Worker,
      message,
      ...rest
    ) {
      kinds.add((message as { type: string }).type);
      sizes.push(charsOf(message));
      return post.call(this, message, ...rest);
    });
    try {
      for (const e of [reference, threaded]) {
        await e.writer.upsertAll([{ collection: 'biosample_set', docs: many }]);
        // Every record changed if still as written, and the first deleted: a checked change.
        const result = await e.store.writeIfUnchanged({
          expected: many.map((doc) => ({ collection: 'biosample_set', id: doc.id, doc })),
          writes: [
            {
              collection: 'biosample_set',
              docs: many.slice(1).map((d) => ({ ...d, name: `${String(d.name)} v2` })),
            },
          ],
          deletes: [{ collection: 'biosample_set', id: many[0]!.id }],
        });
        expect(result).toEqual({ changed: -1, deleted: 1 });
      }
    } finally {
      spy.mockRestore();
    }
    expect(threaded.store.counters.writesOnThread).toBe(2);
    expect(kinds).toContain('texts');
    expect(Math.max(...sizes)).toBeLessThanOrEqual(4 * 1024 * 1024 + pad.length + 1000);
    expect(tables(threaded.file)).toEqual(tables(reference.file));
    expect(await threaded.store.getById('biosample_set', many[1]!.id)).toMatchObject({
      name: `${String(many[1]!.name)} v2`,
    });
  }, 60_000);
});
