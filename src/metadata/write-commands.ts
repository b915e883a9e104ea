/**
 * `update` and `delete` through `POST /queries:run`, all or nothing:
 *
 * 1. the statements are checked as MongoDB checks them (write-statements.ts);
 * 2. they are applied in order to copies of the records they match (a later statement sees what
 *    an earlier one did), nothing written yet;
 * 3. the records as they would become are validated against the NMDC schema (the validator of
 *    `/metadata/json:validate`), and a new id must not be taken;
 * 4. unless `allow_broken_refs=true`: every reference the changed records hold must name a record
 *    that will exist, and no other record may be left referencing a record that is deleted or
 *    moved to another id (as the original service refuses such writes);
 * 5. one transaction writes the changes, after checking that no record changed since it was read
 *    (409 when one did); the search index and the provenance edges follow.
 *
 * Any refusal is a 4xx with nothing written.
 */
import { isDeepStrictEqual } from 'node:util';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { updateMany } from 'mingo';
import type { Logger } from 'pino';
import { BrokenReferences, Conflict, InvalidAfterUpdate, Unprocessable } from '../errors.ts';
import type { Doc, DocumentStore, Filter, ReadModifyWriteDecision, RecordKey } from '../store/port.ts';
import { compileFilter } from '../store/filter.ts';
import { keyedRecord, shownRecord } from '../store/record-keys.ts';
import { UNIDENTIFIED_COLLECTIONS } from '../schema/nmdc.ts';
import { DatabaseCheck } from '../validation/index.ts';
import type { BrokenReference, IncomingReferences } from '../validation/incoming-references.ts';
import type { CollectionsReader } from './collections-reader.ts';
import {
  usesPositional,
  type DeleteStatement,
  type UpdateOperators,
  type UpdateStatement,
} from './write-statements.ts';

/** The writes a command needs (RecordWriter in search/writer.ts). */
export interface RecordWrites {
  readModifyWrite<T>(
    keys: RecordKey[],
    decide: (current: Array<Doc | null>) => ReadModifyWriteDecision<T>,
  ): Promise<T>;
  delete(collection: string, filter: Filter, limit?: number): Promise<string[]>;
}

export interface WriteOptions {
  /** `allow_broken_refs=true`: write even when references would be left dangling. */
  allowBrokenRefs: boolean;
}

/** Schema messages listed at most (the records are checked until there are this many). */
const MESSAGES_LISTED = 100;
/** Broken references looked for (and listed in `broken_references`) at most. */
export const BROKEN_REFERENCES_LISTED = 100;
/** Records one pass of the update operators changes before other requests get a turn. */
const APPLY_CHUNK = 500;
/** Records read per page while matching statements. */
const MATCH_PAGE = 1000;
/** Longest the event loop is held between turns given to other requests. */
const TURN_MS = 20;

const BROKEN_PREFIX =
  'The operation was not performed, because performing it would have left behind one or more broken references.';

/** A string as Python's `repr` quotes it. */
const pyQuoted = (s: string) =>
  s.includes("'") && !s.includes('"')
    ? `"${s.replace(/\\/g, '\\\\')}"`
    : `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

const keyOf = (collection: string, id: string) => `${collection}\u0000${id}`;
const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/** Gives other requests a turn when this one has held the event loop for TURN_MS. */
function turns(): () => Promise<void> {
  let since = performance.now();
  return async () => {
    if (performance.now() - since < TURN_MS) return;
    await nextTurn();
    since = performance.now();
  };
}

/** One record an update command touches: as stored (null when upserted) and as it would become. */
interface Touched {
  /** The store id it was read under (null when upserted). */
  storedId: string | null;
  before: Doc | null;
  /** As answers show it (no store key). */
  after: Record<string, unknown>;
  /** Whether a statement changed it (a record changed back is written as it was). */
  modified: boolean;
}

export class WriteCommands {
  constructor(
    private readonly reader: CollectionsReader,
    private readonly store: DocumentStore,
    private readonly writes: RecordWrites,
    private readonly references: IncomingReferences,
    private readonly logger?: Logger,
  ) {}

  /** The records of `collection` matching `q` in id order, as stored, except those in `skip`. */
  private async *matching(
    collection: string,
    q: Filter,
    skip: { has(id: string): boolean },
    projection?: string[],
  ) {
    let afterId: string | undefined;
    for (;;) {
      const page = await this.reader.find([collection], q, { afterId, limit: MATCH_PAGE, projection });
      for (const doc of page) if (!skip.has(doc.id)) yield doc;
      if (page.length < MATCH_PAGE) return;
      afterId = page[page.length - 1]!.id;
    }
  }

  async delete(collection: string, statements: DeleteStatement[], options: WriteOptions) {
    const victims = new Set<string>();
    const turn = turns();
    for (const statement of statements) {
      for await (const doc of this.matching(collection, statement.q, victims, ['id'])) {
        victims.add(doc.id);
        await turn();
        if (statement.limit === 1) break;
      }
    }
    if (victims.size === 0) return { ok: 1, n: 0 };
    const ids = [...victims];
    if (options.allowBrokenRefs) {
      this.logger?.info(
        { collection, records: ids.length },
        'delete with allow_broken_refs: references not checked',
      );
    } else {
      const changing = new Set(ids.map((id) => keyOf(collection, id)));
      const broken = await this.references.heldTo(collection, ids, changing, BROKEN_REFERENCES_LISTED);
      if (broken.length > 0) throw brokenByDelete(broken);
    }
    const deleted = await this.writes.delete(collection, { id: { $in: ids } });
    return { ok: 1, n: deleted.length };
  }

  async update(collection: string, statements: UpdateStatement[], options: WriteOptions) {
    const unidentified = UNIDENTIFIED_COLLECTIONS.has(collection);
    /** By the store id a record was read under, or `upsert:<index>`. */
    const touched = new Map<string, Touched>();
    const turn = turns();
    let n = 0;
    let nModified = 0;
    const upserted: Array<{ index: number; id?: string }> = [];

    for (const [index, statement] of statements.entries()) {
      const place = `updates[${index}]`;
      const test = compileFilter(statement.q);
      // Records an earlier statement changed are matched as they now are, the others as stored.
      const candidates: Array<{ key: string; current: Record<string, unknown>; stored: Doc | null }> = [];
      for (const [key, t] of touched)
        if (test(t.after)) candidates.push({ key, current: t.after, stored: t.before });
      const limit = statement.multi ? Infinity : 1;
      let fromStore = 0;
      for await (const doc of this.matching(collection, statement.q, touched)) {
        candidates.push({ key: doc.id, current: shownRecord(collection, doc), stored: doc });
        await turn();
        if (++fromStore >= limit) break;
      }
      if (limit === 1 && candidates.length > 1) {
        const idOf = (c: (typeof candidates)[number]) => String(c.current.id ?? c.key);
        candidates.sort((a, b) => (idOf(a) < idOf(b) ? -1 : idOf(a) > idOf(b) ? 1 : 0));
        candidates.length = 1;
      }
      n += candidates.length;
      for (let from = 0; from < candidates.length; from += APPLY_CHUNK) {
        const chunk = candidates.slice(from, from + APPLY_CHUNK);
        const updated = applyUpdate(
          chunk.map((c) => c.current),
          statement,
          place,
          false,
        );
        for (const [k, c] of chunk.entries()) {
          const next = updated[k]!;
          const existing = touched.get(c.key);
          const modified = !isDeepStrictEqual(next, c.current);
          touched.set(c.key, {
            storedId: existing ? existing.storedId : c.key,
            before: c.stored,
            after: next,
            modified: modified || (existing?.modified ?? false),
          });
          if (modified) nModified++;
        }
        await turn();
      }
      if (candidates.length === 0 && statement.upsert) {
        const [doc] = applyUpdate([upsertBase(statement.q)], statement, place, true) as [
          Record<string, unknown>,
        ];
        if (!unidentified && typeof doc.id !== 'string')
          throw new Unprocessable(`${place}: an upsert must give the new record an id, in q or in u`);
        touched.set(`upsert:${index}`, { storedId: null, before: null, after: doc, modified: true });
        upserted.push({ index, ...(typeof doc.id === 'string' ? { id: doc.id } : {}) });
        n++;
      }
    }

    const changed = [...touched.values()].filter((t) => t.modified);
    if (changed.length === 0) return { ok: 1, n, nModified, ...(upserted.length ? { upserted } : {}) };

    // Records that go away (deleted or moved to another id) are known once the schema passed.
    const gone = new Set<string>();
    const check = new DatabaseCheck(this.store, { gone: (c, id) => gone.has(keyOf(c, id)) });
    await checkSchema(check, collection, changed, turn);
    const plan = this.planWrite(collection, changed);
    for (const id of plan.gone) gone.add(keyOf(collection, id));
    await this.ensureNewIdsFree(collection, plan);
    await this.checkReferences(check, collection, changed, plan, options);
    await this.writes.readModifyWrite(plan.keys, (current) => decide(collection, plan, current));
    return { ok: 1, n, nModified, ...(upserted.length ? { upserted } : {}) };
  }

  /** What the write reads, writes and deletes; which stored ids go away (deleted or moved). */
  private planWrite(collection: string, changed: Touched[]): WritePlan {
    const unidentified = UNIDENTIFIED_COLLECTIONS.has(collection);
    const keys: RecordKey[] = [];
    const expected: Array<Doc | null> = [];
    const writes: Doc[] = [];
    const deletes: RecordKey[] = [];
    const gone: string[] = [];
    const added: string[] = [];
    const storedIds = new Set(changed.flatMap((t) => (t.storedId ? [t.storedId] : [])));
    for (const t of changed) {
      const doc = keyedRecord(collection, t.after) as Doc;
      writes.push(doc);
      if (t.storedId !== null) {
        keys.push({ collection, id: t.storedId });
        expected.push(t.before);
        if (doc.id !== t.storedId) {
          deletes.push({ collection, id: t.storedId });
          gone.push(t.storedId);
        }
      }
      // A store key is the content's digest: a record with the same content is the same record.
      if (!unidentified && t.storedId !== doc.id && !storedIds.has(doc.id)) {
        keys.push({ collection, id: doc.id });
        expected.push(null);
        added.push(doc.id);
      }
    }
    const remaining = new Set(writes.map((d) => d.id));
    return { keys, expected, writes, deletes, gone: gone.filter((id) => !remaining.has(id)), added };
  }

  /** A new id (an upsert's, or a record moved to another id) must not be another record's. */
  private async ensureNewIdsFree(collection: string, plan: WritePlan): Promise<void> {
    if (UNIDENTIFIED_COLLECTIONS.has(collection) || plan.added.length === 0) return;
    for (let i = 0; i < plan.added.length; i += MATCH_PAGE) {
      const taken = await this.store.find(
        collection,
        { id: { $in: plan.added.slice(i, i + MATCH_PAGE) } },
        { projection: ['id'], limit: 1 },
      );
      if (taken.length > 0)
        throw new Unprocessable(
          `The id '${taken[0]!.id}' is already the id of a record of ${collection}: an update cannot give it to another record (ids are unique)`,
        );
    }
  }

  /** Unless allowed to break them: the references of the records as they would become, and to those that go. */
  private async checkReferences(
    check: DatabaseCheck,
    collection: string,
    changed: Touched[],
    plan: WritePlan,
    options: WriteOptions,
  ): Promise<void> {
    if (options.allowBrokenRefs) {
      this.logger?.info(
        { collection, records: changed.length },
        'update with allow_broken_refs: references not checked',
      );
      return;
    }
    const broken: BrokenReference[] = [];
    for (const problem of await check.references()) {
      if (!problem.reference || broken.length >= BROKEN_REFERENCES_LISTED) continue;
      const t = changed[problem.index]!;
      // Named by the id it had before the update, as the original names it.
      const id = t.before ? String(shownRecord(collection, t.before).id ?? '') || null : (problem.id ?? null);
      broken.push({
        id,
        collection,
        slot: problem.reference.slot,
        target: problem.reference.target,
        target_collection: '',
      });
    }
    if (plan.gone.length > 0 && broken.length < BROKEN_REFERENCES_LISTED) {
      const changing = new Set(plan.keys.map((k) => keyOf(k.collection, k.id)));
      broken.push(
        ...(await this.references.heldTo(
          collection,
          plan.gone,
          changing,
          BROKEN_REFERENCES_LISTED - broken.length,
        )),
      );
    }
    if (broken.length > 0) throw brokenByUpdate(broken);
  }
}

/** The records as they would become, against the schema: a 422 with the messages when any fails. */
async function checkSchema(
  check: DatabaseCheck,
  collection: string,
  changed: Touched[],
  turn: () => Promise<void>,
): Promise<void> {
  const messages: string[] = [];
  for (const [k, t] of changed.entries()) {
    messages.push(...check.record(collection, k, t.after));
    if (messages.length >= MESSAGES_LISTED) break;
    await turn();
  }
  if (messages.length === 0) return;
  const listed = messages.slice(0, MESSAGES_LISTED);
  // As the original words it: the validator's answer as Python prints a dict of lists.
  throw new InvalidAfterUpdate(
    `Schema document(s) would be invalid after proposed update: {${pyQuoted(collection)}: [${listed.map(pyQuoted).join(', ')}]}`,
    { validation_errors: { [collection]: listed } },
  );
}

interface WritePlan {
  /** Records read in the write's transaction, and what each must still be (null: absent). */
  keys: RecordKey[];
  expected: Array<Doc | null>;
  /** The records as they become, keyed as stored. */
  writes: Doc[];
  /** Store ids that go away (a record moved to another id or store key). */
  deletes: RecordKey[];
  /** Ids that are no record any more once written. */
  gone: string[];
  /** Ids that are new. */
  added: string[];
}

/** The write's decision: nothing changed since the records were read, then the writes. */
function decide(
  collection: string,
  plan: WritePlan,
  current: Array<Doc | null>,
): ReadModifyWriteDecision<null> {
  plan.keys.forEach((key, i) => {
    const now = current[i] ?? null;
    const then = plan.expected[i] ?? null;
    if (!isDeepStrictEqual(now, then))
      throw new Conflict(
        then === null
          ? `A record with the id '${key.id}' was written to ${collection} while this update was checked: run it again`
          : `The record '${key.id}' of ${collection} changed while this update was checked: run it again`,
      );
  });
  return { writes: [{ collection, docs: plan.writes }], deletes: plan.deletes, value: null };
}

/** The new record of an upsert: the equality conditions of `q` (top level and in `$and`). */
function upsertBase(q: Filter): Record<string, unknown> {
  const base: Record<string, unknown> = {};
  const take = (filter: Filter) => {
    for (const [path, condition] of Object.entries(filter)) {
      if (path === '$and' && Array.isArray(condition)) {
        condition.forEach((branch) => isObject(branch) && take(branch));
        continue;
      }
      if (path.startsWith('$')) continue;
      let value: unknown = condition;
      if (isObject(condition)) {
        const keys = Object.keys(condition);
        if (keys.length === 1 && keys[0] === '$eq') value = condition.$eq;
        else if (keys.some((k) => k.startsWith('$'))) continue;
      }
      setPath(base, path.split('.'), structuredClone(value));
    }
  };
  take(q);
  return base;
}

function setPath(target: Record<string, unknown>, segments: string[], value: unknown): void {
  let node = target;
  for (const segment of segments.slice(0, -1)) {
    if (!isObject(node[segment])) node[segment] = {};
    node = node[segment] as Record<string, unknown>;
  }
  node[segments[segments.length - 1]!] = value;
}

/**
 * `u` applied to copies of `records` (an upsert's new record when `inserting`): update operators
 * by mingo, in one pass for all of them, after the checks MongoDB makes of each record's values,
 * or a whole replacement (which keeps the record's id when it names none). Answers plain JSON
 * records, as they are stored.
 */
function applyUpdate(
  records: Array<Record<string, unknown>>,
  statement: UpdateStatement,
  place: string,
  inserting: boolean,
): Array<Record<string, unknown>> {
  if (statement.u.kind === 'replacement') {
    const replacement = statement.u.record;
    return records.map((record) =>
      replacement.id === undefined && record.id !== undefined
        ? { id: record.id, ...structuredClone(replacement) }
        : structuredClone(replacement),
    );
  }
  const operators = operatorsFor(statement.u, inserting);
  const copies = records.map((record) => {
    const copy = structuredClone(record);
    checkTargets(copy, operators, `${place}.u`);
    return copy;
  });
  if (copies.length === 0) return copies;
  try {
    // The filter only places a positional `$` (the records already matched it, by the store's rules).
    const condition = usesPositional(statement.u) ? statement.q : {};
    updateMany(copies, condition as never, operators as never, {
      arrayFilters: statement.arrayFilters,
      // Every record gets its own copy of each value set (a later statement may change one of them).
      cloneMode: 'deep',
    });
  } catch (err) {
    throw new Unprocessable(`${place}.u: ${(err as Error).message}`);
  }
  // `$currentDate` sets dates: stored as their JSON text, as every value is.
  return '$currentDate' in operators
    ? copies.map((c) => JSON.parse(JSON.stringify(c)) as Record<string, unknown>)
    : copies;
}

/** The operators mingo runs: `$setOnInsert` is `$set` when inserting, and nothing otherwise. */
function operatorsFor(u: UpdateOperators, inserting: boolean): Record<string, Record<string, unknown>> {
  const { $setOnInsert, ...rest } = u.operators;
  if (!$setOnInsert || !inserting) return rest;
  return { ...rest, $set: { ...rest.$set, ...$setOnInsert } };
}

const ARRAY_OPERATORS = new Set(['$push', '$addToSet', '$pop', '$pull', '$pullAll']);
const NUMBER_OPERATORS = new Set(['$inc', '$mul', '$bit']);

function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value === 'object' ? 'object' : typeof value;
}

/**
 * The record's values where the operators act, checked as MongoDB checks them (it refuses what
 * mingo would silently skip): numbers for `$inc` and `$mul`, lists for the list operators, and no
 * field created inside a value that is not an object.
 */
function checkTargets(
  record: Record<string, unknown>,
  operators: Record<string, Record<string, unknown>>,
  place: string,
) {
  for (const [operator, fields] of Object.entries(operators)) {
    for (const path of Object.keys(fields)) {
      const segments = path.split('.');
      let node: unknown = record;
      for (const [i, segment] of segments.entries()) {
        if (segment.startsWith('$')) break; // positional: the matched items decide
        const last = i === segments.length - 1;
        if (Array.isArray(node) && /^\d+$/.test(segment)) node = node[Number(segment)];
        else if (isObject(node)) node = node[segment];
        else {
          if (['$unset', '$rename', '$pull', '$pullAll', '$pop'].includes(operator)) break;
          throw new Unprocessable(
            `${place}.${operator}.${path}: cannot create the field '${segment}' inside ${segments.slice(0, i).join('.')}, which holds ${describeType(node)}`,
          );
        }
        if (node === undefined) break;
        if (!last) continue;
        if (NUMBER_OPERATORS.has(operator) && typeof node !== 'number')
          throw new Unprocessable(
            `${place}.${operator}.${path}: cannot apply ${operator} to the record's value, which is ${describeType(node)}, not a number`,
          );
        if (ARRAY_OPERATORS.has(operator) && !Array.isArray(node))
          throw new Unprocessable(
            `${place}.${operator}.${path}: the record's value must be a list for ${operator}, but it is ${describeType(node)}`,
          );
      }
    }
  }
}

function brokenByDelete(broken: BrokenReference[]): BrokenReferences {
  const first = broken[0]!;
  const holder = first.id === null ? 'a document without id' : `the document having 'id'='${first.id}'`;
  return new BrokenReferences(
    `${BROKEN_PREFIX} For example: The document having 'id'='${first.target}' in the collection ` +
      `'${first.target_collection}' is referenced by ${holder} in the collection '${first.collection}'. ` +
      'Deleting the former would leave behind a broken reference. Update or delete referring document(s) and try again.',
    { broken_references: broken },
  );
}

function brokenByUpdate(broken: BrokenReference[]): BrokenReferences {
  const details = broken.map(
    (b) =>
      `The document having id='${b.id ?? 'None'}' in the collection '${b.collection}' contains a reference ` +
      `(in its '${b.slot}' field, referring to the document having id='${b.target}') which would be broken.`,
  );
  return new BrokenReferences(`${BROKEN_PREFIX} Details: ${details.join(', ')}`, {
    broken_references: broken.map(({ target_collection, ...rest }) =>
      target_collection ? { ...rest, target_collection } : rest,
    ),
  });
}
