/**
 * The four MongoDB update operators a changesheet's actions become (`$set`, `$unset`, `$addToSet`
 * with `$each`, `$pull` with `$in`), applied to a copy of a record to get the record as it would
 * become, with MongoDB's meaning for dotted paths: `$set` creates missing objects on the way,
 * `$unset` and `$pull` of something absent change nothing, `$addToSet` adds only items not already
 * there. Items compare as MongoDB compares them, except that an object's key order does not matter.
 */

export type UpdateStatement =
  | { $set: Record<string, unknown> }
  | { $unset: Record<string, ''> }
  | { $addToSet: Record<string, { $each: unknown[] }> }
  | { $pull: Record<string, { $in: unknown[] }> };

/** An update that cannot be applied to the record as it is (e.g. adding items to a text value). */
export class UpdateConflict extends Error {}

type Obj = Record<string, unknown>;

function isObject(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Deep equality of JSON values; object keys in any order. */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((item, i) => sameValue(item, b[i]));
  }
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => k in b && sameValue(a[k], b[k]));
  }
  return false;
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (isObject(value)) return 'an object';
  return `the ${typeof value} ${JSON.stringify(value)}`;
}

/**
 * The object holding the last part of `path`, or undefined when a part on the way is absent (and
 * `create` is false). A part on the way that holds a list or a plain value is a conflict.
 */
function parentOf(doc: Obj, path: string, create: boolean): { parent: Obj; key: string } | undefined {
  const parts = path.split('.');
  let at: Obj = doc;
  for (let i = 0; i < parts.length - 1; i++) {
    const part = parts[i]!;
    const next = at[part];
    if (next === undefined || next === null) {
      if (!create) return undefined;
      const made: Obj = {};
      at[part] = made;
      at = made;
    } else if (isObject(next)) {
      at = next;
    } else {
      throw new UpdateConflict(
        `'${parts.slice(0, i + 1).join('.')}' holds ${describe(next)}, so it has no '${parts[i + 1]}'`,
      );
    }
  }
  return { parent: at, key: parts[parts.length - 1]! };
}

/** Applies one statement to `doc` in place; true when the record changed. */
export function applyStatement(doc: Obj, statement: UpdateStatement): boolean {
  let changed = false;
  if ('$set' in statement) {
    for (const [path, value] of Object.entries(statement.$set)) {
      const { parent, key } = parentOf(doc, path, true)!;
      if (!(key in parent) || !sameValue(parent[key], value)) changed = true;
      parent[key] = structuredClone(value);
    }
  } else if ('$unset' in statement) {
    for (const path of Object.keys(statement.$unset)) {
      const found = parentOf(doc, path, false);
      if (found && found.key in found.parent) {
        delete found.parent[found.key];
        changed = true;
      }
    }
  } else if ('$addToSet' in statement) {
    for (const [path, { $each }] of Object.entries(statement.$addToSet)) {
      const { parent, key } = parentOf(doc, path, true)!;
      const current = parent[key];
      if (current !== undefined && !Array.isArray(current)) {
        throw new UpdateConflict(
          `'${path}' holds ${describe(current)}, not a list, so items cannot be added to it`,
        );
      }
      const list = (current as unknown[] | undefined) ?? [];
      if (current === undefined) {
        parent[key] = list;
        changed = true;
      }
      for (const item of $each) {
        if (list.some((present) => sameValue(present, item))) continue;
        list.push(structuredClone(item));
        changed = true;
      }
    }
  } else if ('$pull' in statement) {
    for (const [path, { $in }] of Object.entries(statement.$pull)) {
      const found = parentOf(doc, path, false);
      const current = found?.parent[found.key];
      if (found === undefined || current === undefined) continue;
      if (!Array.isArray(current)) {
        throw new UpdateConflict(
          `'${path}' holds ${describe(current)}, not a list, so items cannot be removed from it`,
        );
      }
      const kept = current.filter((present) => !$in.some((item) => sameValue(present, item)));
      if (kept.length !== current.length) {
        found.parent[found.key] = kept;
        changed = true;
      }
    }
  }
  return changed;
}
