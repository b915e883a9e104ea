/**
 * The analysis that decides which `$regex` patterns MongoDB's backtracking engine may run
 * (search/regex/backtracking.ts): every pattern it calls safe matches, at any start position,
 * without giving characters back more than linearly; everything else is evaluated in the service.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { safeOnBacktrackingEngine } from '../../search/regex/backtracking.ts';

describe('patterns MongoDB may run', () => {
  it('accepts literals, anchors, classes and repetitions that the next character decides', () => {
    for (const pattern of [
      'soil',
      '^nmdc:bsm-11-',
      '^Gp0\\d+$',
      '\\bsoil\\b',
      'soil|sediment|water',
      '^(soil|water) sample',
      '[A-Z][a-z]+ [a-z]+',
      'colou?r',
      '^\\d{4}-\\d{2}-\\d{2}$',
      '^[^,]*,',
      'ENVO:\\d{8}',
      '[A-Z]\\w+-\\d+$',
      '(?:ab)*c',
      'abc.*',
      '25 °C',
      '',
    ])
      expect(safeOnBacktrackingEngine(pattern), pattern).toBe(true);
  });

  it('refuses the classic catastrophic and polynomial shapes', () => {
    for (const pattern of [
      '(a+)+$',
      '(a|a)*b',
      '(a|aa)+c',
      '(\\w+\\s?)+$',
      '\\d*\\d*\\d*x',
      '.*.*=.*',
      '.*abc',
      '^(a|ab)(c|bcd)(d*)$',
      'x+x+y',
      'a?a?a?aaa',
      '(ab|ac)d',
      '([a-z]+)*\\d',
    ])
      expect(safeOnBacktrackingEngine(pattern), pattern).toBe(false);
  });

  it('refuses what it cannot read the way the linear-time engine does', () => {
    for (const pattern of ['(?i)soil', '\\pL+', '[[:alpha:]]+', '(?=a)b', '(a)\\1', '\\Asoil', '😀+x'])
      expect(safeOnBacktrackingEngine(pattern), pattern).toBe(false);
  });

  it('reads classes case-insensitively with the i option', () => {
    expect(safeOnBacktrackingEngine('[a-z]+X')).toBe(true);
    expect(safeOnBacktrackingEngine('[a-z]+X', 'i')).toBe(false);
    expect(safeOnBacktrackingEngine('[^x]+x', 'i')).toBe(true);
    expect(safeOnBacktrackingEngine('[^x]+X', 'i')).toBe(true);
    expect(safeOnBacktrackingEngine('[^x]+X')).toBe(false);
  });

  it('reads the x option as MongoDB does (whitespace and comments dropped)', () => {
    expect(safeOnBacktrackingEngine('\\d+ # digits\n -', 'x')).toBe(true);
    expect(safeOnBacktrackingEngine('\\d+ # digits\n \\d', 'x')).toBe(false);
  });

  it('never calls a pattern with nested unbounded repetition safe', () => {
    const atom = fc.constantFrom('a', 'b', '\\d', '\\w', '.', '[ab]', '[^a]');
    const quant = fc.constantFrom('*', '+', '{1,}', '{2,5}');
    fc.assert(
      fc.property(atom, quant, quant, fc.constantFrom('', '$', 'x', 'a'), (a, q1, q2, tail) => {
        expect(safeOnBacktrackingEngine(`(${a}${q1})${q2}${tail}`)).toBe(false);
      }),
    );
  });
});
