/**
 * What of a filter MongoDB may evaluate. MongoDB runs `$regex` on PCRE, which backtracks; a
 * pattern the analysis (search/regex/backtracking.ts) does not call safe never reaches it. The
 * conditions holding such a pattern are dropped from the filter sent to the server, which then
 * matches a superset of the records, and the service applies the whole filter to what comes back
 * with its linear-time engine (`compileFilter`).
 */
import { safeOnBacktrackingEngine } from '../../../search/regex/backtracking.ts';
import type { Filter } from '../port.ts';

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether any `$regex` under `node` holds a pattern unsafe on a backtracking engine. */
function holdsUnsafePattern(node: unknown): boolean {
  if (Array.isArray(node)) return node.some(holdsUnsafePattern);
  if (!isObject(node)) return false;
  if (typeof node.$regex === 'string') {
    const options = typeof node.$options === 'string' ? node.$options : '';
    if (!safeOnBacktrackingEngine(node.$regex, options)) return true;
  }
  return Object.values(node).some(holdsUnsafePattern);
}

/** A filter matching a superset of `filter`'s records, without unsafe patterns; undefined: everything. */
function relaxed(filter: Filter): Filter | undefined {
  const out: Filter = {};
  for (const [key, value] of Object.entries(filter)) {
    if (key === '$and' && Array.isArray(value)) {
      const parts = value.map((c) => relaxed(c as Filter)).filter((c): c is Filter => c !== undefined);
      if (parts.length > 0) out.$and = parts;
    } else if (key === '$or' && Array.isArray(value)) {
      const parts = value.map((c) => relaxed(c as Filter));
      // One branch that matches everything makes the whole $or match everything.
      if (parts.every((c): c is Filter => c !== undefined)) out.$or = parts;
    } else if (!holdsUnsafePattern(value)) {
      // A field condition, or $nor (whose negation could not be widened): kept only when safe.
      out[key] = value;
    }
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * The filter MongoDB may evaluate, and whether it is the whole filter (`exact`) or a superset
 * whose matches the service must check.
 */
export function serverFilter(filter: Filter): { filter: Filter; exact: boolean } {
  if (!holdsUnsafePattern(filter)) return { filter, exact: true };
  return { filter: relaxed(filter) ?? {}, exact: false };
}
