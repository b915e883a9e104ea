/**
 * Inclusion projection with MongoDB semantics: dotted paths reach into embedded objects and
 * through arrays (keeping the array shape, dropping non-object elements); `id` always included.
 */
import type { Doc, Projection } from './port.ts';

type Tree = { [key: string]: Tree | true };

function buildTree(paths: string[]): Tree {
  const tree: Tree = {};
  for (const path of paths) {
    const segments = path.split('.');
    let node = tree;
    for (let i = 0; i < segments.length; i++) {
      const seg = segments[i]!;
      if (i === segments.length - 1) node[seg] = true;
      else {
        const next = node[seg];
        if (next === true) break; // a shorter path already includes the whole subtree
        node = node[seg] = next ?? {};
      }
    }
  }
  return tree;
}

/** A tree's members, listed once: a projection of 10,000 paths listed them again for every record. */
type Compiled = Array<[string, Compiled | true]>;

function compileTree(tree: Tree): Compiled {
  return Object.entries(tree).map(([key, sub]) => [key, sub === true ? true : compileTree(sub)]);
}

function applyTree(value: unknown, tree: Compiled): unknown {
  if (Array.isArray(value)) {
    return value
      .filter((el) => Array.isArray(el) || (el !== null && typeof el === 'object'))
      .map((el) => applyTree(el, tree));
  }
  const source = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [key, sub] of tree) {
    if (!(key in source)) continue;
    const v = source[key];
    if (sub === true) out[key] = v;
    else if (v !== null && typeof v === 'object') out[key] = applyTree(v, sub);
  }
  return out;
}

/** Returns a projector for a list of paths, or identity when there is no projection. */
export function compileProjection(projection: Projection): (doc: Doc) => Doc {
  if (!projection || projection.length === 0) return (doc) => doc;
  const tree = compileTree(buildTree(['id', ...projection.filter((p) => p !== '_id')]));
  return (doc) => applyTree(doc, tree) as Doc;
}

/** Whether a projection keeps nothing but `id` (a page of it needs no record's text). */
export function projectsIdOnly(projection: Projection): boolean {
  return !!projection && projection.length > 0 && projection.every((p) => p === 'id' || p === '_id');
}
