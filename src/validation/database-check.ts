/**
 * The checks of an NMDC `Database` payload, record by record, so that both a request body and a
 * loader's stream of millions of records go through the same code: `record()` checks one record
 * (JSON Schema of its class, QuantityValue units, an id repeated in its collection) and keeps what
 * referential integrity needs; `references()` then checks every reference of the records seen
 * against the records seen and the store.
 *
 * A reference is resolved as soon as its target has been seen (the common case: studies come
 * before biosamples), so only forward references and references to stored records are kept.
 */
import type { DocumentStore } from '../store/port.ts';
import { classAndDescendants } from '../schema/class-tree.ts';
import { referenceSlotsOf } from '../schema/reference-slots.ts';
import { COLLECTION_NAMES } from '../schema/nmdc.ts';
import { rangeClassesOf } from './json-schema.ts';
import { clipped, pyRepr, type RuleViolation } from './rule-messages.ts';
import { nestingRefusal, valuesWithin } from '../store/nesting.ts';
import { LARGE_RECORD_VALUES, MAX_RECORD_VALUES, schemaViolations } from './schema-violations.ts';
import { schemaViolationsOnThread } from './validation-thread.ts';
import { Turns } from '../turns.ts';
import { unitViolations } from './storage-units.ts';

/** One problem, with the record's place in the payload. */
export interface RecordProblem {
  collection: string;
  index: number;
  /** The record's id, when it has a string one. */
  id?: string;
  /** The `origin` the record was checked under (which input of several). */
  origin?: number;
  message: string;
  /** For a broken reference: the slot holding it and the id it names. */
  reference?: { slot: string; target: string };
}

export interface DatabaseCheckOptions {
  /**
   * Records the store holds that will be gone when the checked records are written (deleted, or
   * moved to another id): references to them are broken unless a checked record has the id.
   */
  gone?: (collection: string, id: string) => boolean;
}

interface PendingReference {
  origin: number;
  collection: string;
  index: number;
  id: string | undefined;
  slot: string;
  /** Position in the slot's list, or undefined for a single value. */
  position: number | undefined;
  target: string;
  allowed: readonly string[];
}

/** Store lookups per query: small enough for any store's `$in`, large enough to be few. */
const LOOKUP_BATCH = 500;

let allowedCollectionsByRange: Map<string, readonly string[]> | undefined;

/** The collections whose records' classes a slot's range admits (`nmdc:Study` -> study_set). */
export function collectionsFor(range: string): readonly string[] {
  allowedCollectionsByRange ??= new Map();
  let found = allowedCollectionsByRange.get(range);
  if (!found) {
    const admitted = classAndDescendants(range);
    found = COLLECTION_NAMES.filter((c) => rangeClassesOf(c).some((name) => admitted.has(`nmdc:${name}`)));
    allowedCollectionsByRange.set(range, found);
  }
  return found;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/** The message for a rule broken at `place` (a JSON pointer into the payload). */
function placedMessage(v: RuleViolation, place: string, id: string | undefined): string {
  const where = v.placed ? v.text : `${v.text} in ${place}${v.path}`;
  return id !== undefined && v.path !== '/id' ? `${where} (id '${clipped(id)}')` : where;
}

export class DatabaseCheck {
  /** Collection -> id -> index of the first record with it. */
  private readonly seen = new Map<string, Map<string, number>>();
  private pending: PendingReference[] = [];
  /** Which input the next records come from, when they come from several (given back with their problems). */
  origin = 0;

  constructor(
    private readonly store: Pick<DocumentStore, 'find'>,
    private readonly options: DatabaseCheckOptions = {},
  ) {}

  /** The class a record of `collection` is checked against (bare name), or a message saying why there is none. */
  private classOf(
    collection: string,
    record: Record<string, unknown>,
  ): { name: string } | { problem: RuleViolation } {
    const range = rangeClassesOf(collection);
    if (range.length === 1) return { name: range[0]! };
    const type = record.type;
    const allowed = range.map((c) => `nmdc:${c}`);
    if (type === undefined)
      return { problem: { path: '', text: `'type' is a required property (one of ${pyRepr(allowed)})` } };
    const name = typeof type === 'string' && type.startsWith('nmdc:') ? type.slice(5) : undefined;
    if (name !== undefined && range.includes(name)) return { name };
    return {
      problem: {
        path: '/type',
        text: `${pyRepr(type)} is not one of ${pyRepr(allowed)} (the classes ${collection} may hold)`,
      },
    };
  }

  /**
   * Checks one record of a Database collection at `index` in it: the messages of every rule it
   * breaks (none when it passes). `collection` must be a Database collection name.
   */
  async record(collection: string, index: number, record: unknown): Promise<string[]> {
    const place = `/${collection}/${index}`;
    if (!isPlainObject(record)) {
      return [`${pyRepr(record)} is not of type 'object' in ${place}`];
    }
    // Before any recursive walk: a record nested thousands of levels would overflow the stack.
    const values = valuesWithin(record);
    if (values === undefined) return [nestingRefusal(`The record at ${place}`)];
    if (values > MAX_RECORD_VALUES)
      return [
        `The record at ${place} holds ${values} values, more than the ${MAX_RECORD_VALUES} a record may ` +
          "(MongoDB's 16 MiB document limit)",
      ];
    const id = typeof record.id === 'string' ? record.id : undefined;
    const messages: string[] = [];
    const cls = this.classOf(collection, record);
    if ('problem' in cls) messages.push(placedMessage(cls.problem, place, id));
    else {
      const found =
        values > LARGE_RECORD_VALUES
          ? await schemaViolationsOnThread(cls.name, record)
          : schemaViolations(cls.name, record);
      for (const v of found.violations) messages.push(placedMessage(v, place, id));
      if (found.undescribed > 0)
        messages.push(
          `... and ${found.undescribed} more schema errors in ${place} ` +
            `(the first ${found.described} are described)`,
        );
    }
    for (const v of unitViolations(record, place)) messages.push(placedMessage(v, place, id));
    if (id !== undefined) {
      let ids = this.seen.get(collection);
      if (!ids) this.seen.set(collection, (ids = new Map()));
      const first = ids.get(id);
      if (first !== undefined)
        messages.push(
          `Duplicate id '${clipped(id)}' in ${place}/id: the record at /${collection}/${first} has it too (ids are unique in a collection)`,
        );
      else ids.set(id, index);
    }
    if (messages.length > 0) return messages;
    if ('name' in cls) this.keepReferences(collection, index, id, `nmdc:${cls.name}`, record);
    return messages;
  }

  private has(allowed: readonly string[], target: string): boolean {
    for (const c of allowed) if (this.seen.get(c)?.has(target)) return true;
    return false;
  }

  private keepReferences(
    collection: string,
    index: number,
    id: string | undefined,
    type: string,
    record: Record<string, unknown>,
  ): void {
    for (const { slot, range } of referenceSlotsOf(type)) {
      const value = record[slot];
      if (value === undefined || value === null) continue;
      const allowed = collectionsFor(range);
      const one = (target: unknown, position: number | undefined) => {
        if (typeof target !== 'string' || this.has(allowed, target)) return;
        this.pending.push({ origin: this.origin, collection, index, id, slot, position, target, allowed });
      };
      if (Array.isArray(value)) for (let k = 0; k < value.length; k++) one(value[k], k);
      else one(value, undefined);
    }
  }

  /**
   * Referential integrity of the records checked so far: each id they reference must be the id
   * of a record checked here or in the store, in a collection the slot's range allows. The
   * store is asked in batches, one query per collection and batch.
   */
  async references(): Promise<RecordProblem[]> {
    // Turns between records too: 30,000 references, each resolved or described, held the loop 0.1 s.
    const turns = new Turns();
    const unresolved: PendingReference[] = [];
    for (const r of this.pending) {
      if (!this.has(r.allowed, r.target)) unresolved.push(r);
      if (turns.due()) await turns.give();
    }
    this.pending = [];
    if (unresolved.length === 0) return [];
    const wanted = new Map<string, Set<string>>();
    for (const r of unresolved)
      for (const c of r.allowed) {
        let ids = wanted.get(c);
        if (!ids) wanted.set(c, (ids = new Set()));
        ids.add(r.target);
      }
    const stored = new Map<string, Set<string>>();
    for (const [collection, ids] of wanted) {
      const found = new Set<string>();
      const all = [...ids];
      for (let i = 0; i < all.length; i += LOOKUP_BATCH) {
        // The embedded store answers synchronously: a turn between lookups when they run long.
        if (turns.due()) await turns.give();
        const docs = await this.store.find(
          collection,
          { id: { $in: all.slice(i, i + LOOKUP_BATCH) } },
          { projection: ['id'] },
        );
        for (const d of docs) if (!this.options.gone?.(collection, d.id)) found.add(d.id);
      }
      stored.set(collection, found);
    }
    const problems: RecordProblem[] = [];
    for (const r of unresolved) {
      if (turns.due()) await turns.give();
      if (r.allowed.some((c) => stored.get(c)?.has(r.target))) continue;
      const who = r.id !== undefined ? `Document '${clipped(r.id)}'` : `Document #${r.index}`;
      const path = `/${r.collection}/${r.index}/${r.slot}${r.position === undefined ? '' : `/${r.position}`}`;
      problems.push({
        origin: r.origin,
        collection: r.collection,
        index: r.index,
        id: r.id,
        reference: { slot: r.slot, target: r.target },
        message:
          `${who} in collection '${r.collection}' has a field '${r.slot}' that references a document having id ` +
          `'${clipped(r.target)}', but the latter document does not exist in any of the collections the NMDC Schema says ` +
          `it can exist in (${r.allowed.join(', ') || 'none'}); at ${path}`,
      });
    }
    return problems;
  }
}
