import { describe, expect, it } from 'vitest';
import { Query } from 'mingo';
import { compileFilter } from '../../src/store/filter.ts';

describe('compiled filters are reused by their JSON text', () => {
  it('returns the same predicate for an equal filter and keeps look-alike filters apart', () => {
    const first = compileFilter({ depth: { $gt: 1 } });
    expect(compileFilter({ depth: { $gt: 1 } })).toBe(first);
    const numeric = compileFilter({ n: 1 });
    const text = compileFilter({ n: '1' });
    expect(numeric).not.toBe(text);
    expect([numeric({ n: 1 }), numeric({ n: '1' }), text({ n: 1 }), text({ n: '1' })]).toEqual([
      true,
      false,
      false,
      true,
    ]);
    const insensitive = compileFilter({ name: { $regex: 'soil', $options: 'i' } });
    const sensitive = compileFilter({ name: { $regex: 'soil' } });
    expect([insensitive({ name: 'Soil' }), sensitive({ name: 'Soil' })]).toEqual([true, false]);
  });

  it('still refuses a filter it cannot run, every time', () => {
    for (let i = 0; i < 2; i++)
      expect(() => compileFilter({ name: { $regex: '(a)\\1' } })).toThrow(/backreferences/);
  });
});

describe('long $in and $nin lists', () => {
  // Tested against a Set built once: the answers are mingo's (MongoDB's) own.
  const values = [...Array.from({ length: 20 }, (_, i) => `v${i}`), 7, 2.5, true];
  const docs: Array<Record<string, unknown>> = [
    { id: 'a', x: 'v3' },
    { id: 'b', x: 'v99' },
    { id: 'c', x: ['v99', 'v5'] },
    { id: 'd', x: [] },
    { id: 'e' },
    { id: 'f', x: null },
    { id: 'g', x: 7 },
    { id: 'h', x: '7' },
    { id: 'i', x: 1 },
    { id: 'j', x: true },
    { id: 'k', x: { y: 'v1' } },
    { id: 'l', x: [{ y: 'v2' }, { y: 'w' }] },
    { id: 'm', x: [['v1']] },
    { id: 'n', x: 2.5 },
    { id: 'o', x: [{ y: ['w', 'v4'] }] },
  ];
  const mingoIds = (filter: Record<string, unknown>) =>
    docs.filter((d) => new Query(filter, { idKey: 'id', useStrictMode: true }).test(d)).map((d) => d.id);
  const ourIds = (filter: Record<string, unknown>) => docs.filter(compileFilter(filter)).map((d) => d.id);

  it('matches what $in and $nin match, on values, arrays, paths through arrays and missing fields', () => {
    for (const filter of [
      { x: { $in: values } },
      { x: { $nin: values } },
      { 'x.y': { $in: values } },
      { 'x.y': { $nin: values } },
      { x: { $not: { $in: values } } },
      { $or: [{ x: { $in: values } }, { id: 'e' }] },
      { x: { $in: values, $ne: 'v3' } },
    ]) {
      // mingo reaches `y` inside the nested array of `m`; MongoDB (and the $regex test) do not.
      const compared = (ids: unknown[]) => ids.filter((id) => !(id === 'm' && 'x.y' in filter));
      expect(compared(ourIds(filter)), JSON.stringify(filter).slice(0, 60)).toEqual(
        compared(mingoIds(filter)),
      );
    }
    expect(ourIds({ x: { $in: values } })).toEqual(['a', 'c', 'g', 'j', 'n']);
    expect(ourIds({ 'x.y': { $in: values } })).toEqual(['k', 'l', 'o']);
  });

  it('leaves lists holding null, objects or arrays to mingo', () => {
    for (const extra of [null, { y: 'v1' }, ['v1']]) {
      const filter = { x: { $in: [...values, extra] } };
      expect(ourIds(filter)).toEqual(mingoIds(filter));
    }
  });
});
