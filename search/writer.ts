/**
 * Writes of metadata records: the source of truth first, then the indexes derived from it (the
 * search index, the provenance edge index), so updates and deletes (from `/queries:run` or the
 * loader) keep search results and lineage exact. With the embedded indexes the store's write hook
 * already wrote them in the same transaction and the second step is a no-op.
 */
import { isDeepStrictEqual } from 'node:util';
import type {
  AtomicWrite,
  CheckedChange,
  CheckedChangeResult,
  DocumentStore,
  Doc,
  Filter,
  ReadModifyWriteDecision,
  RecordKey,
  WriteResult,
} from '../src/store/port.ts';
import type { MaintainedIndex, PreparedAhead } from './port.ts';
import { MAX_NOTED, noteKey, type NotedChange, type WriteNotes } from './count-cache.ts';
import { catchUp } from './maintenance.ts';
import { assertRegexLengths } from './filter-predicates.ts';
import { keyedRecord } from '../src/store/record-keys.ts';
import { cleanDocs } from '../src/store/clean-docs.ts';
import { mapInTurns, nextTurn } from '../src/turns.ts';

/** Records serialised in one turn of the event loop while writes are prepared. */
const SERIALISED_PER_TURN = 250;

/** One collection's records keyed, cleaned and serialised for `upsertAll` (texts included). */
export interface PreparedWrite {
  collection: string;
  docs: Doc[];
  texts: string[];
}

/** Writes being prepared for `upsertAll`, with index work started ahead of it (`RecordWriter.prepare`). */
export interface PreparedWrites {
  /**
   * The writes, once serialised and the work started ahead is done; rejects as the store would
   * for a record that is not an object or has no id.
   */
  ready: Promise<PreparedWrite[]>;
  /**
   * Settles once every write is serialised and its work ahead started (records staged on the
   * store's writing thread are in its hands then), before that work is done.
   */
  serialised: Promise<void>;
  /**
   * Each write as soon as it is serialised and its work ahead started, in order (a hold begins
   * with the first while the others are serialised); fails as `ready` does.
   */
  each: AsyncIterable<PreparedWrite>;
  /** Stops preparing and forgets the work started ahead (call once the write is done or abandoned). */
  release(): void;
}

/** An `upsertAll` held open (`RecordWriter.hold`); end it once, either way. */
export interface HeldWrites {
  finish(
    more: Array<{ collection: string; docs: Array<Doc | Record<string, unknown>>; texts?: string[] }>,
  ): Promise<WriteResult>;
  abort(): Promise<void>;
}

/** Writes with their records keyed (those bringing texts were keyed when serialised). */
function keyedWrites(
  writes: Array<{ collection: string; docs: Array<Doc | Record<string, unknown>>; texts?: string[] }>,
): AtomicWrite[] {
  return writes.map((w) =>
    w.texts
      ? { collection: w.collection, docs: w.docs as Doc[], texts: w.texts }
      : { collection: w.collection, docs: w.docs.map((doc) => keyedRecord(w.collection, doc) as Doc) },
  );
}

/**
 * The records a checked change makes, each as it is (its expected version) and as it will be;
 * none when it makes more than MAX_NOTED or changes a record it does not expect (that change is
 * then not noted, and the counts of its collection are computed again).
 */
function notedChanges(
  expected: Array<{ collection: string; id: string; doc: Doc | null }>,
  writes: Array<{ collection: string; docs: Doc[] }>,
  deletes: RecordKey[],
): NotedChange[] {
  const known = new Map(expected.map((e) => [noteKey(e.collection, e.id), e.doc]));
  const changes: NotedChange[] = [];
  const add = (collection: string, id: string, after: Doc | null): boolean => {
    const key = noteKey(collection, id);
    if (!known.has(key)) return false;
    let stored: Doc | null = null;
    try {
      // As stored: the JSON text's value, without an `_id`.
      if (after !== null) stored = JSON.parse(JSON.stringify(cleanDocs([after])[0])) as Doc;
    } catch {
      return false; // a record the store refuses: it says why, not the note
    }
    changes.push({ collection, id, before: known.get(key) ?? null, after: stored });
    return true;
  };
  // A write CountCache would not note is not normalised either (a submission's 10^5 records).
  if (deletes.length + writes.reduce((n, w) => n + w.docs.length, 0) > MAX_NOTED) return [];
  for (const d of deletes) if (!add(d.collection, d.id, null)) return [];
  for (const w of writes)
    for (const doc of w.docs) if (typeof doc.id !== 'string' || !add(w.collection, doc.id, doc)) return [];
  return changes;
}

export class RecordWriter {
  private readonly indexes: MaintainedIndex[];
  /** Told of the records small checked writes change (cached counts adjust by them). */
  private notes: WriteNotes | undefined;

  constructor(
    private readonly store: DocumentStore,
    indexes: MaintainedIndex | MaintainedIndex[],
  ) {
    this.indexes = Array.isArray(indexes) ? indexes : [indexes];
  }

  /** Tells `notes` of the records each small checked write (`writeIfUnchanged`) changes. */
  observe(notes: WriteNotes): void {
    this.notes = notes;
  }

  /** Upserts by id; records of a collection without ids are kept under a store key. */
  async upsert(collection: string, docs: Array<Doc | Record<string, unknown>>): Promise<WriteResult> {
    return this.upsertAll([{ collection, docs }]);
  }

  /**
   * Upserts into several collections all or nothing (one store transaction, which on the embedded
   * store holds the co-located indexes' writes too), then brings the other indexes up to date.
   */
  async upsertAll(
    writes: Array<{ collection: string; docs: Array<Doc | Record<string, unknown>>; texts?: string[] }>,
  ): Promise<WriteResult> {
    const result = await this.store.upsertAtomically(keyedWrites(writes));
    await this.afterWrite();
    return result;
  }

  /**
   * Begins `upsertAll` of prepared writes and holds it open while the caller decides
   * (`DocumentStore.holdAtomically`): `finish` adds the last records and commits, then the other
   * indexes catch up; `abort` rolls it all back. Undefined when the store cannot hold a write;
   * `signal` gives it up while it is still being written.
   */
  async hold(
    writes: PreparedWrite[] | AsyncIterable<PreparedWrite>,
    signal?: AbortSignal,
  ): Promise<HeldWrites | undefined> {
    const held = await this.store.holdAtomically?.(writes, signal);
    if (!held) return undefined;
    return {
      finish: async (more) => {
        let keyed: ReturnType<typeof keyedWrites>;
        try {
          keyed = keyedWrites(more);
        } catch (err) {
          await held.abort(); // a record that cannot be keyed: nothing is written
          throw err;
        }
        const result = await held.finish(keyed);
        await this.afterWrite();
        return result;
      },
      abort: () => held.abort(),
    };
  }

  /**
   * Keys, cleans and serialises records for a later `upsertAll` (give it the writes `ready`
   * answers), a write at a time as they come, with a turn of the event loop after each, and starts
   * the indexes' work that needs no database on worker threads (`MaintainedIndex.prepareAhead`)
   * meanwhile.
   */
  prepare(
    writes:
      | Iterable<{ collection: string; docs: Array<Doc | Record<string, unknown>> }>
      | AsyncIterable<{ collection: string; docs: Array<Doc | Record<string, unknown>> }>,
  ): PreparedWrites {
    const ahead: PreparedAhead[] = [];
    let released = false;
    const prepared: PreparedWrite[] = [];
    // `each` waits on `progress`, settled (and replaced) whenever a write is added or it all ends.
    let progressed = () => {};
    let progress = new Promise<void>((resolve) => (progressed = resolve));
    const progressing = () => {
      const settle = progressed;
      progress = new Promise<void>((resolve) => (progressed = resolve));
      settle();
    };
    let over = false;
    const serialising = (async () => {
      // Writes may come while they are serialised (a submission's records as its body is read).
      for await (const w of writes) {
        if (released) throw new Error('the prepared writes were released');
        const docs = cleanDocs(w.docs.map((doc) => keyedRecord(w.collection, doc) as Doc));
        // Serialised a few hundred at a time: 2,000 biosamples take about 30 ms.
        const texts = await mapInTurns(docs, SERIALISED_PER_TURN, (doc) => JSON.stringify(doc));
        if (released) throw new Error('the prepared writes were released');
        // The store's own work ahead (its writing thread prepares the indexes there), or else the
        // indexes', prepared here for a write on this thread.
        const staged = this.store.prepareAhead?.(w.collection, texts);
        if (staged) ahead.push(staged);
        else
          for (const index of this.indexes)
            if (index.synchronous && index.prepareAhead && index.covers?.(w.collection) !== false)
              ahead.push(index.prepareAhead(w.collection, texts));
        prepared.push({ collection: w.collection, docs, texts });
        progressing();
        await nextTurn();
      }
      return prepared;
    })();
    const ended = () => {
      over = true;
      progressing();
    };
    serialising.then(ended, ended);
    const ready = serialising.then(async (prepared) => {
      await Promise.all(ahead.map((a) => a.ready));
      return prepared;
    });
    ready.catch(() => {}); // the caller hears of it when it awaits `ready`
    return {
      ready,
      serialised: serialising.then(
        () => undefined,
        () => undefined,
      ),
      each: {
        async *[Symbol.asyncIterator]() {
          for (let next = 0; ;) {
            if (next < prepared.length) yield prepared[next++]!;
            else if (over)
              return void (await serialising); // throws as `ready` does
            else await progress;
          }
        },
      },
      release: () => {
        released = true;
        for (const a of ahead) a.release();
      },
    };
  }

  /** Deletes the records matching `filter` (at most `limit`); returns their ids. */
  async delete(collection: string, filter: Filter, limit?: number): Promise<string[]> {
    assertRegexLengths(filter);
    const ids = await this.store.deleteMany(collection, filter, limit);
    if (ids.length > 0) await this.afterWrite();
    return ids;
  }

  /**
   * The store's read-modify-write (one transaction: the records read, then the decision's deletes
   * and writes, which the embedded indexes follow inside it), then the other indexes catch up.
   * Records of collections without ids must be handed over under their store keys.
   */
  async readModifyWrite<T>(
    keys: RecordKey[],
    decide: (current: Array<Doc | null>) => ReadModifyWriteDecision<T>,
  ): Promise<T> {
    const value = await this.store.readModifyWrite(keys, decide);
    await this.afterWrite();
    return value;
  }

  /**
   * `change` if its records are still as expected (`DocumentStore.writeIfUnchanged`, or the same
   * decision in the store's read-modify-write), then the other indexes catch up.
   */
  async writeIfUnchanged(change: CheckedChange): Promise<CheckedChangeResult> {
    const { expected, writes, deletes } = change;
    const noted = this.notes?.note(notedChanges(expected, writes, deletes));
    try {
      return await this.checkedWrite(change);
    } finally {
      await noted?.settle();
    }
  }

  private async checkedWrite(change: CheckedChange): Promise<CheckedChangeResult> {
    const { expected, writes, deletes } = change;
    const result = this.store.writeIfUnchanged
      ? await this.store.writeIfUnchanged(change)
      : await this.store.readModifyWrite(
          [...expected, ...deletes].map(({ collection, id }) => ({ collection, id })),
          (current): ReadModifyWriteDecision<CheckedChangeResult> => {
            const changed = expected.findIndex((e, i) => !isDeepStrictEqual(current[i] ?? null, e.doc));
            if (changed >= 0) return { writes: [], value: { changed, deleted: 0 } };
            const deleted = current.slice(expected.length).filter((d) => d !== null).length;
            return { writes, deletes, value: { changed: -1, deleted } };
          },
        );
    if (result.changed < 0) await this.afterWrite();
    return result;
  }

  /**
   * Catches the other indexes up with the change log, this call's writes included (one page, so a
   * far-behind index is left to the catch-up loop). They are read back from the store, not taken
   * from the call: an index that keeps versions needs the change sequence they are at least as
   * new as. If this fails the writes stay fresh candidates until a catch-up.
   */
  private async afterWrite(): Promise<void> {
    for (const index of this.indexes) {
      if (index.synchronous) continue;
      await catchUp(this.store, index, { pages: 1 });
    }
  }
}
