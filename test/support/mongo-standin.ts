/**
 * An in-process MongoDB stand-in, strict where the store's correctness depends on the server and
 * the driver: it is handed to the adapters in place of a `MongoClient`, and answers the driver
 * calls they make with MongoDB's query semantics from mingo (through the project's filter
 * compiler, which sees ObjectIds and dates as strings that order as they do), and with:
 *
 * - multi-version storage: every committed write gets a version; transactions read a snapshot
 *   (plus their own writes) and fail with `WriteConflict` (label `TransientTransactionError`)
 *   when they write a document another transaction holds or that changed after their snapshot;
 *   unique indexes refuse duplicates (E11000) and a transaction writing a key another has
 *   pending gets a write conflict; a plain write waits for a transaction holding its document;
 * - sessions as the driver allows them: one operation at a time in a transaction (a second one
 *   started while the first is in flight is a `StandInViolation`, and the transaction is aborted),
 *   no read or write concern on an operation inside a transaction, no use after `endSession`,
 *   no transactions on a standalone server, no `count` or `$collStats` in a transaction;
 * - replication: writes are majority-committed at once unless `holdReplication()`; then they are
 *   visible to `local` reads only, majority write concerns wait (or time out with `wtimeoutMS`),
 *   and `failover()` rolls them back, failing the writers waiting for them;
 * - fail points like the server's `failCommand` (`failNext`): injected errors with codes and
 *   labels (`WriteConflict`, `NotWritablePrimary`, `TransientTransactionError`, ...), and slow
 *   operations that `maxTimeMS` cuts short (`MaxTimeMSExpired`);
 * - limits: BSON documents up to 16 MB, and single replies (`distinct`) up to `maxReplyBytes`
 *   (16 MB as on the server; lowered by tests to reach it with a small data set); at most 64
 *   indexes per collection, and `createIndexes` refusing a name or a key an existing index has
 *   with the other differing (IndexKeySpecsConflict, IndexOptionsConflict), as the server does;
 * - index use for sorts: a find whose sort no index's keys give (forwards or backwards) sorts in
 *   memory, and the log says which (`sortIndex`); such a sort holding more than
 *   `sortMemoryBytes` (100 MB) fails with QueryExceededMemoryLimitNoDiskUseAllowed when neither
 *   the find's `allowDiskUse` nor `allowDiskUseByDefault` (true from MongoDB 6.0) allows a spill;
 * - `$collStats` answering one document per shard when the topology is `sharded`.
 *
 * Every operation is logged (`log`), with the options that matter (`maxTimeMS`, concerns,
 * whether it ran in a transaction), and every `$regex` that reached the server is kept (`regexes`).
 * The driver's own retries (retryable reads and writes) are not modelled: an injected error is
 * what the driver would surface after them.
 */
import { BSON, MongoServerError, ObjectId } from 'mongodb';
import { Aggregator, find as mingoFind, update as mingoUpdate } from 'mingo';
import { compileFilter } from '../../src/store/filter.ts';
import { compareKeys, sortKeyOf } from '../../src/store/ordering.ts';

type Row = Record<string, unknown>;
type Topology = 'replicaSet' | 'standalone' | 'sharded';

/** Use of the driver or server that the real ones refuse or leave undefined. */
export class StandInViolation extends Error {
  override name = 'StandInViolation';
}

// ---------------------------------------------------------------------------------------------
// Values: documents are cloned through BSON (as on the wire); ObjectIds are compared as strings.

const OID = '\u0007oid:';
const DATE = '\u0008date:';
const MAX_BSON = 16 * 1024 * 1024;

function isPlain(v: unknown): v is Row {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
}

/**
 * The value as the matcher sees it: ObjectIds and dates as tagged strings that order as they do
 * (the project's filter compiler reads JSON values only), the rest as is.
 */
function matchView(v: unknown): unknown {
  if (v instanceof ObjectId) return OID + v.toHexString();
  if (v instanceof Date) return DATE + v.toISOString();
  if (Array.isArray(v)) return v.map(matchView);
  if (isPlain(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, matchView(x)]));
  return v;
}

/** The value as sorting sees it: also dates as numbers. */
function sortView(v: unknown): unknown {
  if (v instanceof Date) return v.getTime();
  if (v instanceof ObjectId) return OID + v.toHexString();
  if (Array.isArray(v)) return v.map(sortView);
  if (isPlain(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, sortView(x)]));
  return v;
}

function fromView(v: unknown): unknown {
  if (typeof v === 'string' && v.startsWith(OID)) return ObjectId.createFromHexString(v.slice(OID.length));
  if (typeof v === 'string' && v.startsWith(DATE)) return new Date(v.slice(DATE.length));
  if (Array.isArray(v)) return v.map(fromView);
  if (isPlain(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fromView(x)]));
  return v;
}

function bsonSize(doc: Row): number {
  return BSON.calculateObjectSize(doc);
}

/** A copy as the server would store or return it; refuses documents over 16 MB as the driver does. */
function clone(doc: Row): Row {
  const bytes = BSON.serialize(doc);
  if (bytes.length > MAX_BSON) throw serverError(10334, 'BSONObjectTooLarge', `object to insert too large`);
  return BSON.deserialize(bytes) as Row;
}

/** A string naming a value exactly (type included), for keys and index entries. */
function keyOf(id: unknown): string {
  if (typeof id === 'string') return `s${id}`;
  if (typeof id === 'number') return `n${id}`;
  if (id === null || id === undefined) return 'null';
  if (id instanceof ObjectId) return `o${id.toHexString()}`;
  return BSON.EJSON.stringify({ id }, { relaxed: false });
}

/**
 * A predicate for the simple filters the adapters send most (top-level fields equal to plain
 * values or `$in` of them, null matching a missing field, arrays matching by element), decided
 * by exact value keys; undefined for any other filter (the filter compiler decides those).
 */
function simplePredicate(filter: Row): ((doc: Row) => boolean) | undefined {
  const plain = (x: unknown) =>
    x === null ||
    typeof x === 'string' ||
    typeof x === 'number' ||
    typeof x === 'boolean' ||
    x instanceof ObjectId;
  const tests: Array<[string, Set<string>]> = [];
  for (const [field, condition] of Object.entries(filter)) {
    if (field.startsWith('$') || field.includes('.')) return undefined;
    if (plain(condition)) tests.push([field, new Set([keyOf(condition)])]);
    else if (isPlain(condition) && Object.keys(condition).length === 1 && Array.isArray(condition.$in)) {
      if (!condition.$in.every(plain)) return undefined;
      tests.push([field, new Set(condition.$in.map(keyOf))]);
    } else return undefined;
  }
  return (doc) =>
    tests.every(([field, keys]) => {
      const value = doc[field];
      if (keys.has(keyOf(value ?? null))) return true;
      return Array.isArray(value) && value.some((v) => keys.has(keyOf(v)));
    });
}

/**
 * A projection of top-level fields only (inclusion or exclusion, `_id` either way); undefined
 * for dotted paths or operators (mingo projects those).
 */
function simpleProjection(projection: Row): ((doc: Row) => Row) | undefined {
  const entries = Object.entries(projection);
  if (
    entries.some(
      ([k, v]) => k.includes('.') || k.startsWith('$') || (v !== 0 && v !== 1 && v !== true && v !== false),
    )
  )
    return undefined;
  const included = entries.filter(([k, v]) => k !== '_id' && (v === 1 || v === true)).map(([k]) => k);
  const idOut = projection._id === 0 || projection._id === false;
  if (included.length > 0) {
    return (doc) => {
      const out: Row = {};
      if (!idOut && '_id' in doc) out._id = doc._id;
      for (const k of included) if (k in doc) out[k] = doc[k];
      return out;
    };
  }
  const excluded = new Set(entries.filter(([, v]) => v === 0 || v === false).map(([k]) => k));
  return (doc) => Object.fromEntries(Object.entries(doc).filter(([k]) => !excluded.has(k)));
}

function serverError(
  code: number,
  codeName: string,
  errmsg: string,
  labels: string[] = [],
): MongoServerError {
  return new MongoServerError({ ok: 0, code, codeName, errmsg, errorLabels: labels });
}

const writeConflict = () =>
  serverError(112, 'WriteConflict', 'Write conflict during plan execution and yielding is disabled.', [
    'TransientTransactionError',
  ]);
const noSuchTransaction = () =>
  serverError(251, 'NoSuchTransaction', 'Transaction has been aborted.', ['TransientTransactionError']);
const maxTimeExpired = () => serverError(50, 'MaxTimeMSExpired', 'operation exceeded time limit');

/** Regexes in a filter, as the server would receive them. */
function regexesIn(node: unknown, out: string[]): void {
  if (Array.isArray(node)) for (const n of node) regexesIn(n, out);
  else if (node instanceof RegExp) out.push(node.source);
  else if (isPlain(node)) {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$regex' && typeof v === 'string') out.push(v);
      else regexesIn(v, out);
    }
  }
}

/** Fields an upsert's new document starts with: the filter's equality conditions. */
function seedOf(filter: Row): Row {
  const out: Row = {};
  for (const [k, v] of Object.entries(filter)) {
    if (k === '$and' && Array.isArray(v)) Object.assign(out, ...v.map((c) => seedOf(c as Row)));
    else if (k.startsWith('$')) continue;
    else if (isPlain(v) && Object.keys(v).some((x) => x.startsWith('$'))) {
      if ('$eq' in v) out[k] = v.$eq;
    } else out[k] = v;
  }
  return out;
}

function applyUpdate(doc: Row, update: Row, inserting: boolean): Row {
  if (Array.isArray(update)) throw new StandInViolation('pipeline updates are not modelled by the stand-in');
  const keys = Object.keys(update);
  if (keys.length === 0 || keys.some((k) => !k.startsWith('$')))
    throw Object.assign(new Error('Update document requires atomic operators'), {
      name: 'MongoInvalidArgumentError',
    });
  const { $setOnInsert, ...rest } = update as { $setOnInsert?: Row } & Row;
  const out = structuredCloneRow(doc);
  const modifier = { ...rest } as Row;
  if (inserting && $setOnInsert) modifier.$set = { ...((modifier.$set as Row) ?? {}), ...$setOnInsert };
  // Top-level $set, $inc and $max directly; anything else through mingo's updater.
  const direct = Object.entries(modifier).every(
    ([op, fields]) =>
      ['$set', '$inc', '$max'].includes(op) && Object.keys(fields as Row).every((f) => !f.includes('.')),
  );
  if (!direct) {
    if (Object.keys(modifier).length > 0)
      mingoUpdate(out, modifier, undefined, undefined, { cloneMode: 'deep' });
    return out;
  }
  for (const [field, value] of Object.entries((modifier.$set as Row) ?? {})) out[field] = value;
  for (const [field, value] of Object.entries((modifier.$inc as Row) ?? {}))
    out[field] = ((out[field] as number | undefined) ?? 0) + (value as number);
  for (const [field, value] of Object.entries((modifier.$max as Row) ?? {})) {
    const current = out[field];
    if (current === undefined || compareKeys([sortView(value)], [sortView(current)], [['v', 1]]) > 0)
      out[field] = value;
  }
  return out;
}

function structuredCloneRow(doc: Row): Row {
  return BSON.deserialize(BSON.serialize(doc)) as Row;
}

// ---------------------------------------------------------------------------------------------
// Storage.

interface Version {
  v: number;
  doc: Row | null;
}

interface UniqueIndex {
  name: string;
  fields: string[];
}

/**
 * A transaction as the driver (`client`) and the server (`server`) each see it: the server may
 * abort it (a conflict, a failover) while the driver still thinks it in progress, and then
 * answers its next operation with NoSuchTransaction.
 */
class Txn {
  client: 'starting' | 'in_progress' | 'committed' | 'aborted' = 'starting';
  server: 'none' | 'open' | 'committed' | 'aborted' = 'none';
  snapshot = 0;
  /** Writes by namespace and document key (null: deleted). */
  readonly writes = new Map<string, Map<string, Row | null>>();
  readonly locks = new Set<string>();
  /** Unique-index entries of its own writes: lock name -> document key. */
  readonly uniqueOwners = new Map<string, string>();
  /** Why the server aborted it, if it did. */
  abortedBy: 'conflict' | 'failover' | 'violation' | 'error' | undefined;
  committedAt: number | undefined;
  constructor(readonly options: Row) {}
}

export interface FailPoint {
  /** Operation names (driver method names, `commitTransaction`, `abortTransaction`); all when absent. */
  ops?: string[];
  collection?: string;
  /** Error to answer with: a server code, its name and labels. */
  error?: { code: number; codeName: string; labels?: readonly string[]; message?: string };
  /** Delay before answering, in milliseconds (cut short by the operation's maxTimeMS). */
  delayMs?: number;
  /** How many operations it applies to; default 1. */
  times?: number;
  /** Only operations inside (true) or outside (false) a transaction. */
  inTransaction?: boolean;
}

export interface LoggedOp {
  op: string;
  collection: string;
  inTransaction: boolean;
  session: boolean;
  maxTimeMS?: number;
  readConcern?: unknown;
  writeConcern?: unknown;
  filter?: unknown;
  /** A find's sort: the index whose key order gives it, or null when it was sorted in memory. */
  sortIndex?: string | null;
}

/** Errors the stand-in answers with, by name, for `failNext`. */
export const ERRORS = {
  WriteConflict: { code: 112, codeName: 'WriteConflict', labels: ['TransientTransactionError'] },
  NotWritablePrimary: { code: 10107, codeName: 'NotWritablePrimary', labels: ['RetryableWriteError'] },
  PrimarySteppedDown: { code: 189, codeName: 'PrimarySteppedDown', labels: ['RetryableWriteError'] },
  InterruptedDueToReplStateChange: {
    code: 11602,
    codeName: 'InterruptedDueToReplStateChange',
    labels: ['RetryableWriteError'],
  },
  NoSuchTransaction: { code: 251, codeName: 'NoSuchTransaction', labels: ['TransientTransactionError'] },
  MaxTimeMSExpired: { code: 50, codeName: 'MaxTimeMSExpired', labels: [] },
  ExceededTimeLimit: { code: 262, codeName: 'ExceededTimeLimit', labels: [] },
  InternalError: { code: 1, codeName: 'InternalError', labels: [] },
} as const;

export class StandInServer {
  readonly log: LoggedOp[] = [];
  readonly regexes: string[] = [];
  /** Largest single reply (`distinct`), in bytes. */
  maxReplyBytes = MAX_BSON;
  /** Most bytes of documents a sort without an index holds (the server's 100 MB). */
  sortMemoryBytes = 100 * 1024 * 1024;
  /** Whether a sort over `sortMemoryBytes` spills to disk unless a find says otherwise (MongoDB >= 6.0). */
  allowDiskUseByDefault = true;
  /** Shards `$collStats` answers for when the topology is `sharded`. */
  shards = 2;
  /** Write conflicts the server answered with (not counting injected ones). */
  conflicts = 0;
  private version = 0;
  private majority = 0;
  private replicating = true;
  private readonly rolledBack = new Set<number>();
  private readonly data = new Map<string, Map<string, Map<string, Version[]>>>();
  /**
   * Keys of documents that ever had a value at a top-level field (any version, any transaction's
   * writes), by namespace and field: a superset that narrows reads by equality. Built on first use.
   */
  private readonly byField = new Map<string, Map<string, Map<string, Set<string>>>>();
  /** Unique index entries of the latest committed documents: namespace, index, value -> key. */
  private readonly uniqueEntries = new Map<string, Map<string, Map<string, string>>>();
  private readonly uniques = new Map<string, UniqueIndex[]>();
  private readonly indexSpecs = new Map<string, Row[]>();
  private readonly locks = new Map<string, Txn>();
  private readonly active = new Set<Txn>();
  private readonly acks: Array<{ v: number; resolve: () => void; reject: (e: Error) => void }> = [];
  private readonly failPoints: FailPoint[] = [];

  constructor(readonly topology: Topology = 'replicaSet') {}

  /** A client of this server (each service process has its own). */
  client(): StandInClient {
    return new StandInClient(this);
  }

  // -- test controls ---------------------------------------------------------------------------

  /** Fails (or delays) the next matching operations. */
  failNext(point: FailPoint): void {
    this.failPoints.push({ times: 1, ...point });
  }

  /** Writes from now on reach the primary only: `local` reads see them, majority waits for them. */
  holdReplication(): void {
    this.replicating = false;
  }

  /** The secondaries catch up: every write so far is majority-committed, and replication flows again. */
  replicate(): void {
    this.replicating = true;
    this.advanceMajority(this.version);
  }

  /**
   * The primary fails before its latest writes reached a majority: a new primary takes over
   * without them (they are rolled back), writers waiting for them fail, and transactions in
   * progress are aborted.
   */
  failover(): void {
    for (const colls of this.data.values()) {
      for (const docs of colls.values()) {
        for (const [key, history] of docs) {
          while (history.length > 0 && history[history.length - 1]!.v > this.majority) {
            this.rolledBack.add(history.pop()!.v);
          }
          if (history.length === 0) docs.delete(key);
        }
      }
    }
    for (const ns of this.uniques.keys()) this.reindexUniques(ns);
    for (const txn of this.active) this.abort(txn, 'failover');
    this.replicating = true;
    const waiting = this.acks.splice(0);
    for (const w of waiting)
      w.reject(
        serverError(11602, 'InterruptedDueToReplStateChange', 'operation was interrupted', [
          'RetryableWriteError',
        ]),
      );
  }

  /** The documents of a collection as a `local` read sees them (for assertions). */
  peek(db: string, collection: string): Row[] {
    return [...this.visible(db, collection, { at: this.version }).values()].map(clone);
  }

  // -- storage ---------------------------------------------------------------------------------

  private coll(db: string, collection: string): Map<string, Version[]> {
    let colls = this.data.get(db);
    if (!colls) this.data.set(db, (colls = new Map()));
    let docs = colls.get(collection);
    if (!docs) colls.set(collection, (docs = new Map()));
    return docs;
  }

  collectionNames(db: string): string[] {
    const names = new Set<string>();
    for (const [name, docs] of this.data.get(db) ?? []) {
      if ([...docs.values()].some((h) => h.length > 0)) names.add(name);
    }
    for (const ns of this.indexSpecs.keys()) if (ns.startsWith(`${db}.`)) names.add(ns.slice(db.length + 1));
    return [...names].sort();
  }

  dropDatabase(db: string): void {
    this.data.delete(db);
    for (const ns of [...this.indexSpecs.keys()]) if (ns.startsWith(`${db}.`)) this.indexSpecs.delete(ns);
    for (const map of [this.uniques, this.uniqueEntries, this.byField])
      for (const ns of [...map.keys()]) if (ns.startsWith(`${db}.`)) map.delete(ns);
  }

  private latest(history: Version[] | undefined, at: number): Version | undefined {
    if (!history) return undefined;
    for (let i = history.length - 1; i >= 0; i--) if (history[i]!.v <= at) return history[i];
    return undefined;
  }

  /**
   * Documents visible at a version, with a transaction's own writes over them; only those with
   * the given keys when `keys` is given.
   */
  visible(
    db: string,
    collection: string,
    read: { at: number; txn?: Txn },
    keys?: Iterable<string>,
  ): Map<string, Row> {
    const out = new Map<string, Row>();
    const docs = this.coll(db, collection);
    const own = read.txn?.writes.get(`${db}.${collection}`);
    if (keys) {
      for (const key of new Set(keys)) {
        const doc = own?.has(key) ? own.get(key) : this.latest(docs.get(key), read.at)?.doc;
        if (doc) out.set(key, doc);
      }
      return out;
    }
    for (const [key, history] of docs) {
      const doc = this.latest(history, read.at)?.doc;
      if (doc) out.set(key, doc);
    }
    for (const [key, doc] of own ?? []) {
      if (doc) out.set(key, doc);
      else out.delete(key);
    }
    return out;
  }

  /** Keys whose documents may have one of these values at a top-level field (a superset). */
  keysWithValues(ns: string, field: string, values: unknown[]): string[] {
    const map = this.fieldIndex(ns, field);
    return values.flatMap((v) => [...(map.get(keyOf(v)) ?? [])]);
  }

  private fieldIndex(ns: string, field: string): Map<string, Set<string>> {
    let fields = this.byField.get(ns);
    if (!fields) this.byField.set(ns, (fields = new Map()));
    let map = fields.get(field);
    if (map) return map;
    fields.set(field, (map = new Map()));
    const [db, ...rest] = ns.split('.');
    for (const [key, history] of this.coll(db!, rest.join('.')))
      for (const { doc } of history) this.noteValue(map, key, doc, field);
    for (const txn of this.active)
      for (const [key, doc] of txn.writes.get(ns) ?? []) this.noteValue(map, key, doc, field);
    return map;
  }

  private valueKeys(doc: Row | null, field: string): string[] {
    if (!doc) return [];
    const value = doc[field];
    return (Array.isArray(value) ? [value, ...value] : [value]).map((v) => keyOf(v ?? null));
  }

  private noteValue(map: Map<string, Set<string>>, key: string, doc: Row | null, field: string): void {
    for (const k of this.valueKeys(doc, field)) {
      let keys = map.get(k);
      if (!keys) map.set(k, (keys = new Set()));
      keys.add(key);
    }
  }

  /** Notes a document version in the field indexes built so far. */
  private noteDoc(ns: string, key: string, doc: Row | null): void {
    for (const [field, map] of this.byField.get(ns) ?? []) this.noteValue(map, key, doc, field);
  }

  readVersion(level: string | undefined): number {
    return level === 'majority' || level === 'snapshot' ? this.majority : this.version;
  }

  private advanceMajority(to: number): void {
    this.majority = Math.max(this.majority, to);
    for (let i = this.acks.length - 1; i >= 0; i--) {
      if (this.acks[i]!.v <= this.majority) this.acks.splice(i, 1)[0]!.resolve();
    }
  }

  /** Applies writes as one committed version; answers it. */
  private commitWrites(writes: Array<{ ns: string; key: string; doc: Row | null }>): number {
    const v = ++this.version;
    const written: Array<[string, string, Version[]]> = [];
    for (const { ns, key, doc } of writes) {
      const [db, ...rest] = ns.split('.');
      const docs = this.coll(db!, rest.join('.'));
      let history = docs.get(key);
      if (!history) docs.set(key, (history = []));
      const before = history[history.length - 1]?.doc ?? null;
      history.push({ v, doc });
      this.indexDoc(ns, key, before, doc);
      written.push([ns, key, history]);
    }
    if (this.replicating) this.advanceMajority(v);
    for (const [ns, key, history] of written) this.trim(ns, key, history);
    return v;
  }

  /** Keeps the narrowing map and the unique entries in step with a document's latest version. */
  private indexDoc(ns: string, key: string, before: Row | null, after: Row | null): void {
    this.noteDoc(ns, key, after);
    for (const u of this.uniques.get(ns) ?? []) {
      const entries = this.uniqueMap(ns, u.name);
      if (before) {
        const old = this.uniqueValue(before, u.fields);
        if (entries.get(old) === key) entries.delete(old);
      }
      if (after) entries.set(this.uniqueValue(after, u.fields), key);
    }
  }

  private uniqueMap(ns: string, name: string): Map<string, string> {
    let byIndex = this.uniqueEntries.get(ns);
    if (!byIndex) this.uniqueEntries.set(ns, (byIndex = new Map()));
    let entries = byIndex.get(name);
    if (!entries) byIndex.set(name, (entries = new Map()));
    return entries;
  }

  /** Builds the unique entries of a namespace again from the latest documents (after a rollback or a new index). */
  private reindexUniques(ns: string): void {
    this.uniqueEntries.delete(ns);
    const [db, ...rest] = ns.split('.');
    for (const [key, doc] of this.visible(db!, rest.join('.'), { at: this.version }))
      for (const u of this.uniques.get(ns) ?? [])
        this.uniqueMap(ns, u.name).set(this.uniqueValue(doc, u.fields), key);
  }

  /**
   * Drops versions no reader can see any more (older than every snapshot and the majority
   * point), and the field index entries only they had.
   */
  private trim(ns: string, key: string, history: Version[]): void {
    let floor = this.majority;
    for (const t of this.active) floor = Math.min(floor, t.snapshot);
    let keepFrom = 0;
    for (let i = 0; i < history.length; i++) if (history[i]!.v <= floor) keepFrom = i;
    if (keepFrom === 0) return;
    const dropped = history.splice(0, keepFrom);
    for (const [field, map] of this.byField.get(ns) ?? []) {
      const kept = new Set<string>();
      for (const { doc } of history) for (const k of this.valueKeys(doc, field)) kept.add(k);
      for (const { doc } of dropped)
        for (const k of this.valueKeys(doc, field)) if (!kept.has(k)) map.get(k)?.delete(key);
    }
  }

  /** Waits until version `v` is majority-committed (or rolled back, or `wtimeoutMS` passes). */
  async awaitMajority(v: number, writeConcern: Row | undefined): Promise<void> {
    const w = writeConcern?.w ?? 'majority';
    if (w !== 'majority' || this.majority >= v) return;
    await new Promise<void>((resolve, reject) => {
      const entry = { v, resolve, reject };
      this.acks.push(entry);
      const wtimeout = writeConcern?.wtimeoutMS ?? writeConcern?.wtimeout;
      if (typeof wtimeout === 'number') {
        setTimeout(() => {
          const i = this.acks.indexOf(entry);
          if (i < 0) return;
          this.acks.splice(i, 1);
          reject(serverError(64, 'WriteConcernFailed', 'waiting for replication timed out'));
        }, wtimeout).unref();
      }
    });
  }

  // -- indexes ---------------------------------------------------------------------------------

  createIndexes(ns: string, specs: Row[]): string[] {
    const existing = this.indexSpecs.get(ns) ?? [];
    const names: string[] = [];
    const sameKey = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
    for (const spec of specs) {
      const key = spec.key as Row;
      const name =
        (spec.name as string) ??
        Object.entries(key)
          .map(([k, d]) => `${k}_${String(d)}`)
          .join('_');
      names.push(name);
      const named = existing.find((e) => e.name === name);
      if (named && !sameKey(named.key, key))
        throw serverError(
          86,
          'IndexKeySpecsConflict',
          `An existing index has the same name as the requested index. Requested index: ${JSON.stringify({ key, name })}, existing index: ${JSON.stringify(named)}`,
        );
      if (named) continue;
      const keyed = existing.find((e) => sameKey(e.key, key));
      if (keyed)
        throw serverError(
          85,
          'IndexOptionsConflict',
          `Index already exists with a different name: ${String(keyed.name)}`,
        );
      // The _id index counts towards the 64.
      if (existing.length + 1 >= 64)
        throw serverError(
          67,
          'CannotCreateIndex',
          `add index fails, too many indexes for ${ns} key:${JSON.stringify(key)}`,
        );
      existing.push({ ...spec, name });
      if (spec.unique) {
        const list = this.uniques.get(ns) ?? [];
        list.push({ name, fields: Object.keys(key) });
        this.uniques.set(ns, list);
        this.reindexUniques(ns);
      }
    }
    this.indexSpecs.set(ns, existing);
    return names;
  }

  dropIndex(ns: string, name: string): void {
    if (name === '_id_') throw serverError(72, 'InvalidOptions', 'cannot drop _id index');
    const existing = this.indexSpecs.get(ns) ?? [];
    const at = existing.findIndex((e) => e.name === name);
    if (at < 0) throw serverError(27, 'IndexNotFound', `index not found with name [${name}]`);
    const [gone] = existing.splice(at, 1);
    if (gone!.unique) {
      this.uniques.set(
        ns,
        (this.uniques.get(ns) ?? []).filter((u) => u.name !== name),
      );
      this.reindexUniques(ns);
    }
  }

  /**
   * The index whose key order gives `sort`, walked forwards or backwards (its leading keys are
   * the sort's paths, every direction equal or every one reversed); null: none, a sort in memory.
   * (The server can also use an index whose leading keys an equality fixes: not modelled, the
   * stand-in is stricter there. A multikey index gives a sort only when the filter puts no
   * bounds on its array path, and the server's planner may prefer another index and sort in
   * memory: not modelled either, the stand-in is laxer there.)
   */
  sortIndex(ns: string, sort: Array<[string, 1 | -1]>): string | null {
    for (const index of this.indexes(ns)) {
      const key = Object.entries(index.key as Row) as Array<[string, number]>;
      if (key.length < sort.length || sort.length === 0) continue;
      if (sort.some(([path], i) => key[i]![0] !== path)) continue;
      const sign = key[0]![1] * sort[0]![1];
      if (sort.every(([, d], i) => key[i]![1] * sign === d)) return index.name as string;
    }
    return null;
  }

  indexes(ns: string): Row[] {
    return [{ key: { _id: 1 }, name: '_id_' }, ...(this.indexSpecs.get(ns) ?? [])];
  }

  private uniqueValue(doc: Row, fields: string[]): string {
    return keyOf(
      fields.map((f) => f.split('.').reduce<unknown>((v, s) => (isPlain(v) ? v[s] : undefined), doc) ?? null),
    );
  }

  // -- transactions ----------------------------------------------------------------------------

  begin(txn: Txn): void {
    txn.server = 'open';
    txn.client = 'in_progress';
    txn.snapshot = this.version;
    this.active.add(txn);
  }

  abort(txn: Txn, why: Txn['abortedBy']): void {
    if (txn.server !== 'open') return;
    txn.server = 'aborted';
    txn.abortedBy = why;
    this.release(txn);
  }

  private release(txn: Txn): void {
    for (const l of txn.locks) if (this.locks.get(l) === txn) this.locks.delete(l);
    txn.locks.clear();
    this.active.delete(txn);
  }

  commit(txn: Txn): number | undefined {
    const writes: Array<{ ns: string; key: string; doc: Row | null }> = [];
    for (const [ns, docs] of txn.writes) for (const [key, doc] of docs) writes.push({ ns, key, doc });
    this.release(txn);
    txn.server = 'committed';
    txn.committedAt = writes.length > 0 ? this.commitWrites(writes) : undefined;
    return txn.committedAt;
  }

  /** Whether a commit survived (for a retried commit after an unknown result). */
  wasRolledBack(v: number): boolean {
    return this.rolledBack.has(v);
  }

  /**
   * Writes one document (null: deletes it; `insert`: only if absent). In a transaction, into its
   * writes, with conflict detection; outside one, committed at once after waiting for any
   * transaction holding the document or one of its unique keys. Answers the version committed
   * (outside a transaction).
   */
  async write(
    ns: string,
    key: string,
    doc: Row | null,
    ctx: { txn?: Txn; maxTimeMS?: number; insert?: boolean },
  ): Promise<number | undefined> {
    const [db, ...rest] = ns.split('.');
    const collection = rest.join('.');
    const docLock = `${ns}\u0000${key}`;
    const duplicate = () =>
      serverError(11000, 'DuplicateKey', `E11000 duplicate key error collection: ${ns} index: _id_`);
    if (ctx.txn) {
      const txn = ctx.txn;
      const holder = this.locks.get(docLock);
      const committed = this.latest(this.coll(db!, collection).get(key), this.version);
      if ((holder && holder !== txn) || (committed && committed.v > txn.snapshot)) {
        this.abort(txn, 'conflict');
        this.conflicts++;
        throw writeConflict();
      }
      let own = txn.writes.get(ns);
      const present = own?.has(key)
        ? own.get(key)
        : this.latest(this.coll(db!, collection).get(key), txn.snapshot)?.doc;
      if (ctx.insert && present) throw duplicate();
      const uniqueLocks = this.checkUnique(ns, key, doc, txn);
      for (const l of [docLock, ...uniqueLocks]) {
        this.locks.set(l, txn);
        txn.locks.add(l);
      }
      for (const l of uniqueLocks) txn.uniqueOwners.set(l, key);
      this.noteDoc(ns, key, doc);
      if (!own) txn.writes.set(ns, (own = new Map()));
      own.set(key, doc);
      return undefined;
    }
    const deadline = Date.now() + (ctx.maxTimeMS ?? 5000);
    while (this.blocked(ns, docLock, doc)) {
      if (Date.now() > deadline) {
        if (ctx.maxTimeMS !== undefined) throw maxTimeExpired();
        throw new StandInViolation(`a write to ${ns} waited 5 s for a transaction holding the document`);
      }
      await new Promise((r) => setTimeout(r, 1));
    }
    if (ctx.insert && this.latest(this.coll(db!, collection).get(key), this.version)?.doc) throw duplicate();
    this.checkUnique(ns, key, doc, undefined);
    return this.commitWrites([{ ns, key, doc }]);
  }

  /** Whether a transaction holds the document or one of the unique keys `doc` would take. */
  private blocked(ns: string, docLock: string, doc: Row | null): boolean {
    if (this.locks.has(docLock)) return true;
    if (!doc) return false;
    return (this.uniques.get(ns) ?? []).some((u) =>
      this.locks.has(`${ns}\u0001${u.name}\u0000${this.uniqueValue(doc, u.fields)}`),
    );
  }

  /** Throws E11000 (or a write conflict, in a transaction) on a unique index duplicate; answers the keys to lock. */
  private checkUnique(ns: string, key: string, doc: Row | null, txn: Txn | undefined): string[] {
    if (!doc) return [];
    const [db, ...rest] = ns.split('.');
    const docs = this.coll(db!, rest.join('.'));
    const own = txn?.writes.get(ns);
    const locks: string[] = [];
    const conflict = (): never => {
      this.abort(txn!, 'conflict');
      this.conflicts++;
      throw writeConflict();
    };
    const duplicate = (name: string): never => {
      throw serverError(11000, 'DuplicateKey', `E11000 duplicate key error collection: ${ns} index: ${name}`);
    };
    for (const u of this.uniques.get(ns) ?? []) {
      const value = this.uniqueValue(doc, u.fields);
      const lock = `${ns}\u0001${u.name}\u0000${value}`;
      const holder = this.locks.get(lock);
      if (txn && holder && holder !== txn) conflict();
      // The transaction's own writes first: they hide what they replaced.
      const ownKey = txn?.uniqueOwners.get(lock);
      if (ownKey !== undefined && ownKey !== key) {
        const ownDoc = own?.get(ownKey);
        if (ownDoc && this.uniqueValue(ownDoc, u.fields) === value) duplicate(u.name);
      }
      const committedKey = this.uniqueMap(ns, u.name).get(value);
      if (committedKey !== undefined && committedKey !== key && !own?.has(committedKey)) {
        const current = this.latest(docs.get(committedKey), this.version);
        if (current?.doc) {
          if (txn && current.v > txn.snapshot) conflict();
          duplicate(u.name);
        }
      }
      locks.push(lock);
    }
    return locks;
  }

  // -- operations ------------------------------------------------------------------------------

  /** Fail points and delays for an operation about to run. */
  async intercept(
    op: string,
    collection: string,
    ctx: { inTransaction: boolean; maxTimeMS?: number },
  ): Promise<void> {
    for (const point of this.failPoints) {
      if (point.ops && !point.ops.includes(op)) continue;
      if (point.collection !== undefined && point.collection !== collection) continue;
      if (point.inTransaction !== undefined && point.inTransaction !== ctx.inTransaction) continue;
      if (point.times !== undefined && point.times <= 0) continue;
      if (point.times !== undefined) point.times--;
      if (point.delayMs) {
        if (ctx.maxTimeMS !== undefined && ctx.maxTimeMS < point.delayMs) {
          await new Promise((r) => setTimeout(r, ctx.maxTimeMS));
          throw maxTimeExpired();
        }
        await new Promise((r) => setTimeout(r, point.delayMs));
      }
      if (point.error) {
        throw serverError(
          point.error.code,
          point.error.codeName,
          point.error.message ?? point.error.codeName,
          [...(point.error.labels ?? [])],
        );
      }
    }
  }

  noteRegexes(filter: unknown): void {
    regexesIn(filter, this.regexes);
  }
}

// ---------------------------------------------------------------------------------------------
// Driver surface: client, session, db, collection, cursor.

let sessionIds = 0;

export class StandInSession {
  readonly id = ++sessionIds;
  ended = false;
  txn: Txn | undefined;
  /** An operation of this session's transaction is in flight. */
  busy = false;

  constructor(readonly client: StandInClient) {}

  startTransaction(options: Row = {}): void {
    if (this.ended) throw expiredSession();
    if (this.inTransaction()) throw transactionError('Transaction already in progress');
    this.txn = new Txn(options);
  }

  inTransaction(): boolean {
    return this.txn !== undefined && (this.txn.client === 'starting' || this.txn.client === 'in_progress');
  }

  async commitTransaction(): Promise<void> {
    const server = this.client.server;
    const txn = this.txn;
    if (this.ended) throw expiredSession();
    if (!txn || txn.client === 'aborted') throw transactionError('No transaction started');
    if (this.busy)
      throw new StandInViolation('commitTransaction while an operation of the transaction is in flight');
    const retried = txn.client === 'committed';
    txn.client = 'committed';
    await new Promise((r) => setImmediate(r));
    if (this.client.closed) throw closedClient();
    if (txn.server === 'none') return;
    if (txn.server === 'aborted') throw noSuchTransaction();
    if (!retried) {
      server.log.push({
        op: 'commitTransaction',
        collection: '',
        inTransaction: true,
        session: true,
        writeConcern: txn.options.writeConcern,
      });
      try {
        await server.intercept('commitTransaction', '', { inTransaction: true });
      } catch (err) {
        server.abort(txn, 'error');
        throw err;
      }
      server.commit(txn);
    } else if (txn.committedAt !== undefined && server.wasRolledBack(txn.committedAt)) {
      // A retried commit answers what became of the first: rolled back at a failover.
      throw noSuchTransaction();
    }
    if (txn.committedAt === undefined) return;
    try {
      await server.awaitMajority(txn.committedAt, txn.options.writeConcern as Row | undefined);
    } catch (err) {
      const e = err as MongoServerError;
      throw serverError(e.code as number, e.codeName ?? 'Error', e.message, [
        'UnknownTransactionCommitResult',
      ]);
    }
  }

  async abortTransaction(): Promise<void> {
    if (this.ended) throw expiredSession();
    const txn = this.txn;
    if (!txn || txn.client === 'aborted') throw transactionError('No transaction started');
    if (txn.client === 'committed')
      throw transactionError('Cannot call abortTransaction after calling commitTransaction');
    txn.client = 'aborted';
    this.client.server.abort(txn, 'error');
    await new Promise((r) => setImmediate(r));
  }

  /**
   * The driver's `withTransaction` (mongodb 6.x): retries the whole transaction on a transient
   * error and the commit on an unknown result, at once and for up to 120 s.
   */
  async withTransaction<T>(fn: (session: this) => Promise<T>, options: Row = {}): Promise<T> {
    const started = Date.now();
    const inTime = () => Date.now() - started < 120_000;
    for (;;) {
      this.startTransaction(options);
      let result: T;
      try {
        result = await fn(this);
      } catch (err) {
        if (this.inTransaction()) await this.abortTransaction();
        if (err instanceof MongoServerError && err.hasErrorLabel('TransientTransactionError') && inTime())
          continue;
        throw err;
      }
      for (;;) {
        try {
          await this.commitTransaction();
          return result;
        } catch (err) {
          if (!(err instanceof MongoServerError)) throw err;
          if (err.code !== 50 && err.hasErrorLabel('UnknownTransactionCommitResult') && inTime()) continue;
          if (err.hasErrorLabel('TransientTransactionError') && inTime()) break;
          throw err;
        }
      }
    }
  }

  async endSession(): Promise<void> {
    if (this.inTransaction()) {
      this.txn!.client = 'aborted';
      this.client.server.abort(this.txn!, 'error');
    }
    this.ended = true;
  }
}

function closedClient(): Error {
  return Object.assign(new Error('Topology is closed'), { name: 'MongoTopologyClosedError' });
}

function transactionError(message: string): Error {
  return Object.assign(new Error(message), { name: 'MongoTransactionError' });
}

function expiredSession(): Error {
  return Object.assign(new Error('Cannot use a session that has ended'), {
    name: 'MongoExpiredSessionError',
  });
}

interface OpOptions {
  session?: StandInSession;
  maxTimeMS?: number;
  readConcern?: unknown;
  writeConcern?: unknown;
  projection?: Row;
  sort?: Row | Array<[string, 1 | -1]>;
  skip?: number;
  limit?: number;
  upsert?: boolean;
  ordered?: boolean;
  returnDocument?: 'before' | 'after';
  nameOnly?: boolean;
  allowDiskUse?: boolean;
}

export class StandInClient {
  closed = false;
  constructor(readonly server: StandInServer) {}

  async connect(): Promise<this> {
    return this;
  }

  db(name = 'test'): StandInDb {
    return new StandInDb(this, name);
  }

  startSession(): StandInSession {
    if (this.closed) throw closedClient();
    return new StandInSession(this);
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

export class StandInDb {
  constructor(
    readonly client: StandInClient,
    readonly databaseName: string,
  ) {}

  collection(name: string): StandInCollection {
    return new StandInCollection(this, name);
  }

  listCollections(_filter: Row = {}, _options: OpOptions = {}) {
    return {
      toArray: async () =>
        this.client.server.collectionNames(this.databaseName).map((name) => ({ name, type: 'collection' })),
    };
  }

  admin() {
    return { command: (cmd: Row) => this.command(cmd) };
  }

  async command(cmd: Row): Promise<Row> {
    await new Promise((r) => setImmediate(r));
    if ('hello' in cmd || 'isMaster' in cmd || 'ismaster' in cmd) {
      const base = { ok: 1, isWritablePrimary: true, maxWireVersion: 21, logicalSessionTimeoutMinutes: 30 };
      const topology = this.client.server.topology;
      if (topology === 'replicaSet')
        return { ...base, setName: 'rs0', hosts: ['db1:27017', 'db2:27017', 'db3:27017'] };
      if (topology === 'sharded') return { ...base, msg: 'isdbgrid' };
      return base;
    }
    if ('ping' in cmd) return { ok: 1 };
    throw new StandInViolation(`command ${Object.keys(cmd)[0]} is not modelled by the stand-in`);
  }

  async dropDatabase(): Promise<boolean> {
    this.client.server.dropDatabase(this.databaseName);
    return true;
  }
}

interface Ctx {
  txn?: Txn;
  session?: StandInSession;
  at: number;
  maxTimeMS?: number;
}

export class StandInCollection {
  readonly ns: string;
  constructor(
    readonly db: StandInDb,
    readonly collectionName: string,
  ) {
    this.ns = `${db.databaseName}.${collectionName}`;
  }

  private get server(): StandInServer {
    return this.db.client.server;
  }

  /**
   * Runs one operation as the server would: session rules first, then fail points, one turn of
   * the event loop (the network), then the work. `kind` says whether it reads or writes.
   */
  private async run<T>(
    op: string,
    options: OpOptions,
    filter: unknown,
    work: (ctx: Ctx) => Promise<T> | T,
    note: Partial<LoggedOp> = {},
  ): Promise<T> {
    const server = this.server;
    const session = options.session;
    if (this.db.client.closed)
      throw Object.assign(new Error('client is closed'), { name: 'MongoTopologyClosedError' });
    if (session?.ended) throw expiredSession();
    const txn = session?.inTransaction() ? session.txn : undefined;
    const readLevel = (options.readConcern as { level?: string } | undefined)?.level;
    server.log.push({
      op,
      collection: this.collectionName,
      inTransaction: txn !== undefined,
      session: session !== undefined,
      maxTimeMS: options.maxTimeMS,
      readConcern: options.readConcern,
      writeConcern: options.writeConcern,
      filter,
      ...note,
    });
    server.noteRegexes(filter);
    if (txn) {
      if (server.topology === 'standalone')
        throw serverError(
          20,
          'IllegalOperation',
          'Transaction numbers are only allowed on a replica set member or mongos',
        );
      if (session!.busy) {
        server.abort(txn, 'violation');
        throw new StandInViolation(
          `${op} on ${this.collectionName} started while another operation of the same transaction was in flight`,
        );
      }
      if (options.readConcern !== undefined || options.writeConcern !== undefined)
        throw serverError(
          72,
          'InvalidOptions',
          'Cannot set read or write concern on an operation in a transaction',
        );
      if (op === 'estimatedDocumentCount' || op === 'createIndexes' || op === 'dropIndexes')
        throw serverError(263, 'OperationNotSupportedInTransaction', `${op} is not allowed in a transaction`);
      if (txn.server === 'aborted' || txn.server === 'committed') throw noSuchTransaction();
      if (txn.server === 'none') server.begin(txn);
      session!.busy = true;
    }
    try {
      await new Promise((r) => setImmediate(r));
      await server.intercept(op, this.collectionName, {
        inTransaction: txn !== undefined,
        maxTimeMS: options.maxTimeMS,
      });
      if (txn && txn.server === 'aborted') throw noSuchTransaction();
      const at = txn ? txn.snapshot : server.readVersion(readLevel);
      return await work({ txn, session, at, maxTimeMS: options.maxTimeMS });
    } catch (err) {
      // The server aborts a transaction on any error in it.
      if (txn && !(err instanceof StandInViolation)) server.abort(txn, 'error');
      throw err;
    } finally {
      if (txn) session!.busy = false;
    }
  }

  private rows(ctx: Ctx, keys?: Iterable<string>): Map<string, Row> {
    return this.server.visible(this.db.databaseName, this.collectionName, { at: ctx.at, txn: ctx.txn }, keys);
  }

  /**
   * The keys a filter can match when a top-level field is compared for equality (or `$in`) with
   * plain values; undefined: every key.
   */
  private candidateKeys(filter: Row): string[] | undefined {
    const plain = (x: unknown) =>
      x === null || typeof x === 'string' || typeof x === 'number' || typeof x === 'boolean';
    const exact = (v: unknown): unknown[] | undefined => {
      if (isPlain(v)) {
        const keys = Object.keys(v);
        if (keys.length === 1 && Array.isArray(v.$in) && v.$in.every(plain)) return v.$in;
        if (keys.length === 1 && '$eq' in v && plain(v.$eq)) return [v.$eq];
        return undefined;
      }
      return plain(v) || v instanceof ObjectId ? [v] : undefined;
    };
    const clauses = [filter, ...(Array.isArray(filter.$and) ? (filter.$and as Row[]) : [])];
    for (const clause of clauses) {
      const ids = exact(clause._id);
      if (ids) return ids.map(keyOf);
    }
    for (const clause of clauses) {
      for (const [field, condition] of Object.entries(clause)) {
        if (field.startsWith('$') || field.includes('.')) continue;
        const values = exact(condition);
        if (values) return this.server.keysWithValues(this.ns, field, values);
      }
    }
    return undefined;
  }

  /**
   * Matching documents (key and document), sorted, skipped and limited. A sort in memory
   * (`inMemorySort`) holds the first skip + limit of them, or all, within the server's limit.
   */
  private select(
    ctx: Ctx,
    filter: Row,
    options: OpOptions & { inMemorySort?: boolean } = {},
  ): Array<[string, Row]> {
    let test = simplePredicate(filter);
    if (!test) {
      const compiled = compileFilter(matchView(filter) as Row);
      test = (doc) => compiled(matchView(doc) as Row);
    }
    let found = [...this.rows(ctx, this.candidateKeys(filter))].filter(([, doc]) => test(doc));
    if (options.sort) {
      const spec = sortSpec(options.sort);
      if (options.inMemorySort) this.checkSortMemory(found, options);
      const keyed = found.map((entry) => ({
        entry,
        keys: spec.map(([path, dir]) => sortKeyOf(sortView(entry[1]), path, dir)),
      }));
      keyed.sort((a, b) => compareKeys(a.keys, b.keys, spec));
      found = keyed.map((k) => k.entry);
    }
    if (options.skip) found = found.slice(options.skip);
    if (options.limit) found = found.slice(0, Math.abs(options.limit));
    return found;
  }

  /** Refuses a sort in memory the server could neither hold nor spill to disk. */
  private checkSortMemory(found: Array<[string, Row]>, options: OpOptions): void {
    if (options.allowDiskUse ?? this.server.allowDiskUseByDefault) return;
    const held = options.limit ? found.slice(0, (options.skip ?? 0) + Math.abs(options.limit)) : found;
    let bytes = 0;
    for (const [, doc] of held) bytes += bsonSize(doc);
    if (bytes > this.server.sortMemoryBytes)
      throw serverError(
        292,
        'QueryExceededMemoryLimitNoDiskUseAllowed',
        `Executor error during find command :: caused by :: Sort exceeded memory limit of ${this.server.sortMemoryBytes} bytes, but did not opt in to external sorting.`,
      );
  }

  private project(doc: Row, projection: Row | undefined): Row {
    if (!projection || Object.keys(projection).length === 0) return clone(doc);
    const simple = simpleProjection(projection);
    if (simple) return clone(simple(doc));
    const [view] = mingoFind([matchView(doc) as Row], {}, projection).all();
    return clone(fromView(view) as Row);
  }

  find(filter: Row = {}, options: OpOptions = {}) {
    const run = (chained: OpOptions) => {
      const sort = chained.sort && sortSpec(chained.sort);
      const sortIndex = sort && sort.length > 0 ? this.server.sortIndex(this.ns, sort) : undefined;
      return this.run(
        'find',
        chained,
        filter,
        (ctx) =>
          this.select(ctx, filter, { ...chained, inMemorySort: sortIndex === null }).map(([, d]) =>
            this.project(d, chained.projection),
          ),
        sortIndex === undefined ? {} : { sortIndex },
      );
    };
    return cursorOf(run, options);
  }

  async findOne(filter: Row = {}, options: OpOptions = {}): Promise<Row | null> {
    return this.run('findOne', options, filter, (ctx) => {
      const [hit] = this.select(ctx, filter, { ...options, limit: 1 });
      return hit ? this.project(hit[1], options.projection) : null;
    });
  }

  async countDocuments(filter: Row = {}, options: OpOptions = {}): Promise<number> {
    return this.run('countDocuments', options, filter, (ctx) => this.select(ctx, filter, options).length);
  }

  async estimatedDocumentCount(options: OpOptions = {}): Promise<number> {
    return this.run('estimatedDocumentCount', options, undefined, (ctx) => this.rows(ctx).size);
  }

  async distinct(field: string, filter: Row = {}, options: OpOptions = {}): Promise<unknown[]> {
    return this.run('distinct', options, filter, (ctx) => {
      const values = new Map<string, unknown>();
      for (const [, doc] of this.select(ctx, filter)) {
        const v = field.split('.').reduce<unknown>((x, s) => (isPlain(x) ? x[s] : undefined), doc);
        for (const each of Array.isArray(v) ? v : [v]) if (each !== undefined) values.set(keyOf(each), each);
      }
      const out = [...values.values()];
      if (bsonSize({ values: out }) > this.server.maxReplyBytes)
        throw serverError(17217, 'Location17217', 'distinct too big, 16mb cap');
      return out;
    });
  }

  aggregate(pipeline: Row[], options: OpOptions = {}) {
    const run = () =>
      this.run('aggregate', options, pipeline.find((s) => '$match' in s)?.$match, (ctx) => {
        if (pipeline[0] && '$collStats' in pipeline[0]) {
          if (ctx.txn)
            throw serverError(263, 'OperationNotSupportedInTransaction', '$collStats in a transaction');
          return this.collStats();
        }
        const stages = [...pipeline];
        let docs = [...this.rows(ctx).values()];
        if (stages[0] && '$match' in stages[0]) {
          const predicate = compileFilter(matchView(stages.shift()!.$match as Row) as Row);
          docs = docs.filter((d) => predicate(matchView(d) as Row));
        }
        if (stages[0] && '$sample' in stages[0]) {
          const { size } = stages.shift()!.$sample as { size: number };
          docs = docs
            .map((d) => ({ d, r: Math.random() }))
            .sort((a, b) => a.r - b.r)
            .slice(0, size)
            .map((x) => x.d);
        }
        const views = docs.map((d) => matchView(d) as Row);
        const out = stages.length > 0 ? (new Aggregator(stages).run(views) as Row[]) : views;
        return out.map((v) => clone(fromView(v) as Row));
      });
    return cursorOf(run);
  }

  private collStats(): Row[] {
    const docs = [...this.rows({ at: this.server.readVersion('local') }).values()];
    const shards = this.server.topology === 'sharded' ? this.server.shards : 1;
    return Array.from({ length: shards }, (_, s) => {
      const mine = docs.filter((_, i) => i % shards === s);
      const size = mine.reduce((n, d) => n + bsonSize(d), 0);
      const storageSize = Math.max(4096, Math.ceil(size / 2));
      const totalIndexSize = 4096 * (1 + (this.server.indexes(this.ns).length - 1));
      return {
        ns: this.ns,
        shard: shards > 1 ? `shard${s}` : undefined,
        storageStats: {
          count: mine.length,
          size,
          avgObjSize: mine.length > 0 ? Math.round(size / mine.length) : 0,
          storageSize,
          totalIndexSize,
          totalSize: storageSize + totalIndexSize,
        },
      };
    });
  }

  private async writeDoc(
    ctx: Ctx,
    key: string,
    doc: Row | null,
    insert = false,
  ): Promise<number | undefined> {
    return this.server.write(this.ns, key, doc, { txn: ctx.txn, maxTimeMS: ctx.maxTimeMS, insert });
  }

  /** After a write outside a transaction: waits for its write concern. */
  private async acknowledge(versions: Array<number | undefined>, options: OpOptions): Promise<void> {
    if (options.session?.inTransaction()) return;
    const newest = Math.max(0, ...versions.filter((v): v is number => v !== undefined));
    if (newest > 0) await this.server.awaitMajority(newest, options.writeConcern as Row | undefined);
  }

  private async insertDoc(ctx: Ctx, doc: Row): Promise<{ id: unknown; v: number | undefined }> {
    if (Object.keys(doc).some((k) => k.startsWith('$')))
      throw serverError(2, 'BadValue', "Document can't have $ prefixed field names");
    const stored = clone(doc._id === undefined ? { _id: new ObjectId(), ...doc } : doc);
    const v = await this.writeDoc(ctx, keyOf(stored._id), stored, true);
    return { id: stored._id, v };
  }

  async insertOne(doc: Row, options: OpOptions = {}) {
    const { id, v } = await this.run('insertOne', options, undefined, (ctx) => this.insertDoc(ctx, doc));
    await this.acknowledge([v], options);
    return { acknowledged: true, insertedId: id };
  }

  async insertMany(docs: Row[], options: OpOptions = {}) {
    if (docs.length === 0) throw invalidBatch();
    const results = await this.run('insertMany', options, undefined, async (ctx) => {
      const out: Array<{ id: unknown; v: number | undefined }> = [];
      for (const d of docs) out.push(await this.insertDoc(ctx, d));
      return out;
    });
    await this.acknowledge(
      results.map((r) => r.v),
      options,
    );
    return { acknowledged: true, insertedCount: results.length };
  }

  /** Updates (or replaces) the first or every match; upserts when asked. */
  private async updateDocs(
    ctx: Ctx,
    filter: Row,
    change: (doc: Row, inserting: boolean) => Row,
    options: { upsert?: boolean; multi: boolean; sort?: OpOptions['sort'] },
  ): Promise<{
    matched: number;
    upsertedId?: unknown;
    versions: Array<number | undefined>;
    before?: Row;
    after?: Row;
  }> {
    const hits = this.select(ctx, filter, { sort: options.sort, limit: options.multi ? undefined : 1 });
    if (hits.length === 0) {
      if (!options.upsert) return { matched: 0, versions: [] };
      const seeded = change(seedOf(filter), true);
      const { id, v } = await this.insertDoc(ctx, seeded);
      return { matched: 0, upsertedId: id, versions: [v], after: { ...seeded, _id: id } };
    }
    const versions: Array<number | undefined> = [];
    let before: Row | undefined;
    let after: Row | undefined;
    for (const [key, doc] of hits) {
      const next = clone({ ...change(doc, false), _id: doc._id });
      before ??= doc;
      after ??= next;
      versions.push(await this.writeDoc(ctx, key, next));
    }
    return { matched: hits.length, versions, before, after };
  }

  private async deleteDocs(
    ctx: Ctx,
    filter: Row,
    multi: boolean,
  ): Promise<{ deleted: number; versions: Array<number | undefined> }> {
    const hits = this.select(ctx, filter, { limit: multi ? undefined : 1 });
    const versions: Array<number | undefined> = [];
    for (const [key] of hits) versions.push(await this.writeDoc(ctx, key, null));
    return { deleted: hits.length, versions };
  }

  async updateOne(filter: Row, update: Row, options: OpOptions = {}) {
    const r = await this.run('updateOne', options, filter, (ctx) =>
      this.updateDocs(ctx, filter, (d, ins) => applyUpdate(d, update, ins), {
        upsert: options.upsert,
        multi: false,
      }),
    );
    await this.acknowledge(r.versions, options);
    return updateResult(r);
  }

  async updateMany(filter: Row, update: Row, options: OpOptions = {}) {
    const r = await this.run('updateMany', options, filter, (ctx) =>
      this.updateDocs(ctx, filter, (d, ins) => applyUpdate(d, update, ins), {
        upsert: options.upsert,
        multi: true,
      }),
    );
    await this.acknowledge(r.versions, options);
    return updateResult(r);
  }

  async replaceOne(filter: Row, replacement: Row, options: OpOptions = {}) {
    assertReplacement(replacement);
    const r = await this.run('replaceOne', options, filter, (ctx) =>
      this.updateDocs(ctx, filter, (d, ins) => (ins ? { ...d, ...replacement } : { ...replacement }), {
        upsert: options.upsert,
        multi: false,
      }),
    );
    await this.acknowledge(r.versions, options);
    return updateResult(r);
  }

  async deleteOne(filter: Row = {}, options: OpOptions = {}) {
    const r = await this.run('deleteOne', options, filter, (ctx) => this.deleteDocs(ctx, filter, false));
    await this.acknowledge(r.versions, options);
    return { acknowledged: true, deletedCount: r.deleted };
  }

  async deleteMany(filter: Row = {}, options: OpOptions = {}) {
    const r = await this.run('deleteMany', options, filter, (ctx) => this.deleteDocs(ctx, filter, true));
    await this.acknowledge(r.versions, options);
    return { acknowledged: true, deletedCount: r.deleted };
  }

  async findOneAndUpdate(filter: Row, update: Row, options: OpOptions = {}): Promise<Row | null> {
    const r = await this.run('findOneAndUpdate', options, filter, (ctx) =>
      this.updateDocs(ctx, filter, (d, ins) => applyUpdate(d, update, ins), {
        upsert: options.upsert,
        multi: false,
        sort: options.sort,
      }),
    );
    await this.acknowledge(r.versions, options);
    const doc = options.returnDocument === 'after' ? r.after : r.before;
    return doc ? this.project(doc, options.projection) : null;
  }

  async bulkWrite(ops: Row[], options: OpOptions = {}) {
    if (ops.length === 0) throw invalidBatch();
    const ordered = options.ordered ?? true;
    const totals = { insertedCount: 0, matchedCount: 0, modifiedCount: 0, deletedCount: 0, upsertedCount: 0 };
    const versions: Array<number | undefined> = [];
    const errors: Error[] = [];
    await this.run('bulkWrite', options, ops, async (ctx) => {
      for (const op of ops) {
        const [kind, spec] = Object.entries(op)[0] as [string, Row];
        try {
          if (kind === 'insertOne') {
            const { v } = await this.insertDoc(ctx, spec.document as Row);
            versions.push(v);
            totals.insertedCount++;
          } else if (kind === 'replaceOne' || kind === 'updateOne' || kind === 'updateMany') {
            if (kind === 'replaceOne') assertReplacement(spec.replacement as Row);
            const r = await this.updateDocs(
              ctx,
              spec.filter as Row,
              kind === 'replaceOne'
                ? (d, ins) =>
                    ins ? { ...d, ...(spec.replacement as Row) } : { ...(spec.replacement as Row) }
                : (d, ins) => applyUpdate(d, spec.update as Row, ins),
              { upsert: spec.upsert as boolean | undefined, multi: kind === 'updateMany' },
            );
            versions.push(...r.versions);
            totals.matchedCount += r.matched;
            totals.modifiedCount += r.matched;
            if (r.upsertedId !== undefined) totals.upsertedCount++;
          } else if (kind === 'deleteOne' || kind === 'deleteMany') {
            const r = await this.deleteDocs(ctx, spec.filter as Row, kind === 'deleteMany');
            versions.push(...r.versions);
            totals.deletedCount += r.deleted;
          } else throw new StandInViolation(`bulk ${kind} is not modelled by the stand-in`);
        } catch (err) {
          // In a transaction any error aborts it; outside, an unordered bulk goes on.
          if (ctx.txn || ordered || !(err instanceof MongoServerError)) throw err;
          errors.push(err);
        }
      }
    });
    await this.acknowledge(versions, options);
    if (errors.length > 0) throw errors[0]!;
    return { acknowledged: true, ...totals };
  }

  async createIndexes(specs: Row[], options: OpOptions = {}): Promise<string[]> {
    return this.run('createIndexes', options, undefined, () => this.server.createIndexes(this.ns, specs));
  }

  async createIndex(key: Row, options: Row & OpOptions = {}): Promise<string> {
    const { session, ...spec } = options;
    const [name] = await this.run('createIndexes', { session }, undefined, () =>
      this.server.createIndexes(this.ns, [{ key, ...spec }]),
    );
    return name!;
  }

  listIndexes() {
    return cursorOf(async () => this.server.indexes(this.ns));
  }

  async dropIndex(name: string, options: OpOptions = {}): Promise<Row> {
    return this.run('dropIndexes', options, undefined, () => {
      this.server.dropIndex(this.ns, name);
      return { ok: 1 };
    });
  }
}

function updateResult(r: { matched: number; upsertedId?: unknown }) {
  return {
    acknowledged: true,
    matchedCount: r.matched,
    modifiedCount: r.matched,
    upsertedCount: r.upsertedId === undefined ? 0 : 1,
    upsertedId: r.upsertedId ?? null,
  };
}

function assertReplacement(replacement: Row): void {
  if (Object.keys(replacement).some((k) => k.startsWith('$')))
    throw Object.assign(new Error('Replacement document must not contain atomic operators'), {
      name: 'MongoInvalidArgumentError',
    });
}

function invalidBatch(): Error {
  return Object.assign(new Error('Invalid BulkOperation, Batch cannot be empty'), {
    name: 'MongoInvalidArgumentError',
  });
}

/** A sort option as a list of [path, direction]. */
function sortSpec(sort: NonNullable<OpOptions['sort']>): Array<[string, 1 | -1]> {
  return (Array.isArray(sort) ? sort : Object.entries(sort)) as Array<[string, 1 | -1]>;
}

/**
 * A cursor that runs its operation when first read (as the driver's do); `sort`, `limit`, `skip`,
 * `project` and `batchSize` set its options before that.
 */
function cursorOf(run: (options: OpOptions) => Promise<Row[]>, initial: OpOptions = {}) {
  const options: OpOptions = { ...initial };
  let rows: Promise<Row[]> | undefined;
  let position = 0;
  const all = () => (rows ??= run(options));
  const cursor = {
    toArray: async () => [...(await all())].slice(position),
    async *[Symbol.asyncIterator]() {
      const found = await all();
      while (position < found.length) yield found[position++]!;
    },
    next: async () => {
      const found = await all();
      return position < found.length ? found[position++]! : null;
    },
    hasNext: async () => position < (await all()).length,
    close: async () => {},
    sort: (sort: OpOptions['sort']) => ((options.sort = sort), cursor),
    limit: (limit: number) => ((options.limit = limit), cursor),
    skip: (skip: number) => ((options.skip = skip), cursor),
    project: (projection: Row) => ((options.projection = projection), cursor),
    batchSize: () => cursor,
    withReadPreference: () => cursor,
  };
  return cursor;
}
