/**
 * The write an update command ends with: what it reads, writes and deletes in one transaction,
 * and the decision taken there (nothing changed since the records were read, then the writes).
 */
import { isDeepStrictEqual } from 'node:util';
import { Conflict } from '../errors.ts';
import type { Doc, ReadModifyWriteDecision, RecordKey } from '../store/port.ts';
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

/** The write's decision: nothing changed since the records were read, then the writes. */
export function decide(
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
