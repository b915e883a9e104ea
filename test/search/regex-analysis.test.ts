import { describe, expect, it } from 'vitest';
import { formatTrigramQuery, trigramQueryOf } from '../../search/regex/trigram-query.ts';
import { luceneRegexpOf } from '../../search/regex/lucene-regexp.ts';
import { MAX_PATTERN_LENGTH, stripExtendedSyntax } from '../../search/regex/pattern.ts';
import { UnsupportedQuery } from '../../src/errors.ts';

const q = (pattern: string, options = '') => formatTrigramQuery(trigramQueryOf(pattern, options));

describe('trigramQueryOf', () => {
  it('requires a literal of three characters as one atom', () => {
    expect(q('abc')).toBe('AND("abc")');
  });

  it('keeps a longer literal whole, lowercased', () => {
    expect(q('Hello World')).toBe('AND("hello world")');
  });

  it('turns alternation into OR', () => {
    expect(q('abc|xyz')).toBe('OR("abc" "xyz")');
  });

  it('cannot narrow a pattern without three consecutive known characters', () => {
    expect(q('a.b')).toBe('ALL');
    expect(q('ab')).toBe('ALL');
    expect(q('\\d\\d\\d')).toBe('ALL');
    expect(q('.*')).toBe('ALL');
  });

  it('keeps prefixes and suffixes through a repeated group', () => {
    expect(q('(abc)+def')).toBe('AND("abc" "bcd" "cde" "def")');
  });

  it('requires both sides of a gap', () => {
    expect(q('abc.*def')).toBe('AND("abc" "def")');
  });

  it('expands small classes into alternatives', () => {
    expect(q('[ab]cd')).toBe('OR("acd" "bcd")');
    expect(q('x(ab|cd)y')).toBe('OR("xaby" "xcdy")');
  });

  it('ignores anchors and word boundaries, which only constrain', () => {
    expect(q('^nmdc:bsm-11-')).toBe('AND("nmdc:bsm-11-")');
    expect(q('\\bsoil\\b')).toBe('AND("soil")');
  });

  it('treats lookarounds as constraints it may drop', () => {
    expect(q('(?=abc)')).toBe('ALL');
    expect(q('soil(?!s)')).toBe('AND("soil")');
  });

  it('cannot narrow an optional part', () => {
    expect(q('(abc)?')).toBe('ALL');
    expect(q('abc|')).toBe('ALL');
  });

  it('gives up on syntax that RE2 and JavaScript read differently', () => {
    expect(q('\\Aabc')).toBe('ALL');
    expect(q('[[:alpha:]]abc')).toBe('ALL');
    expect(q('(?i)abc')).toBe('ALL');
    expect(q('\\pLabc')).toBe('ALL');
  });

  it('gives up on patterns it cannot parse', () => {
    expect(q('(abc')).toBe('ALL');
  });

  it('strips whitespace and comments in extended mode', () => {
    expect(stripExtendedSyntax('a b # comment\n c [ ]')).toBe('abc[ ]');
    expect(q('s o i l  # word', 'x')).toBe('AND("soil")');
  });

  it('refuses patterns longer than the cap as an unsupported query', () => {
    expect(() => trigramQueryOf('a'.repeat(MAX_PATTERN_LENGTH + 1))).toThrow(UnsupportedQuery);
  });

  it('reads a case-insensitive pattern as lowercase trigrams', () => {
    expect(q('SOIL', 'i')).toBe('AND("soil")');
  });
});

describe('luceneRegexpOf', () => {
  it('surrounds an unanchored pattern with .*', () => {
    expect(luceneRegexpOf('abc')).toEqual({ regexp: '.*abc.*', caseInsensitive: false });
  });

  it('drops .* on anchored ends', () => {
    expect(luceneRegexpOf('^abc$').regexp).toBe('abc');
    expect(luceneRegexpOf('^abc|def$').regexp).toBe('(abc.*)|(.*def)');
  });

  it('treats anchors as line anchors (unanchored) in multiline mode', () => {
    expect(luceneRegexpOf('^abc', 'm').regexp).toBe('.*()abc.*');
  });

  it('writes shorthand classes with their RE2 meanings in Lucene 9 syntax', () => {
    // Lucene's \d, \D, \w, \W are RE2's; its \s lacks the form feed, so RE2's is spelled out.
    expect(luceneRegexpOf('\\d+\\.\\w\\W\\D').regexp).toBe('.*(\\d)+\\.\\w\\W\\D.*');
    expect(luceneRegexpOf('\\s\\S').regexp).toBe('.*[\t\n\f\r ][^\t\n\f\r ].*');
    // Under RE2 case folding \w also matches the Kelvin sign and the long s.
    expect(luceneRegexpOf('\\w', 'i').regexp).toBe('.*[\\w\u212a\u017f].*');
  });

  it('relaxes word boundaries, lookarounds and back-references', () => {
    expect(luceneRegexpOf('\\bsoil\\b').regexp).toBe('.*()soil().*');
    expect(luceneRegexpOf('(?=abc)x').regexp).toBe('.*()x.*');
  });

  it('escapes Lucene operators that are literal in the pattern', () => {
    expect(luceneRegexpOf('a@b~c"d&e<f>#').regexp).toBe('.*a\\@b\\~c\\"d\\&e\\<f\\>\\#.*');
  });

  it('widens large repetitions to *', () => {
    expect(luceneRegexpOf('^a{2,100}$').regexp).toBe('(a)*');
    expect(luceneRegexpOf('^a{2,5}$').regexp).toBe('(a){2,5}');
  });

  it('asks for case-insensitive matching and folds classes itself', () => {
    expect(luceneRegexpOf('[a-c]x', 'i')).toEqual({ regexp: '.*[a-cA-C]x.*', caseInsensitive: true });
  });

  it('matches anything when the pattern cannot be analysed', () => {
    expect(luceneRegexpOf('(?i)abc').regexp).toBe('.*');
  });
});
