import { UnsupportedQuery } from '../../errors.ts';

const FORBIDDEN_SEGMENTS = new Set(['__proto__', 'constructor', 'prototype']);

/** Field paths are dotted attribute names; prototype keys are refused so no evaluator can reach Object internals. */
export function checkFieldPath(field: string): void {
  for (const segment of field.split('.')) {
    if (FORBIDDEN_SEGMENTS.has(segment)) {
      throw new UnsupportedQuery(`Field "${field}" is not allowed: "${segment}" is not an attribute name`);
    }
    if (segment === '') throw new UnsupportedQuery(`Field "${field}" has an empty path segment`);
  }
}
