/**
 * Short-lived shared state in MongoDB: one `_state` collection, unique on (kind, key), with a
 * TTL index on `expiresAt` for the sweep and expiry checked on every read (the TTL monitor
 * runs only once a minute). Every operation carries the store's time limit, and transient
 * engine errors leave as `StoreUnavailable`.
 */
import type { Collection, Db, UpdateFilter } from 'mongodb';
import type { StateStore } from '../port.ts';
import { engine } from './engine-errors.ts';

export const STATE_COLLECTION = '_state';

/** Value fields the OIDC adapter looks records up by. */
const INDEXED_VALUE_FIELDS = ['grantId', 'uid', 'userCode'];

interface StateRecord {
  kind: string;
  key: string;
  value: unknown;
  expiresAt: Date | null;
}

const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export class MongoStateStore implements StateStore {
  private readonly coll: Collection<StateRecord>;

  constructor(
    db: Db,
    private readonly maxTimeMS = 30_000,
  ) {
    this.coll = db.collection<StateRecord>(STATE_COLLECTION);
  }

  async createIndexes(): Promise<void> {
    await this.coll.createIndexes([
      { key: { kind: 1, key: 1 }, name: 'kind_key', unique: true },
      { key: { expiresAt: 1 }, name: 'expiresAt_ttl', expireAfterSeconds: 0 },
      ...INDEXED_VALUE_FIELDS.map((f) => ({
        key: { kind: 1, [`value.${f}`]: 1 },
        name: `kind_value_${f}`,
        partialFilterExpression: { [`value.${f}`]: { $exists: true } },
      })),
    ]);
  }

  private live(): Record<string, unknown> {
    return { $or: [{ expiresAt: null }, { expiresAt: { $gt: new Date() } }] };
  }

  async put(kind: string, key: string, value: unknown, ttlSeconds?: number): Promise<void> {
    const expiresAt = ttlSeconds === undefined ? null : new Date(Date.now() + ttlSeconds * 1000);
    await engine(() =>
      this.coll.replaceOne(
        { kind, key },
        { kind, key, value: value ?? null, expiresAt },
        { upsert: true, maxTimeMS: this.maxTimeMS },
      ),
    );
  }

  async get<T = unknown>(kind: string, key: string): Promise<T | undefined> {
    const found = await engine(() =>
      this.coll.findOne(
        { kind, key, ...this.live() },
        { projection: { _id: 0, value: 1 }, maxTimeMS: this.maxTimeMS },
      ),
    );
    return found ? (found.value as T) : undefined;
  }

  async delete(kind: string, key: string): Promise<void> {
    await engine(() => this.coll.deleteOne({ kind, key }, { maxTimeMS: this.maxTimeMS }));
  }

  private fieldPath(field: string): string {
    if (!FIELD_NAME.test(field)) throw new Error(`invalid state field name ${JSON.stringify(field)}`);
    return `value.${field}`;
  }

  async findBy<T = unknown>(
    kind: string,
    field: string,
    equals: string,
  ): Promise<Array<{ key: string; value: T }>> {
    const filter = { kind, [this.fieldPath(field)]: equals, ...this.live() };
    const rows = await engine(() =>
      this.coll
        .find(filter, {
          projection: { _id: 0, key: 1, value: 1 },
          sort: { key: 1 },
          maxTimeMS: this.maxTimeMS,
        })
        .toArray(),
    );
    return rows.map((r) => ({ key: r.key, value: r.value as T }));
  }

  async deleteBy(kind: string, field: string, equals: string): Promise<number> {
    const filter = { kind, [this.fieldPath(field)]: equals };
    const result = await engine(() => this.coll.deleteMany(filter, { maxTimeMS: this.maxTimeMS }));
    return result.deletedCount;
  }

  async increment(kind: string, key: string, ttlSeconds: number): Promise<number> {
    const now = new Date();
    // The TTL monitor removes expired counters only once a minute; one that has expired is
    // removed here first, so the upsert below starts it again at 1 with a new expiry.
    await engine(() =>
      this.coll.deleteOne({ kind, key, expiresAt: { $lte: now } }, { maxTimeMS: this.maxTimeMS }),
    );
    // Atomic on the server; two processes upserting the same new counter at once are settled by
    // the unique (kind, key) index, the server retrying the loser as an update.
    const counter = await engine(() =>
      this.coll.findOneAndUpdate(
        { kind, key },
        // `value` is typed unknown for every kind; a counter's is a number.
        {
          $inc: { value: 1 },
          $setOnInsert: { expiresAt: new Date(now.getTime() + ttlSeconds * 1000) },
        } as unknown as UpdateFilter<StateRecord>,
        {
          upsert: true,
          returnDocument: 'after',
          projection: { _id: 0, value: 1 },
          maxTimeMS: this.maxTimeMS,
        },
      ),
    );
    return Number(counter?.value ?? 1);
  }
}
