import { describe, expect, it } from 'vitest';
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
