import { describe, expect, it } from 'vitest';
import {
  parseCompactFilter,
  parseCompactSort,
  parseFieldList,
  coerceNumber,
} from '../../../src/query/compact.ts';
import { statusOf } from '../../../src/http/error-handler.ts';
import { InvalidQuery } from '../../../src/errors.ts';

const detailOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    // The query layer refuses in its own words; the API answers with the status the handler maps it to.
    expect(err).toBeInstanceOf(InvalidQuery);
    return { status: statusOf(err as InvalidQuery), detail: (err as InvalidQuery).detail };
  }
  throw new Error('expected an error');
};

describe('parseCompactFilter', () => {
  it('splits each pair at its first colon so ids keep their colons', () => {
    expect(parseCompactFilter('id:nmdc:bsm-11-abc,part_of:nmdc:sty-11-x')).toEqual({
      id: 'nmdc:bsm-11-abc',
      part_of: 'nmdc:sty-11-x',
    });
  });

  it('ignores whitespace around pairs', () => {
    expect(parseCompactFilter('  ecosystem_category:Plants , ecosystem_type:Soil ')).toEqual({
      ecosystem_category: 'Plants',
      ecosystem_type: 'Soil',
    });
  });

  it('turns attr.search into a case-insensitive literal regex', () => {
    expect(parseCompactFilter('name.search:soil (a+b)')).toEqual({
      name: { $regex: 'soil \\(a\\+b\\)', $options: 'i' },
    });
  });

  it('reads comparisons longest operator first and coerces numbers', () => {
    expect(parseCompactFilter('depth.has_numeric_value:>=10')).toEqual({
      'depth.has_numeric_value': { $gte: 10 },
    });
    expect(parseCompactFilter('a:<=-2.5,b:>3,c:<x')).toEqual({
      a: { $lte: -2.5 },
      b: { $gt: 3 },
      c: { $lt: 'x' },
    });
  });

  it('combines a range on one attribute', () => {
    expect(parseCompactFilter('lat_lon.latitude:>40,lat_lon.latitude:<=50')).toEqual({
      'lat_lon.latitude': { $gt: 40, $lte: 50 },
    });
  });

  it('keeps equality strings as strings even when numeric-looking', () => {
    expect(parseCompactFilter('samp_name:42')).toEqual({ samp_name: '42' });
  });

  it('answers 400 with the form for a pair without a colon', () => {
    expect(detailOf(() => parseCompactFilter('ecosystem_category'))).toEqual({
      status: 400,
      detail: 'Filter must be of form: attribute:spec[,attribute:spec]*',
    });
  });

  it('refuses operator-looking and prototype attributes', () => {
    expect(detailOf(() => parseCompactFilter('$where:1')).status).toBe(400);
    expect(String(detailOf(() => parseCompactFilter('__proto__.x:1')).detail)).toContain('__proto__');
  });

  it('returns an empty filter for an empty text', () => {
    expect(parseCompactFilter('')).toEqual({});
    expect(parseCompactFilter(undefined)).toEqual({});
  });
});

describe('coerceNumber', () => {
  it('parses whole numbers, decimals and exponents but not other text', () => {
    expect(coerceNumber('12')).toBe(12);
    expect(coerceNumber('1e3')).toBe(1000);
    expect(coerceNumber('12abc')).toBe('12abc');
    expect(coerceNumber('')).toBe('');
  });
});

describe('parseCompactSort', () => {
  it('reads directions, defaulting to ascending', () => {
    expect(parseCompactSort('name,depth.has_numeric_value:desc,id:asc')).toEqual([
      ['name', 1],
      ['depth.has_numeric_value', -1],
      ['id', 1],
    ]);
  });

  it('answers 400 for an unknown direction', () => {
    const { status, detail } = detailOf(() => parseCompactSort('name:up'));
    expect(status).toBe(400);
    expect(String(detail)).toContain('Sort must be of form');
  });
});

describe('parseFieldList', () => {
  it('always includes id first', () => {
    expect(parseFieldList('name, ecosystem')).toEqual(['id', 'name', 'ecosystem']);
    expect(parseFieldList('name,id')).toEqual(['id', 'name']);
    expect(parseFieldList(undefined)).toBeUndefined();
  });
});
