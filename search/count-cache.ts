/**
 * Remembers exact match counts of recent filters. Counting a broad text search means verifying
 * every match, and every page of the same query asks again; the count only changes when a record
 * of that collection is written. The store's change log (shared by every server process) says
 * which collections were written since the counts were taken, so a cached count is never stale
 * past the next lookup; entries also expire, each after its own time between half of `ttlMs` and
 * `ttlMs`, as a bound: counts computed together (a burst of new queries, a warm-up) then expire
 * apart, not in one second in which every request waits on the recounts. Requests that ask for the same
 * count while it is being computed wait for that computation instead of starting their own (an
 * expired broad count asked by many requests at once would otherwise be computed by each).
 * A count the store can read cheaply off its indexes is asked for with `countIfCheap`, which a
 * planner may do before choosing how to read a page: it shares and caches such counts, and never
 * waits for a full count.
 *
 * A small write noted by its writer (`note`: each record as it was and as the write leaves it)
 * adjusts the counts of its collection instead of dropping them: each count moves by the records
 * that match now less those that matched before, by the same compiled filter the store verifies
 * with. A broad count at 10^6 records costs tens of milliseconds to a second; a stream of small
 * writes (a record renamed, a site's update) would otherwise have every page of every cached
 * query count again. A change is taken as noted only when exactly one note and one change name
 * its record, and the record is now as the note left it; any other change of the collection (a
 * write another process made, one not noted, one made twice at once) drops its counts, as before.
 */
import { compileFilter } from '../src/store/filter.ts';
import type { Change, Doc, DocumentStore, Filter } from '../src/store/port.ts';

/** A record a write is about to change: as it is now, and as the write leaves it (null: absent). */
export interface NotedChange {
  collection: string;
  id: string;
  before: Doc | null;
  after: Doc | null;
}

/** What a writer tells cached counts of the records it is about to change (`CountCache.note`). */
export interface WriteNotes {
  /** Notes a write's changes before it is made; `settle` once it is done, whether it was made or not. */
  note(changes: NotedChange[]): { settle(): Promise<void> };
}

/** Records a write may note at most: a larger one has its collections' counts computed again. */
export const MAX_NOTED = 100;
/**
 * Filter tests one collection's adjustment makes at most (changes x counts kept, a few microseconds
 * each); past it, the counts are computed again instead.
 */
const MAX_TESTS = 2_000;

interface Entry {
  n: number;
  until: number;
  collection: string;
  filter: Filter;
}

interface Note {
  token: object;
  change: NotedChange;
  /** The record's stored text once written (JSON of its stored form), null when deleted. */
  text: string | null;
}

/** A record's key among the notes. */
export const noteKey = (collection: string, id: string) => `${collection}\u0000${id}`;

export class CountCache {
  private readonly counts = new Map<string, Entry>();
  /** Notes of writes not settled yet, by record. */
  private readonly notes = new Map<string, Note[]>();
  /** The change-log catch-up under way: one at a time, so no change adjusts a count twice. */
  private catchingUp: Promise<void> = Promise.resolve();
  /**
   * Counts being computed: concurrent requests for the same count share one computation. A cheap
   * one (`countIfCheap`) may decline and resolve undefined.
   */
  private readonly pending = new Map<string, { cheap: boolean; n: Promise<number | undefined> }>();
  private seenSeq: number | undefined;

  constructor(
    private readonly store: DocumentStore,
    private readonly ttlMs = 10_000,
    private readonly maxEntries = 1000,
  ) {}

  /** The count of `filter`, cached or computed by `compute`. */
  async count(collection: string, filter: Filter, compute: () => Promise<number>): Promise<number> {
    const key = await this.keyOf(collection, filter);
    const hit = this.cached(key);
    if (hit !== undefined) return hit;
    const running = this.pending.get(key);
    if (running) {
      const shared = await running.n;
      if (shared !== undefined) return shared;
    }
    return (await this.start(key, collection, filter, false, compute))!;
  }

  /**
   * The count of `filter` when it is cached or `compute` can count it cheaply (it resolves
   * undefined when it cannot); never waits for a full count being computed, which only runs
   * because the cheap way declined.
   */
  async countIfCheap(
    collection: string,
    filter: Filter,
    compute: () => Promise<number | undefined>,
  ): Promise<number | undefined> {
    const key = await this.keyOf(collection, filter);
    const hit = this.cached(key);
    if (hit !== undefined) return hit;
    const running = this.pending.get(key);
    if (running) return running.cheap ? running.n : undefined;
    return this.start(key, collection, filter, true, compute);
  }

  private async keyOf(collection: string, filter: Filter): Promise<string> {
    await this.forgetWritten();
    return `${collection}\u0000${JSON.stringify(filter)}`;
  }

  private cached(key: string): number | undefined {
    const hit = this.counts.get(key);
    return hit && Date.now() < hit.until ? hit.n : undefined;
  }

  private start(
    key: string,
    collection: string,
    filter: Filter,
    cheap: boolean,
    compute: () => Promise<number | undefined>,
  ): Promise<number | undefined> {
    const n = this.computeAndKeep(key, collection, filter, compute).finally(() => {
      if (this.pending.get(key)?.n === n) this.pending.delete(key);
    });
    this.pending.set(key, { cheap, n });
    return n;
  }

  private async computeAndKeep(
    key: string,
    collection: string,
    filter: Filter,
    compute: () => Promise<number | undefined>,
  ): Promise<number | undefined> {
    const seqBefore = this.seenSeq;
    const n = await compute();
    if (n === undefined) return n;
    // Only keep the count if nothing was written while it was computed.
    await this.forgetWritten();
    if (this.seenSeq === seqBefore) {
      if (this.counts.size >= this.maxEntries) this.counts.delete(this.counts.keys().next().value!);
      const until = Date.now() + this.ttlMs * (0.5 + Math.random() / 2);
      this.counts.set(key, { n, until, collection, filter });
    }
    return n;
  }

  /**
   * Notes the records a write is about to change (at most MAX_NOTED; a larger write notes nothing).
   * `settle`, once the write is done or failed, reads the change log (adjusting the counts by the
   * changes noted) and forgets the notes.
   */
  note(changes: NotedChange[]): { settle(): Promise<void> } {
    const token = {};
    if (changes.length <= MAX_NOTED)
      for (const change of changes) {
        const key = noteKey(change.collection, change.id);
        const text = change.after === null ? null : JSON.stringify(change.after);
        this.notes.set(key, [...(this.notes.get(key) ?? []), { token, change, text }]);
      }
    return {
      settle: async () => {
        try {
          await this.forgetWritten();
        } catch {
          // The write stands; the next lookup reads the log again (the notes are spent by then,
          // so what they covered is counted again rather than adjusted twice).
        } finally {
          for (const [key, notes] of this.notes) {
            const left = notes.filter((n) => n.token !== token);
            if (left.length === 0) this.notes.delete(key);
            else if (left.length < notes.length) this.notes.set(key, left);
          }
        }
      },
    };
  }

  /**
   * Brings the counts up to the change log: adjusted by the noted changes, dropped for the
   * collections written otherwise. One catch-up at a time.
   */
  private forgetWritten(): Promise<void> {
    const run = this.catchingUp.then(() => this.catchUp());
    this.catchingUp = run.catch(() => {});
    return run;
  }

  private async catchUp(): Promise<void> {
    if (this.seenSeq === undefined) {
      // First use: start from the newest change; nothing is cached yet.
      this.seenSeq = await this.store.latestSeq();
      return;
    }
    // No more changes than could adjust a count are read at once.
    const { changes, seq, gap, more } = await this.store.changesSince(this.seenSeq, MAX_TESTS);
    if (gap) {
      // Changes were pruned before this cache saw them: any count may be stale.
      this.counts.clear();
      this.seenSeq = seq;
      return;
    }
    if (more) {
      // More changes than could adjust a count (a large write): every count goes, and the rest
      // are not read. Reading them all to learn which collections they touched held the event
      // loop (10^5 changes of a submission: 0.8-0.9 s in each server process, as it answered);
      // counts live seconds anyway.
      this.counts.clear();
      this.seenSeq = Math.max(seq, await this.store.latestSeq());
      return;
    }
    if (changes.length === 0 && seq === this.seenSeq) return;
    const byCollection = new Map<string, Change[]>();
    for (const c of changes) {
      const list = byCollection.get(c.collection);
      if (list) list.push(c);
      else byCollection.set(c.collection, [c]);
    }
    for (const [collection, written] of byCollection) await this.follow(collection, written);
    this.seenSeq = seq;
  }

  /** Adjusts the counts of `collection` by its changes when each was noted, else drops them. */
  private async follow(collection: string, written: Change[]): Promise<void> {
    const entries = [...this.counts].filter(([, e]) => e.collection === collection);
    if (entries.length === 0) {
      for (const c of written) this.notes.delete(noteKey(collection, c.id)); // spent
      return;
    }
    const noted = await this.notedChanges(collection, written);
    if (noted === undefined || noted.length * entries.length > MAX_TESTS) {
      for (const [key] of entries) this.counts.delete(key);
      return;
    }
    for (const [key, e] of entries) {
      const test = compileFilter(e.filter);
      let n = e.n;
      for (const { before, after } of noted)
        n += (after !== null && test(after) ? 1 : 0) - (before !== null && test(before) ? 1 : 0);
      if (n >= 0) e.n = n;
      else this.counts.delete(key); // cannot happen for a count that was exact
    }
  }

  /**
   * The noted changes behind `written` (their notes are spent), each record as stored before and
   * after; undefined when any change was not noted exactly once, or its record is not now as its
   * note left it (another write came between).
   */
  private async notedChanges(
    collection: string,
    written: Change[],
  ): Promise<Array<{ before: Doc | null; after: Doc | null }> | undefined> {
    const found: Note[] = [];
    let exact = true;
    const seen = new Set<string>();
    for (const c of written) {
      const key = noteKey(collection, c.id);
      const notes = this.notes.get(key);
      if (seen.has(key) || notes?.length !== 1) exact = false;
      else found.push(notes[0]!);
      seen.add(key);
      this.notes.delete(key);
    }
    if (!exact) return undefined;
    const out: Array<{ before: Doc | null; after: Doc | null }> = [];
    // Only a store that gives its records' stored text (the embedded one) can say a record is as noted.
    if (!this.store.getTextById) return undefined;
    for (const { change, text } of found) {
      if ((await this.store.getTextById(collection, change.id)) !== text) return undefined;
      out.push({ before: change.before, after: text === null ? null : (JSON.parse(text) as Doc) });
    }
    return out;
  }
}
