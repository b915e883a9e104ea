/**
 * The part of indexing a batch that needs no database: fingerprints, the (path, string) pairs of
 * each record, and the recurring pair sets kept once per set as groups. Pure and structured-clone
 * friendly, so a rebuild runs it on a worker thread while the main thread writes (see
 * `prepare-worker.ts`).
 */
import { createHash } from 'node:crypto';
import type { Doc } from '../../src/store/port.ts';
import { BatchPairs, fingerprintOf, fingerprintOfText } from '../indexed-values.ts';

export interface PreparedBatch {
  /** Each id once (its last version in the batch), with its content fingerprint. */
  ids: string[];
  fingerprints: string[];
  /** Dotted path and string of each pair (numbered in the batch). */
  pairPath: string[];
  pairValue: string[];
  /** The pairs each record holds outside its group. */
  own: number[][];
  /** The set (index in `sets`) each record's group holds, -1 for none. */
  groupOf: Int32Array;
  sets: number[][];
  /** A hash of each set's pairs: finds its group across batches and processes. */
  hashes: string[];
  /**
   * Keys of the strings already indexed when the batch was prepared (by pair; 0: not found then),
   * valid while the strings generation is still `generation` (see `strings-generation.ts`).
   */
  known?: { generation: number; keys: Float64Array };
}

/**
 * @param texts each record's `JSON.stringify` text, when at hand: its fingerprint is then taken
 *   from the text instead of serialising the record again.
 */
export function prepareBatch(docs: Doc[], texts?: string[]): PreparedBatch {
  // The last version of an id wins, as in the store.
  const latest = new Map<string, number>();
  docs.forEach((doc, i) => {
    latest.delete(doc.id);
    latest.set(doc.id, i);
  });
  const pairs = new BatchPairs();
  const ids: string[] = [];
  const fingerprints: string[] = [];
  for (const [id, i] of latest) {
    ids.push(id);
    fingerprints.push(texts ? fingerprintOfText(texts[i]!) : fingerprintOf(docs[i]!));
    pairs.add(docs[i]!);
  }
  const { groupOf, sets } = sharedSets(pairs);
  const members = sets.map((set) => new Set(set));
  return {
    ids,
    fingerprints,
    pairPath: pairs.pairPath,
    pairValue: pairs.pairValue,
    own: pairs.recordPairs.map((mine, i) => {
      const set = groupOf[i]!;
      return set < 0 ? mine : mine.filter((p) => !members[set]!.has(p));
    }),
    groupOf,
    sets,
    hashes: sets.map((set) =>
      createHash('sha256')
        .update(
          JSON.stringify(set.map((p) => JSON.stringify([pairs.pairPath[p], pairs.pairValue[p]])).sort()),
        )
        .digest('base64url'),
    ),
  };
}

/**
 * A batch's recurring pair sets: `sets` holds each distinct set (pair numbers of a `BatchPairs`)
 * and `groupOf[i]` the set of the batch's i-th record (-1: none).
 */
export interface SharedSets {
  groupOf: Int32Array;
  sets: number[][];
}

/**
 * A pair recurs when at least this share of the batch (and MIN_SHARED_RECORDS records) holds it.
 * A record whose recurring set is its own tries the next, stricter share.
 */
const SHARED_SHARES = [1 / 16, 1 / 4];
const MIN_SHARED_RECORDS = 4;
const MIN_GROUP_PAIRS = 2;

/**
 * Splits off each record's recurring pairs. A set is kept (as a group) only when at least two
 * records of the batch hold exactly that set: pairs that recur on their own but not together
 * (dates, depths) would otherwise make a group per record, dearer than the rows they replace.
 * Such a record tries again with only the pairs a larger share of the batch holds.
 */
export function sharedSets(batch: BatchPairs): SharedSets {
  const groupOf = new Int32Array(batch.size).fill(-1);
  const sets: number[][] = [];
  const setOf = new Map<string, number>();
  let pending = batch.recordPairs.map((_, i) => i);
  for (const share of SHARED_SHARES) {
    const threshold = Math.max(MIN_SHARED_RECORDS, Math.ceil(batch.size * share));
    if (pending.length < 2) break;
    const signatureOf = new Map<number, string>();
    const users = new Map<string, number>();
    for (const i of pending) {
      const recurring: number[] = [];
      for (const p of batch.recordPairs[i]!) if (batch.holders[p]! >= threshold) recurring.push(p);
      if (recurring.length < MIN_GROUP_PAIRS) continue;
      const signature = recurring.sort((x, y) => x - y).join(',');
      signatureOf.set(i, signature);
      users.set(signature, (users.get(signature) ?? 0) + 1);
    }
    const unplaced: number[] = [];
    for (const i of pending) {
      const signature = signatureOf.get(i);
      if (signature === undefined) continue;
      if (users.get(signature)! < 2) {
        unplaced.push(i);
        continue;
      }
      let set = setOf.get(signature);
      if (set === undefined) {
        set = sets.length;
        setOf.set(signature, set);
        sets.push(signature.split(',').map(Number));
      }
      groupOf[i] = set;
    }
    pending = unplaced;
  }
  return { groupOf, sets };
}
