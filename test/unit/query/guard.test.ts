import { describe, expect, it } from 'vitest';
import { guardFilter, parseJsonFilter, FILTER_LIMITS } from '../../../src/query/guard/index.ts';
import { statusOf } from '../../../src/http/error-handler.ts';
import { UnsupportedQuery } from '../../../src/errors.ts';

const refusal = (fn: () => unknown): { status: number; detail: string } => {
  try {
    fn();
  } catch (err) {
    // The guard refuses in the query layer's words; the API answers with the status the handler maps it to.
    expect(err).toBeInstanceOf(UnsupportedQuery);
    return {
      status: statusOf(err as UnsupportedQuery),
      detail: (err as UnsupportedQuery).detail as string,
    };
  }
  throw new Error('expected a refusal');
};

describe('guardFilter', () => {
  it('accepts every allowed operator in realistic positions', () => {
    const filter = {
      'lat_lon.latitude': { $gt: 45.0, $lte: 50 },
      ecosystem_category: 'Plants',
      $or: [{ name: { $regex: '^soil', $options: 'i' } }, { id: { $in: ['nmdc:bsm-11-a'] } }],
      $nor: [{ x: { $exists: true } }],
      tags: { $all: ['a'], $size: 1, $elemMatch: { $eq: 'a' } },
      has_input: { $not: { $regex: 'x' } },
      'env_broad_scale.term': { $elemMatch: { name: { $ne: 'y' } } },
      depth: { $nin: [1, 2], $eq: 3, $gte: 0, $lt: 9 },
      $and: [{ a: 1 }],
    };
    expect(guardFilter(filter)).toBe(filter);
  });

  it.each(['$where', '$expr', '$function', '$accumulator', '$text', '$jsonSchema'])(
    'refuses %s with a detail naming it',
    (op) => {
      const { status, detail } = refusal(() => guardFilter({ [op]: 'x' }));
      expect(status).toBe(422);
      expect(detail).toContain(op);
    },
  );

  it('refuses unknown operators nested in a field condition', () => {
    expect(refusal(() => guardFilter({ a: { $where: 'sleep(1)' } })).detail).toContain('$where');
    expect(refusal(() => guardFilter({ $or: [{ a: { $type: 2 } }] })).detail).toContain('$type');
  });

  it('bounds nesting depth', () => {
    let deep: Record<string, unknown> = { a: 1 };
    for (let i = 0; i < FILTER_LIMITS.maxDepth + 2; i++) deep = { $and: [deep] };
    expect(refusal(() => guardFilter(deep)).detail).toContain('nested deeper');
  });

  it('bounds regex length and list sizes', () => {
    expect(
      refusal(() => guardFilter({ a: { $regex: 'x'.repeat(FILTER_LIMITS.maxRegexLength + 1) } })).detail,
    ).toContain('pattern of at most');
    const ids = Array.from({ length: FILTER_LIMITS.maxListSize + 1 }, (_, i) => String(i));
    expect(refusal(() => guardFilter({ id: { $in: ids } })).detail).toContain('at most');
    const clauses = Array.from({ length: FILTER_LIMITS.maxClauses + 1 }, (_, i) => ({ name: `n${i}` }));
    expect(refusal(() => guardFilter({ $or: clauses })).detail).toBe(
      '$or at top level needs at most 1000 filter objects',
    );
    expect(() => guardFilter({ $or: clauses.slice(1) })).not.toThrow();
  });

  it('refuses prototype keys anywhere in a path', () => {
    expect(refusal(() => parseJsonFilter('{"__proto__": {"x": 1}}')).detail).toContain('__proto__');
    expect(refusal(() => guardFilter({ 'a.constructor': 1 })).detail).toContain('constructor');
  });

  it('checks operand shapes', () => {
    expect(refusal(() => guardFilter({ $or: [] })).detail).toContain('non-empty array');
    expect(refusal(() => guardFilter({ a: { $in: 'x' } })).detail).toContain('array');
    expect(refusal(() => guardFilter({ a: { $regex: 'x', $options: 'g' } })).detail).toContain('flags');
    expect(refusal(() => guardFilter({ a: { $gt: 1, b: 2 } })).detail).toContain('mixes operators');
  });
});

describe('parseJsonFilter', () => {
  it('answers 422 for text that is not JSON or not an object', () => {
    expect(refusal(() => parseJsonFilter('{nope')).detail).toContain('not valid JSON');
    expect(refusal(() => parseJsonFilter('[1,2]')).detail).toBe('Filter must be a JSON object');
    expect(parseJsonFilter('')).toEqual({});
    expect(parseJsonFilter('{"ecosystem_category": "Plants"}')).toEqual({ ecosystem_category: 'Plants' });
  });
});
