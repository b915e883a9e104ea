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

function collect(node: unknown, path: string, seen: Set<string>, out: IndexedValue[]): void {
  if (typeof node === 'string') {
    const key = `${path}\u0000${node}`;
    if (!seen.has(key)) {
      seen.add(key);
      out.push({ path, value: node });
    }
  } else if (Array.isArray(node)) {
    for (const el of node) collect(el, path, seen, out);
  } else if (node !== null && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) collect(v, path === '' ? k : `${path}.${k}`, seen, out);
  }
}

/** Distinct (path, string) pairs of a record. */
export function indexedValuesOf(doc: Doc): IndexedValue[] {
  const out: IndexedValue[] = [];
  collect(doc, '', new Set(), out);
  return out;
}

/**
 * Content hash of a record. Stores keep a record's key order (JSON bodies, BSON), so the
 * serialisation is stable between the write path and `check-index`'s scan.
 */
export function fingerprintOf(doc: Doc): string {
  return createHash('sha1').update(JSON.stringify(doc)).digest('base64url');
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
