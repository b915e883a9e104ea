/**
 * `update` and `delete` through `POST /queries:run`, all or nothing:
 *
 * 1. the statements are checked as MongoDB checks them (write-statements.ts);
 * 2. they are applied in order to copies of the records they match (a later statement sees what
 *    an earlier one did), nothing written yet (update-operators.ts);
 * 3. the records as they would become are validated against the NMDC schema (the validator of
 *    `/metadata/json:validate`), and a new id must not be taken;
 * 4. unless `allow_broken_refs=true`: every reference the changed records hold must name a record
 *    that will exist, and no other record may be left referencing a record that is deleted or
 *    moved to another id (as the original service refuses such writes);
 * 5. one transaction writes the changes, after checking that no record changed since it was read
 *    (409 when one did); the search index and the provenance edges follow (write-plan.ts).
 *
 * Any refusal is a 4xx with nothing written (worded in write-refusals.ts).
 */
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import { Unprocessable } from '../errors.ts';
import { PacedSize, TURN_MS, Turns } from '../turns.ts';
import type { CheckedChange, CheckedChangeResult, Doc, DocumentStore, Filter } from '../store/port.ts';
import { compileFilter } from '../store/filter.ts';
import { shownRecord } from '../store/record-keys.ts';
import { UNIDENTIFIED_COLLECTIONS } from '../schema/nmdc.ts';
import { DatabaseCheck } from '../validation/index.ts';
import type { BrokenReference, IncomingReferences } from '../validation/incoming-references.ts';
import type { CollectionsReader } from './collections-reader.ts';
import type { DeleteStatement, UpdateStatement } from './write-statements.ts';
import { applyUpdate, upsertBase } from './update-operators.ts';
import { changedSinceRead, checkedChangeOf, planWrite, type Touched, type WritePlan } from './write-plan.ts';
import { brokenByDelete, brokenByUpdate, invalidAfterUpdate } from './write-refusals.ts';

/** The writes a command needs (RecordWriter in search/writer.ts). */
export interface RecordWrites {
  writeIfUnchanged(change: CheckedChange): Promise<CheckedChangeResult>;
}

export interface WriteOptions {
  /** `allow_broken_refs=true`: write even when references would be left dangling. */
  allowBrokenRefs: boolean;
}

/** Schema messages listed at most (the records are checked until there are this many). */
const MESSAGES_LISTED = 100;
/** Broken references looked for (and listed in `broken_references`) at most. */
export const BROKEN_REFERENCES_LISTED = 100;
/** Records one pass of the update operators changes before other requests get a turn, at most. */
const APPLY_CHUNK = 500;
/** Records read per page while matching statements. */
const MATCH_PAGE = 1000;

const keyOf = (collection: string, id: string) => `${collection}\u0000${id}`;

/** Gives other requests a turn when this one has held the event loop for TURN_MS. */
function turns(): () => Promise<void> {
  const t = new Turns();
  return async () => {
    if (t.due()) await t.give();
  };
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
    // By their ids (store keys in a collection without ids), off the event loop when the store
    // can (2,000 records held it 0.3 s; 30,000 without ids, 1.4 s).
    const deletes = ids.map((id) => ({ collection, id }));
    const { deleted } = await this.writes.writeIfUnchanged({ expected: [], writes: [], deletes });
    return { ok: 1, n: deleted };
  }

  async update(collection: string, statements: UpdateStatement[], options: WriteOptions) {
    const unidentified = UNIDENTIFIED_COLLECTIONS.has(collection);
    /** By the store id a record was read under, or `upsert:<index>`. */
    const touched = new Map<string, Touched>();
    const turn = turns();
    let n = 0;
    let nModified = 0;
    const upserted: Array<{ index: number; id?: string }> = [];

    // Records per pass of the update operators, scaled so a pass takes about TURN_MS: a pass over
    // records that each grow by 10^5 values ($push $each) takes 2.5 ms a record; the first is small.
    const applied = new PacedSize(8, TURN_MS, 1, APPLY_CHUNK);
    for (const [index, statement] of statements.entries()) {
      // A turn between statements too: 5,000 statements matching nothing held the loop 0.7 s.
      await turn();
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
      for (let from = 0; from < candidates.length;) {
        const chunk = candidates.slice(from, from + applied.size);
        from += chunk.length;
        const started = performance.now();
        const updated = applyUpdate(
          chunk.map((c) => c.current),
          statement,
          place,
          false,
        );
        applied.took(performance.now() - started);
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
    const plan = await planWrite(collection, changed, turn);
    for (const id of plan.gone) {
      gone.add(keyOf(collection, id));
      await turn();
    }
    await this.ensureNewIdsFree(collection, plan);
    await this.checkReferences(check, collection, changed, plan, options);
    // Written if no record changed since it was read (off the event loop when the store can).
    const { changed: at } = await this.writes.writeIfUnchanged(checkedChangeOf(collection, plan));
    if (at >= 0) throw changedSinceRead(collection, plan, at);
    return { ok: 1, n, nModified, ...(upserted.length ? { upserted } : {}) };
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
    // As the original lists them: first the references other records hold to records the update
    // moves to another id, then those the updated records hold.
    const broken: BrokenReference[] = [];
    if (plan.gone.length > 0) {
      const changing = new Set<string>();
      const turn = turns();
      for (const k of plan.expected) {
        changing.add(keyOf(k.collection, k.id));
        await turn();
      }
      broken.push(
        ...(await this.references.heldTo(collection, plan.gone, changing, BROKEN_REFERENCES_LISTED)),
      );
    }
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
    messages.push(...(await check.record(collection, k, t.after)));
    if (messages.length >= MESSAGES_LISTED) break;
    await turn();
  }
  if (messages.length === 0) return;
  throw invalidAfterUpdate(collection, messages.slice(0, MESSAGES_LISTED));
}
