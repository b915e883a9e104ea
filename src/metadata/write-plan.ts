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
  /** Records read in the write's transaction, and what each must still be (`doc` null: absent). */
  expected: CheckedChange['expected'];
  /** The records as they become, keyed as stored. */
  writes: Doc[];
  /** Store ids that go away (a record moved to another id or store key). */
  deletes: RecordKey[];
  /** Ids that are no record any more once written. */
  gone: string[];
  /** Ids that are new. */
  added: string[];
}

/**
 * What the write reads, writes and deletes; which stored ids go away (deleted or moved). `turn`
 * is awaited between records: keying a record of a collection without ids digests its content
 * (30,000 of them held the event loop 0.1-0.2 s), and 10^5 records' sets and lists take as long.
 */
export async function planWrite(
  collection: string,
  changed: Touched[],
  turn: () => Promise<void>,
): Promise<WritePlan> {
  const unidentified = UNIDENTIFIED_COLLECTIONS.has(collection);
  const expected: WritePlan['expected'] = [];
  const writes: Doc[] = [];
  const deletes: RecordKey[] = [];
  const moved: string[] = [];
  const added: string[] = [];
  const storedIds = new Set<string>();
  for (const t of changed) {
    if (t.storedId !== null) storedIds.add(t.storedId);
    await turn();
  }
  for (const t of changed) {
    await turn();
    const doc = keyedRecord(collection, t.after) as Doc;
    writes.push(doc);
    if (t.storedId !== null) {
      expected.push({ collection, id: t.storedId, doc: t.before });
      if (doc.id !== t.storedId) {
        deletes.push({ collection, id: t.storedId });
        moved.push(t.storedId);
      }
    }
    // A store key is the content's digest: a record with the same content is the same record.
    if (!unidentified && t.storedId !== doc.id && !storedIds.has(doc.id)) {
      expected.push({ collection, id: doc.id, doc: null });
      added.push(doc.id);
    }
  }
  const remaining = new Set<string>();
  for (const d of writes) {
    remaining.add(d.id);
    await turn();
  }
  const gone: string[] = [];
  for (const id of moved) {
    if (!remaining.has(id)) gone.push(id);
    await turn();
  }
  return { expected, writes, deletes, gone, added };
}

/** The change the plan writes if its records are still as they were read. */
export function checkedChangeOf(collection: string, plan: WritePlan): CheckedChange {
  return { expected: plan.expected, writes: [{ collection, docs: plan.writes }], deletes: plan.deletes };
}

/** The refusal when the record at `at` of the plan's keys changed since it was read. */
export function changedSinceRead(collection: string, plan: WritePlan, at: number): Conflict {
  const key = plan.expected[at]!;
  return new Conflict(
    key.doc === null
      ? `A record with the id '${key.id}' was written to ${collection} while this update was checked: run it again`
      : `The record '${key.id}' of ${collection} changed while this update was checked: run it again`,
  );
}
