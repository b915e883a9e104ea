/**
 * Turns a user `$regex` (pattern + `$options`) into a regjsparser AST the analyses can walk.
 *
 * The source of truth evaluates patterns with RE2 semantics (re2js). regjsparser reads JavaScript
 * syntax, so wherever the two dialects could read the same text differently (RE2-only escapes such
 * as `\A` or `\pL`, POSIX classes, inline flags, `[]`) the pattern is reported as not analysable
 * and the callers fall back to "cannot narrow", which is always safe.
 */
import regjsparser, { type RootNode } from 'regjsparser';
import { UnsupportedQuery } from '../../src/errors.ts';
// The same stripping the evaluator applies, so both read an `x` pattern alike.
import { stripExtendedSyntax } from '../../src/store/filter.ts';

export { stripExtendedSyntax };

/** Longest accepted pattern, in characters: bounds analysis and matching cost of untrusted input. */
export const MAX_PATTERN_LENGTH = 1000;

export interface RegexFlags {
  ignoreCase: boolean;
  multiline: boolean;
  dotAll: boolean;
  extended: boolean;
}

export type ParsedPattern =
  { ok: true; ast: RootNode<ParserFeatures>; flags: RegexFlags } | { ok: false; flags: RegexFlags };

type ParserFeatures = { lookbehind: true; namedGroups: true; modifiers: true };

export function regexFlagsOf(options: string): RegexFlags {
  return {
    ignoreCase: options.includes('i'),
    multiline: options.includes('m'),
    dotAll: options.includes('s'),
    extended: options.includes('x'),
  };
}

/** Rejects patterns longer than MAX_PATTERN_LENGTH with an UnsupportedQuery the API reports as is. */
export function assertPatternLength(pattern: string): void {
  if (pattern.length > MAX_PATTERN_LENGTH) {
    throw new UnsupportedQuery(
      `$regex pattern is ${pattern.length} characters long; the longest accepted is ${MAX_PATTERN_LENGTH}`,
    );
  }
}

/** Escapes whose meaning is the same in JavaScript and RE2 (any other letter escape is RE2-only or an error). */
const SHARED_LETTER_ESCAPES = new Set(['d', 'D', 'w', 'W', 's', 'S', 'b', 'B', 'n', 'r', 't', 'f', 'v']);

function readsTheSameInBothDialects(pattern: string): boolean {
  if (pattern.includes('[:') || pattern.includes('[]') || pattern.includes('[^]')) return false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '(' && pattern[i + 1] === '?') {
      const next = pattern[i + 2] ?? '';
      // Only non-capturing groups, lookarounds and named groups `(?<name>` read the same.
      if (!(
        next === ':' ||
        next === '=' ||
        next === '!' ||
        (next === '<' && /[=!A-Za-z_]/.test(pattern[i + 3] ?? ''))
      )) {
        return false;
      }
    }
    if (c !== '\\') continue;
    const e = pattern[i + 1] ?? '';
    i++;
    if (/[A-Za-z]/.test(e)) {
      if (e === 'x') {
        if (!/^[0-9A-Fa-f]{2}$/.test(pattern.slice(i + 1, i + 3))) return false;
      } else if (!SHARED_LETTER_ESCAPES.has(e)) {
        return false;
      }
    } else if (/[0-9]/.test(e)) {
      // `\0` alone is NUL in both; back-references and octal escapes differ.
      if (e !== '0' || /[0-9]/.test(pattern[i + 1] ?? '')) return false;
    }
  }
  return true;
}

/** Parses a pattern for analysis. Never throws for syntax: an unreadable pattern is `ok: false`. */
export function parsePattern(pattern: string, options = ''): ParsedPattern {
  assertPatternLength(pattern);
  const flags = regexFlagsOf(options);
  const source = flags.extended ? stripExtendedSyntax(pattern) : pattern;
  if (!readsTheSameInBothDialects(source)) return { ok: false, flags };
  try {
    const ast = regjsparser.parse(source, '', { lookbehind: true, namedGroups: true, modifiers: true });
    return { ok: true, ast, flags };
  } catch {
    return { ok: false, flags };
  }
}
