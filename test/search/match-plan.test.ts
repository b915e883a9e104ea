import { describe, expect, it } from 'vitest';
import { trigramQueryOf, trigramsOf } from '../../search/regex/trigram-query.ts';
import { matchPlanOf } from '../../search/sqlite/match-plan.ts';

/** Document counts of the trigrams of 100,000 generated names ("<Medium> sample <n> from <place>"). */
const COUNTS: Record<string, number> = {
  sam: 100_047,
  amp: 100_048,
  mpl: 100_000,
  ple: 100_011,
  'le ': 100_000,
  'e 1': 11_111,
  ' 12': 11_108,
  '123': 8005,
  '234': 1306,
  'e 9': 11_111,
  ' 99': 1111,
  ' ea': 10_000,
  ast: 10_400,
  't r': 10_100,
};
/** Trigrams not listed are common: those of a digit and a space ("0 f", "40 "), in every name. */
const frequency = (t: string) => COUNTS[t] ?? 50_000;
const plan = (pattern: string) => matchPlanOf(trigramQueryOf(pattern), frequency);

describe('the MATCH of a trigram query, chosen by trigram counts', () => {
  it('factors the trigrams an alternation shares, and leaves out a broad OR beside a rare trigram', () => {
    // OR("sample 12340" ... "sample 12349") AND OR("40 " ... "49 "): ten ANDs reading "123" each,
    // and an OR of ten trigrams found in a tenth of all names, before.
    expect(plan('sample 1234[0-9] ')).toEqual({ match: '("234") AND ("123") AND (" 12")', strings: 1306 });
  });

  it('keeps at most three trigrams of an AND, each within 16 times the rarest', () => {
    // Every trigram within 16x: the three rarest ("mpl", 100,000, before "amp", 100,048).
    expect(plan('example')).toEqual({ match: '("exa") AND ("xam") AND ("mpl")', strings: 50_000 });
    expect(plan('sample 1234')).toEqual({ match: '("234") AND ("123") AND (" 12")', strings: 1306 });
    // Every other trigram is past 16 x 1306: "234" alone.
    expect(plan('sample 234')).toEqual({ match: '"234"', strings: 1306 });
  });

  it('keeps the shared part of a long alternation with the rarest trigrams of the rest', () => {
    const p = plan('Sediment sample 99[0-9]{3} from East River')!;
    expect(p.strings).toBe(1111);
    expect(p.match.startsWith('((" 99") AND ("e 9"')).toBe(true);
    expect(p.match).toContain('(" ea")');
  });

  it('keeps an OR of rare branches whole, and is null when a branch cannot narrow', () => {
    expect(plan('234|999')).toEqual({ match: '("234") OR ("999")', strings: 51_306 });
    expect(plan('234|a.b')).toBeNull();
    expect(plan('a.e')).toBeNull();
  });

  it('drops an OR branch holding only the shared trigrams: it allows whatever they allow', () => {
    expect(plan('(sample 1234|sample 12345)')).toEqual({
      match: '("234") AND ("123") AND (" 12")',
      strings: 1306,
    });
  });

  it('is a superset: every string the regex matches holds every trigram the MATCH asks for', () => {
    const strings = ['Soil sample 12345 from Toolik', 'Sediment sample 99123 from East River'];
    for (const [pattern, value] of [
      ['sample 1234[0-9] ', strings[0]!],
      ['Sediment sample 99[0-9]{3} from East River', strings[1]!],
    ] as const) {
      const held = trigramsOf(value);
      const asked = [...plan(pattern)!.match.matchAll(/"((?:[^"]|"")*)"/g)].map((m) =>
        m[1]!.replace(/""/g, '"'),
      );
      // The plan's ORs are of rare trigrams only here, so each trigram asked is held.
      for (const t of asked) expect(held.has(t), `${pattern}: ${t}`).toBe(true);
    }
  });
});
