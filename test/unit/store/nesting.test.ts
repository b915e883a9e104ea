/**
 * The nesting check of JSON bodies: read from the bytes (strings skipped to their closing quote)
 * it decides as a reading of every code unit does, on any text, JSON or not.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { textNestsDeeper, valuesWithin } from '../../../src/store/nesting.ts';

describe('textNestsDeeper', () => {
  it('decides the same from the bytes as from the text, escapes and unterminated strings included', () => {
    const unit = fc.constantFrom('{', '}', '[', ']', '"', '\\', 'a', ':', ',', 'é');
    fc.assert(
      fc.property(fc.array(unit, { maxLength: 80 }), fc.integer({ min: 0, max: 4 }), (units, max) => {
        const text = units.join('');
        expect(textNestsDeeper(Buffer.from(text, 'utf8'), max)).toBe(textNestsDeeper(text, max));
      }),
      { seed: 20261126, numRuns: 3000 },
    );
  });

  it('counts brackets outside strings only, however many backslashes come before a quote', () => {
    const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
    expect(textNestsDeeper(Buffer.from(deep(101)))).toBe(true);
    expect(textNestsDeeper(Buffer.from(deep(100)))).toBe(false);
    // Brackets inside strings, after escaped quotes and escaped backslashes.
    const inString = JSON.stringify({ a: `\\"${'['.repeat(200)}\\\\`, b: '"]]]"' });
    expect(textNestsDeeper(Buffer.from(inString))).toBe(false);
    // An even run of backslashes ends the string: the brackets after it count.
    expect(textNestsDeeper(Buffer.from(`["\\\\\\\\"${'['.repeat(100)}`))).toBe(true);
    expect(textNestsDeeper(Buffer.from(`["\\\\\\"${'['.repeat(100)}`))).toBe(false);
  });
});

describe('valuesWithin', () => {
  it('counts every value, containers included, and refuses a value nested deeper than the limit', () => {
    expect(valuesWithin(5)).toBe(1);
    expect(valuesWithin({ a: [1, 2] })).toBe(4);
    expect(valuesWithin({ a: { b: null }, c: [[], {}], d: 'x' })).toBe(7);
    expect(valuesWithin([[[1]]], 3)).toBe(4);
    expect(valuesWithin([[[1]]], 2)).toBeUndefined();
    // As deep as the limit allows, without recursion.
    let deep: unknown = 1;
    for (let i = 0; i < 100; i++) deep = [deep];
    expect(valuesWithin(deep)).toBe(101);
    expect(valuesWithin([deep])).toBeUndefined();
  });
});
