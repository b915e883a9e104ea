import { UnsupportedQuery } from '../../errors.ts';
import { FILTER_LIMITS } from './limits.ts';

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/** Each operator's operand must have the shape MongoDB requires; a clear refusal beats an engine error later. */
export function checkOperand(operator: string, operand: unknown, at: string): void {
  const fail = (what: string) => {
    throw new UnsupportedQuery(`${operator} at ${at || 'top level'} needs ${what}`);
  };
  switch (operator) {
    case '$and':
    case '$or':
    case '$nor':
      if (!Array.isArray(operand) || operand.length === 0 || !operand.every(isPlainObject))
        fail('a non-empty array of filter objects');
      else if (operand.length > FILTER_LIMITS.maxClauses)
        fail(`at most ${FILTER_LIMITS.maxClauses} filter objects`);
      break;
    case '$in':
    case '$nin':
    case '$all':
      if (!Array.isArray(operand)) fail('an array');
      else if (operand.length > FILTER_LIMITS.maxListSize)
        fail(`at most ${FILTER_LIMITS.maxListSize} values`);
      break;
    case '$regex':
      if (typeof operand !== 'string') fail('a string pattern');
      else if (operand.length > FILTER_LIMITS.maxRegexLength)
        fail(`a pattern of at most ${FILTER_LIMITS.maxRegexLength} characters`);
      break;
    case '$options':
      if (typeof operand !== 'string' || !/^[imsx]*$/.test(operand)) fail('a string of the flags i, m, s, x');
      break;
    case '$size':
      if (!Number.isInteger(operand) || (operand as number) < 0) fail('a non-negative integer');
      break;
    case '$exists':
      if (typeof operand !== 'boolean' && operand !== 0 && operand !== 1) fail('true or false');
      break;
    case '$not':
    case '$elemMatch':
      if (!isPlainObject(operand)) fail('an object');
      break;
  }
}
