/**
 * What the search index stores of a record: every string reached with MongoDB traversal, with
 * its dotted path (array positions dropped, as MongoDB matches `a.b` through arrays), and a
 * fingerprint of the whole record to detect drift.
 */
import { createHash } from 'node:crypto';
import type { Doc } from '../src/store/port.ts';

export interface IndexedValue {
  path: string;
  value: string;
}

/** The string with lone surrogates replaced by U+FFFD (as UTF-8 storage and transport do). */
export function wellFormed(s: string): string {
  return (s as string & { toWellFormed(): string }).toWellFormed();
}

interface PathNode {
  path: string;
  children: Map<string, PathNode>;
  /** Pair number of each string seen at this path in the batch. */
  values: Map<string, number>;
}

/**
 * The distinct (path, string) pairs of a batch of records, numbered in the batch, and the pairs
 * each record holds. Paths are found by walking a tree of the batch's keys, so no path string is
 * built per value, and each pair is one number: indexing a batch allocates little.
 */
export class BatchPairs {
  /** Dotted path and string of each pair. */
  readonly pairPath: string[] = [];
  readonly pairValue: string[] = [];
  /** How many records of the batch hold each pair. */
  readonly holders: number[] = [];
  /** The pairs of each record, each once. */
  readonly recordPairs: number[][] = [];
  private readonly lastHolder: number[] = [];
  private readonly root: PathNode = { path: '', children: new Map(), values: new Map() };

  add(doc: Doc): void {
    const mine: number[] = [];
    this.visit(doc, this.root, this.recordPairs.length, mine);
    this.recordPairs.push(mine);
  }

  get size(): number {
    return this.recordPairs.length;
  }

  private visit(node: unknown, at: PathNode, record: number, mine: number[]): void {
    if (typeof node === 'string') {
      let pair = at.values.get(node);
      if (pair === undefined) {
        pair = this.pairPath.length;
        at.values.set(node, pair);
        this.pairPath.push(at.path);
        // SQLite text is UTF-8: a lone surrogate would not read back. Queries do the same (superset).
        this.pairValue.push(wellFormed(node));
        this.holders.push(0);
        this.lastHolder.push(-1);
      }
      if (this.lastHolder[pair] !== record) {
        this.lastHolder[pair] = record;
        this.holders[pair]!++;
        mine.push(pair);
      }
    } else if (Array.isArray(node)) {
      for (const el of node) this.visit(el, at, record, mine);
    } else if (node !== null && typeof node === 'object') {
      for (const k of Object.keys(node)) {
        let child = at.children.get(k);
        if (child === undefined) {
          child = {
            path: wellFormed(at.path === '' ? k : `${at.path}.${k}`),
            children: new Map(),
            values: new Map(),
          };
          at.children.set(k, child);
        }
        this.visit((node as Record<string, unknown>)[k], child, record, mine);
      }
    }
  }
}

/** Distinct (path, string) pairs of a record. */
export function indexedValuesOf(doc: Doc): IndexedValue[] {
  const batch = new BatchPairs();
  batch.add(doc);
  return batch.recordPairs[0]!.map((p) => ({ path: batch.pairPath[p]!, value: batch.pairValue[p]! }));
}

/**
 * Content hash of a record. Stores keep a record's key order (JSON bodies, BSON), so the
 * serialisation is stable between the write path and `check-index`'s scan.
 */
export function fingerprintOf(doc: Doc): string {
  return fingerprintOfText(JSON.stringify(doc));
}

/** `fingerprintOf` a record given as its `JSON.stringify` text. */
export function fingerprintOfText(text: string): string {
  return createHash('sha1').update(text).digest('base64url');
}

/**
 * Fingerprints already taken of a write's texts (by the array a store's write hooks are all given),
 * position by position: the search index's batch prepared ahead brings them, and the edge index,
 * the next hook, need not hash 10^5 records again (0.25 s of a submission's writing thread).
 */
const taken = new WeakMap<readonly string[], readonly string[]>();

/** Keeps `fingerprints` as those of `texts` (the same length, in order). */
export function rememberFingerprints(texts: readonly string[], fingerprints: readonly string[]): void {
  if (fingerprints.length === texts.length) taken.set(texts, fingerprints);
}

/** The fingerprint of `texts[i]`, remembered or taken now. */
export function fingerprintAmong(texts: readonly string[], i: number): string {
  return taken.get(texts)?.[i] ?? fingerprintOfText(texts[i]!);
}

/**
 * The stored paths a predicate on `path` can match: the path itself and everything nested under
 * it. A numeric segment may be an array position (dropped when indexing), so the path is cut
 * before it: a wider set, never a narrower one.
 */
export function indexedPathScope(path: string): string {
  const segments = path.split('.');
  const numeric = segments.findIndex((s) => /^\d+$/.test(s));
  return (numeric === -1 ? segments : segments.slice(0, numeric)).join('.');
}
