/**
 * The MongoDB change log: which records changed since a reader last looked (search index and
 * edge index catch-up, the planner's fresh ids, the count cache), numbered so that a reader can
 * remember where it stopped.
 *
 * One entry per record (`_id` = collection and id): a write sets it to "changed, not yet
 * numbered" (`seq: null`) in the writer's own transaction. Writers touch only their records'
 * entries, so they never serialize on a shared counter. A numbered position comes later:
 * `seal` takes the entries not yet numbered and gives them the next sequence numbers, in one
 * transaction with the counter document. Sealers (readers, a few per process at most) are the
 * only ones that write the counter, and a sealer that collides with another leaves the work to
 * it. Because sealing transactions serialize on the counter, a sequence number is never handed
 * out below one a reader has already seen, and a record written again after it was sealed goes
 * back to "not yet numbered" and gets a new, higher number. Every read seals first, so a reader
 * sees every write acknowledged before it asked.
 *
 * Failover: entries and the counter are written with a majority write concern and read with a
 * majority read concern. A reader therefore never sees a write or a sealing that a failover
 * could roll back, and a sequence number rolled back and handed out again was never seen by
 * anyone: no change can hide behind a reader's position.
 *
 * Entries older than the newest `retained` sequence numbers are pruned; a reader asking from
 * before the pruned mark is told it has a gap (it rebuilds). An older layout (one entry per write
 * with an ObjectId `_id`, numbered by the same counter) reads the same way and is pruned in time.
 */
import type { ClientSession, Db, MongoClient } from 'mongodb';
import { StoreUnavailable } from '../../errors.ts';
import type { Change, ChangePage } from '../port.ts';
import { runTransaction, type TransactionPolicy } from './transactions.ts';

export const CHANGES_COLLECTION = '_changes';
export const COUNTERS_COLLECTION = '_counters';
/** The counter document of the change log's sequence numbers. */
const SEQUENCE = 'changes';
/** The document holding the newest sequence number pruned. */
const PRUNED = 'changes-pruned';
/** Change-log entries one `changesSince` answers at most. */
export const CHANGES_PAGE = 100_000;
/** Entries numbered by one sealing transaction, at most. */
const SEAL_BATCH = 5_000;

/**
 * What a sealing did: `done` (nothing committed before it is left waiting), `partial` (a full
 * batch was sealed, more wait) or `collided` (another sealer got there first, or it failed).
 */
type Sealing = 'done' | 'partial' | 'collided';

const MAJORITY = { level: 'majority' } as const;

interface ChangeEntry {
  /** `changeKey(collection, id)` (an ObjectId in the older layout). */
  _id: string;
  collection: string;
  id: string;
  deleted: boolean;
  /** Null until sealed. */
  seq: number | null;
  /** Order among entries not yet sealed: the writer's clock, made increasing per process. */
  t: number;
}

interface CounterDoc {
  _id: string;
  seq: number;
}

/** The `_id` of a record's change-log entry. */
export function changeKey(collection: string, id: string): string {
  return `${collection}\u0000${id}`;
}

let lastT = 0;
/** An increasing number from the clock (microsecond steps), for the order of entries not yet sealed. */
function nextT(): number {
  lastT = Math.max(lastT + 1, Date.now() * 1000);
  return lastT;
}

export interface ChangeLogOptions {
  /** Sequence numbers kept for readers; older entries are pruned. */
  retained: number;
  /** Entries one `changesSince` answers at most. */
  page: number;
  /** Time limit of each read (maxTimeMS). */
  maxTimeMS: number;
  policy: TransactionPolicy;
  /** Whether the deployment runs transactions (a standalone server, explicitly allowed, does not). */
  transactions: boolean;
}

export class MongoChangeLog {
  private sealing: Promise<Sealing> | undefined;
  private queued: Promise<Sealing> | undefined;

  constructor(
    private readonly db: Db,
    private readonly client: MongoClient | undefined,
    private readonly options: ChangeLogOptions,
  ) {}

  private get entries() {
    return this.db.collection<ChangeEntry>(CHANGES_COLLECTION);
  }

  private get counters() {
    return this.db.collection<CounterDoc>(COUNTERS_COLLECTION);
  }

  async init(): Promise<void> {
    await this.entries.createIndex({ seq: 1, t: 1 }, { name: 'seq_t' });
  }

  /** Marks records changed, in the writer's transaction (their entries wait to be sealed). */
  async record(
    collection: string,
    ids: string[],
    deleted: boolean,
    session: ClientSession | undefined,
  ): Promise<void> {
    if (ids.length === 0) return;
    await this.entries.bulkWrite(
      ids.map((id) => ({
        replaceOne: {
          filter: { _id: changeKey(collection, id) },
          replacement: { collection, id, deleted, seq: null, t: nextT() },
          upsert: true,
        },
      })),
      { ordered: true, session },
    );
  }

  /**
   * Numbers the entries not yet sealed (up to a batch) that were committed before the call. One
   * sealing at a time per process: a caller that arrives while one runs waits for the next, which
   * starts after it (the running one may not see the caller's writes).
   */
  seal(): Promise<Sealing> {
    if (!this.sealing) {
      this.sealing = this.sealOnce().finally(() => (this.sealing = undefined));
      return this.sealing;
    }
    this.queued ??= this.sealing
      .catch(() => undefined)
      .then(() => {
        this.queued = undefined;
        return this.seal();
      });
    return this.queued;
  }

  /** Seals batch after batch until nothing is left waiting, or a sealing collides. */
  private async sealAll(): Promise<Sealing> {
    for (let batches = 0; batches <= this.options.page / SEAL_BATCH; batches++) {
      const state = await this.seal();
      if (state !== 'partial') return state;
    }
    return 'partial';
  }

  private async sealOnce(): Promise<Sealing> {
    // Only entries a majority holds: one a failover could roll back is left for later.
    const waiting = await this.entries.findOne(
      { seq: null },
      { projection: { _id: 1 }, readConcern: MAJORITY, maxTimeMS: this.options.maxTimeMS },
    );
    if (!waiting) return 'done';
    const number = async (session: ClientSession | undefined): Promise<Sealing> => {
      const counter = await this.counters.findOne({ _id: SEQUENCE }, { session });
      const batch = await this.entries
        .find({ seq: null }, { projection: { _id: 1 }, sort: { seq: 1, t: 1 }, limit: SEAL_BATCH, session })
        .toArray();
      if (batch.length === 0) return 'done';
      let seq = counter?.seq ?? 0;
      await this.entries.bulkWrite(
        batch.map((e) => ({
          updateOne: { filter: { _id: e._id, seq: null }, update: { $set: { seq: ++seq } } },
        })),
        { ordered: true, session },
      );
      await this.counters.updateOne({ _id: SEQUENCE }, { $set: { seq } }, { upsert: true, session });
      return batch.length < SEAL_BATCH ? 'done' : 'partial';
    };
    try {
      if (!this.options.transactions || !this.client) return await number(undefined);
      // One try: a sealer that collides with another leaves the work to it.
      return await runTransaction(this.client, number, { ...this.options.policy, attempts: 1 });
    } catch {
      return 'collided';
    }
  }

  /** The newest sequence number handed out (after sealing what is waiting). */
  async latestSeq(): Promise<number> {
    await this.sealAll();
    return this.counterValue();
  }

  private async counterValue(): Promise<number> {
    const counter = await this.counters.findOne(
      { _id: SEQUENCE },
      { readConcern: MAJORITY, maxTimeMS: this.options.maxTimeMS },
    );
    return counter?.seq ?? 0;
  }

  async changesSince(sinceSeq: number, limit = this.options.page): Promise<ChangePage> {
    const allSealed = (await this.sealAll()) === 'done';
    const page = Math.max(1, Math.min(limit, this.options.page));
    // One entry past the page tells whether more follow.
    const rows = await this.entries
      .find(
        { seq: { $gt: sinceSeq } },
        {
          projection: { _id: 0, collection: 1, id: 1, deleted: 1, seq: 1 },
          sort: { seq: 1 },
          limit: page + 1,
          readConcern: MAJORITY,
          maxTimeMS: this.options.maxTimeMS,
        },
      )
      .toArray();
    // Read after the entries: a prune that raced with the read is seen.
    const pruned = await this.counters.findOne(
      { _id: PRUNED },
      { readConcern: MAJORITY, maxTimeMS: this.options.maxTimeMS },
    );
    if (sinceSeq < (pruned?.seq ?? 0)) return { changes: [], seq: await this.counterValue(), gap: true };
    let more = rows.length > page;
    if (more) rows.length = page;
    const latest = new Map<string, Change>();
    const note = (r: Pick<ChangeEntry, 'collection' | 'id' | 'deleted'>) => {
      const key = changeKey(r.collection, r.id);
      latest.delete(key);
      latest.set(key, { collection: r.collection, id: r.id, deleted: r.deleted });
    };
    for (const r of rows) note(r);
    const seq = rows.length > 0 ? rows[rows.length - 1]!.seq! : sinceSeq;
    if (!allSealed && !more) {
      // Writes the sealing left waiting (it collided, or there were many) are changes too;
      // they come again, numbered, once sealed.
      const room = page - rows.length;
      const waiting = await this.entries
        .find(
          { seq: null },
          {
            projection: { _id: 0, collection: 1, id: 1, deleted: 1 },
            sort: { seq: 1, t: 1 },
            limit: room + 1,
            readConcern: MAJORITY,
            maxTimeMS: this.options.maxTimeMS,
          },
        )
        .toArray();
      if (waiting.length > room) {
        // More waiting than a page holds, and none of them numbered: the reader could neither
        // read on from a position nor be handed them all. Rare (sealing collided again and
        // again); the caller retries.
        if (seq === sinceSeq)
          throw new StoreUnavailable(
            'The change log is being numbered by other processes; try again shortly',
            1,
          );
        more = true;
        waiting.length = room;
      }
      for (const w of waiting) note(w);
    }
    const out: ChangePage = { changes: [...latest.values()], seq };
    if (more) out.more = true;
    return out;
  }

  /**
   * Removes entries older than the newest `retained` sequence numbers. The pruned mark is written
   * (majority) before the entries go, so a reader whose position they were learns it has a gap.
   */
  async prune(): Promise<number> {
    const latest = await this.counterValue();
    const pruned = await this.counters.findOne({ _id: PRUNED }, { readConcern: MAJORITY });
    const upTo = latest - this.options.retained;
    if (upTo <= (pruned?.seq ?? 0)) return 0;
    await this.counters.updateOne(
      { _id: PRUNED },
      { $max: { seq: upTo } },
      { upsert: true, writeConcern: { w: 'majority' } },
    );
    const { deletedCount } = await this.entries.deleteMany({ seq: { $lte: upTo } });
    return deletedCount;
  }
}
