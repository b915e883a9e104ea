/**
 * The filter guard: every JSON filter (schema endpoints, `/queries:run`) and every compact filter
 * passes here before it reaches a store. It accepts only the operators the service evaluates,
 * checks operand shapes, and bounds nesting depth, pattern length and list sizes.
 */
import { UnsupportedQuery } from '../../errors.ts';
import type { Filter } from '../../store/port.ts';
import { checkOperatorAllowed } from './allowed-operators.ts';
import { checkFieldPath } from './field-names.ts';
import { FILTER_LIMITS } from './limits.ts';
import { checkOperand } from './operand-shapes.ts';

export { ALLOWED_OPERATORS } from './allowed-operators.ts';
export { FILTER_LIMITS } from './limits.ts';

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

function checkDepth(depth: number): void {
  if (depth > FILTER_LIMITS.maxDepth) {
    throw new UnsupportedQuery(`Filter is nested deeper than ${FILTER_LIMITS.maxDepth} levels`);
  }
}

/** Walks a value used as an operand (literal documents may hold anything but must stay within depth). */
function checkLiteral(value: unknown, depth: number): void {
  checkDepth(depth);
  if (Array.isArray(value)) for (const v of value) checkLiteral(v, depth + 1);
  else if (isPlainObject(value)) for (const v of Object.values(value)) checkLiteral(v, depth + 1);
}

/** What a filter may hold beyond the query operators. */
export interface GuardOptions {
  /**
   * `$expr` (aggregation expressions) at the query level: for `$match` stages of aggregation
   * pipelines, which only runtime administrators run and which never reach a store as they are.
   */
  expressions?: boolean;
}

/** `{field: <condition>}` where condition is a literal or an object of operators. */
function checkCondition(condition: unknown, at: string, depth: number, options: GuardOptions): void {
  checkDepth(depth);
  if (!isPlainObject(condition)) {
    checkLiteral(condition, depth);
    return;
  }
  const keys = Object.keys(condition);
  const operators = keys.filter((k) => k.startsWith('$'));
  if (operators.length === 0) {
    checkLiteral(condition, depth);
    return;
  }
  if (operators.length !== keys.length) {
    throw new UnsupportedQuery(`Condition at ${at} mixes operators with field names (${keys.join(', ')})`);
  }
  if ('$options' in condition && !('$regex' in condition)) {
    throw new UnsupportedQuery(`$options at ${at} needs a $regex beside it`);
  }
  for (const operator of operators) {
    checkOperatorAllowed(operator, at);
    const operand = condition[operator];
    checkOperand(operator, operand, at);
    if (operator === '$not') checkCondition(operand, `${at}.$not`, depth + 1, options);
    else if (operator === '$elemMatch') {
      // $elemMatch holds either a query over the elements' fields or operators on the elements.
      const inner = operand as Record<string, unknown>;
      if (Object.keys(inner).every((k) => k.startsWith('$') && !['$and', '$or', '$nor'].includes(k))) {
        checkCondition(inner, `${at}.$elemMatch`, depth + 1, options);
      } else checkQuery(inner, depth + 1, `${at}.$elemMatch`, options);
    } else checkLiteral(operand, depth + 1);
  }
}

function checkQuery(filter: Record<string, unknown>, depth: number, at: string, options: GuardOptions): void {
  checkDepth(depth);
  for (const [key, value] of Object.entries(filter)) {
    if (key === '$expr' && options.expressions) {
      checkLiteral(value, depth + 1);
      continue;
    }
    if (key.startsWith('$')) {
      checkOperatorAllowed(key, at);
      if (key !== '$and' && key !== '$or' && key !== '$nor') {
        throw new UnsupportedQuery(`Operator ${key} cannot be used at ${at || 'the top level'} of a filter`);
      }
      checkOperand(key, value, at);
      (value as Record<string, unknown>[]).forEach((branch, i) =>
        checkQuery(branch, depth + 1, `${at ? `${at}.` : ''}${key}[${i}]`, options),
      );
    } else {
      checkFieldPath(key);
      checkCondition(value, at ? `${at}.${key}` : key, depth + 1, options);
    }
  }
}

/** Throws UnsupportedQuery naming the problem, or returns the filter unchanged. */
export function guardFilter(filter: unknown, options: GuardOptions = {}): Filter {
  if (!isPlainObject(filter)) throw new UnsupportedQuery('Filter must be a JSON object');
  checkQuery(filter, 1, '', options);
  return filter;
}

/** Parses the JSON text of a schema-endpoint filter: UnsupportedQuery when it is not JSON or not an object. */
export function parseJsonFilter(text: string | undefined): Filter {
  if (text === undefined || text.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new UnsupportedQuery(`Filter is not valid JSON: ${(err as Error).message}`);
  }
  return guardFilter(parsed);
}
