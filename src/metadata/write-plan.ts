/**
 * The write an update command ends with: what it reads, writes and deletes in one transaction,
 * and the decision taken there (nothing changed since the records were read, then the writes).
 */
import { Conflict } from '../errors.ts';
import type { CheckedChange, Doc, RecordKey } from '../store/port.ts';
import { keyedRecord } from '../store/record-keys.ts';
import { UNIDENTIFIED_COLLECTIONS } from '../schema/nmdc.ts';

/** One record an update command touches: as stored (null when upserted) and as it would become. */
export interface Touched {
  /** The store id it was read under (null when upserted). */
  storedId: string | null;
  before: Doc | null;
  /** As answers show it (no store key). */
  after: Record<string, unknown>;
  /** Whether a statement changed it (a record changed back is written as it was). */
  modified: boolean;
}

export interface WritePlan {
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

/** What the write reads, writes and deletes; which stored ids go away (deleted or moved). */
export function planWrite(collection: string, changed: Touched[]): WritePlan {
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

/** The change the plan writes if its records are still as they were read. */
export function checkedChangeOf(collection: string, plan: WritePlan): CheckedChange {
  return {
    expected: plan.keys.map((key, i) => ({ ...key, doc: plan.expected[i] ?? null })),
    writes: [{ collection, docs: plan.writes }],
    deletes: plan.deletes,
  };
}

/** The refusal when the record at `at` of the plan's keys changed since it was read. */
export function changedSinceRead(collection: string, plan: WritePlan, at: number): Conflict {
  const key = plan.keys[at]!;
  return new Conflict(
    (plan.expected[at] ?? null) === null
      ? `A record with the id '${key.id}' was written to ${collection} while this update was checked: run it again`
      : `The record '${key.id}' of ${collection} changed while this update was checked: run it again`,
  );
}
