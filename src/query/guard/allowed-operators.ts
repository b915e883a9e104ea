import { UnsupportedQuery } from '../../errors.ts';

/** Query operators the service evaluates; every other `$`-key (`$where`, `$expr`, `$function`, ...) is refused. */
export const ALLOWED_OPERATORS = new Set([
  '$eq',
  '$ne',
  '$gt',
  '$gte',
  '$lt',
  '$lte',
  '$in',
  '$nin',
  '$exists',
  '$regex',
  '$options',
  '$and',
  '$or',
  '$nor',
  '$not',
  '$elemMatch',
  '$all',
  '$size',
]);

export function checkOperatorAllowed(key: string, path: string): void {
  if (key.startsWith('$') && !ALLOWED_OPERATORS.has(key)) {
    throw new UnsupportedQuery(
      `Operator ${key} is not allowed${path ? ` (at ${path})` : ''}; allowed operators: ${[...ALLOWED_OPERATORS].join(', ')}`,
    );
  }
}
