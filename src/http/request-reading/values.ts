/**
 * Typed reads of `req.query` values for handlers. The request reader has already dropped empty
 * and unknown parameters and the validator has checked the types, so these only convert.
 */
export const queryText = (value: unknown): string | undefined =>
  typeof value === 'string' ? value : undefined;

export const queryInteger = (value: unknown, fallback: number): number => {
  const n = typeof value === 'number' ? value : Number(value);
  return value !== undefined && Number.isFinite(n) ? n : fallback;
};
