/**
 * The schema's `pattern`s on the linear-time engine (re2js), as Ajv's regular-expression engine
 * (`code.regExp`). A pattern written for a backtracking engine can take seconds on a crafted
 * value (`^([^\s-]{1,2}|[^\s-]+.+[^\s-]+): ...` over 2,400 letters holds V8 for 16 s); on RE2 every
 * test is linear in the value's length.
 *
 * The patterns keep the meaning JavaScript gives them (what Ajv on V8 gave them before): RE2 reads
 * `\s` and `.` more narrowly, so they are spelled out as JavaScript's sets. Values are read by code
 * point, as the original service's Python does (V8 without the `u` flag counted UTF-16 units).
 * RE2 has no lookaround and no backreferences; the schema's two patterns that use them are
 * rewritten by hand below, to the same language (test/validation/linear-patterns.test.ts checks
 * every pattern of the schema against V8 on generated values).
 */
import { RE2JS } from 're2js';

/** JavaScript's `\s`: ECMAScript WhiteSpace and LineTerminator, as RE2 class members. */
const JS_SPACE =
  '\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}';
/** JavaScript's `.` without the `s` flag: anything but a line terminator. */
const JS_DOT = '[^\\n\\r\\x{2028}\\x{2029}]';

/** A pattern RE2 cannot express as written, and why; thrown while the schema compiles. */
export class UnsupportedPattern extends Error {}

/** JavaScript (non-unicode) regular-expression syntax to RE2 syntax with the same meaning. */
export function toRe2Syntax(pattern: string): string {
  let out = '';
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\') {
      const e = pattern[i + 1];
      if (e === undefined) throw new UnsupportedPattern('the pattern ends with a lone backslash');
      i++;
      if (e === 's') out += inClass ? JS_SPACE : `[${JS_SPACE}]`;
      else if (e === 'S') {
        if (inClass) throw new UnsupportedPattern('\\S inside a character class');
        out += `[^${JS_SPACE}]`;
      } else if (e === 'u' && /^[0-9A-Fa-f]{4}$/.test(pattern.slice(i + 1, i + 5))) {
        out += `\\x{${pattern.slice(i + 1, i + 5)}}`;
        i += 4;
      } else if (e === 'b' && inClass) out += '\\x08';
      else if (/[1-9]/.test(e)) throw new UnsupportedPattern(`the backreference \\${e}`);
      else out += `\\${e}`;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      out += c;
      continue;
    }
    if (c === '[') {
      inClass = true;
      out += c;
      if (pattern[i + 1] === '^') out += pattern[++i];
      // `[]` and `[^]` mean "nothing" and "anything" in JavaScript; RE2 would read `]` as a member.
      if (pattern[i + 1] === ']') throw new UnsupportedPattern('an empty character class');
      continue;
    }
    if (c === '.') out += JS_DOT;
    else if (c === '(' && pattern[i + 1] === '?') {
      const kind = pattern.slice(i + 2, i + 4);
      if (kind.startsWith('=') || kind.startsWith('!') || kind === '<=' || kind === '<!')
        throw new UnsupportedPattern('a lookaround assertion');
      out += c;
    } else out += c;
  }
  return out;
}

// The ISO 8601 date pattern of the schema's date slots, with `(?!\d{2}\b)` after the year and the
// backreferences `\3` (the date separator) and `\17` (the time separator) expanded by case.
const DIGIT2_HOUR = '(?:[01]\\d|2[0-3])';
const FRACTION = '[.,]\\d+';
const MINUTE = '[0-5]\\d';
const TIME_BODY =
  // Minutes after a colon: seconds after a colon too, never right after a fraction (`(?!:)`).
  `(?:${DIGIT2_HOUR}:${MINUTE}(?:${FRACTION}|:${MINUTE}(?:${FRACTION})?)?` +
  // Minutes without a colon, hours alone, 24:00, or none: seconds follow without a colon.
  `|(?:(?:${DIGIT2_HOUR}${MINUTE}|${DIGIT2_HOUR}|24:?00)(?:${FRACTION})?)?(?:${MINUTE}(?:${FRACTION})?)?)`;
const ZONE = '(?:[zZ]|[+-](?:[01]\\d|2[0-3]):?(?:[0-5]\\d)?)?';
const time = (separator: string) => `${separator}${TIME_BODY}${ZONE}`;
const ANY_TIME = `(?:${time(`[T${JS_SPACE}]`)})?`;
const MONTH = '(?:0[1-9]|1[0-2])';
const DAY = '(?:[12]\\d|0[1-9]|3[01])';
const WEEK = 'W(?:[0-4]\\d|5[0-2])(?:-?[1-7])?';
const ORDINAL = '(?:00[1-9]|0[1-9]\\d|[12]\\d{2}|3(?:[0-5]\\d|6[1-6]))';
const ISO_8601 =
  `^[+-]?\\d{4}(?:` +
  `-(?:${MONTH}(?:-${DAY})?|${WEEK}|${ORDINAL})${ANY_TIME}` +
  `|(?:${MONTH}${DAY}|${WEEK}|${ORDINAL})${ANY_TIME}` +
  // A month without its day right after the year (`YYYYMM`) must be followed by a `T` time.
  `|${MONTH}${time('T')}` +
  `)?$`;

const http = RE2JS.compile(`^[Hh][Tt][Tt][Pp][Ss]?://${JS_DOT}*$`);
const doiOrg = RE2JS.compile('[Dd][Oo][Ii]\\.[Oo][Rr][Gg]');

/** The schema's patterns RE2 cannot read as written, each with a linear equivalent. */
const REWRITTEN: ReadonlyMap<string, string | ((value: string) => boolean)> = new Map<
  string,
  string | ((value: string) => boolean)
>([
  [
    '^([\\+-]?\\d{4}(?!\\d{2}\\b))((-?)((0[1-9]|1[0-2])(\\3([12]\\d|0[1-9]|3[01]))?|W([0-4]\\d|5[0-2])(-?[1-7])?|(00[1-9]|0[1-9]\\d|[12]\\d{2}|3([0-5]\\d|6[1-6])))([T\\s]((([01]\\d|2[0-3])((:?)[0-5]\\d)?|24\\:?00)([\\.,]\\d+(?!:))?)?(\\17[0-5]\\d([\\.,]\\d+)?)?([zZ]|([\\+-])([01]\\d|2[0-3]):?([0-5]\\d)?)?)?)?$',
    ISO_8601,
  ],
  [
    // An http(s) URL on one line that does not name doi.org (DOIs have a slot of their own).
    '^[Hh][Tt][Tt][Pp][Ss]?:\\/\\/(?!.*[Dd][Oo][Ii]\\.[Oo][Rr][Gg]).*$',
    (value) => http.test(value) && !doiOrg.test(value),
  ],
]);

export interface LinearPattern {
  test(value: string): boolean;
  /** The pattern as the schema writes it (Ajv keys compiled patterns by this text). */
  toString(): string;
}

/** Compiles a schema pattern for the linear-time engine; throws UnsupportedPattern if it cannot. */
export function linearPattern(pattern: string): LinearPattern {
  const rewritten = REWRITTEN.get(pattern);
  if (typeof rewritten === 'function') return { test: rewritten, toString: () => pattern };
  let re: RE2JS;
  try {
    re = RE2JS.compile(rewritten ?? toRe2Syntax(pattern));
  } catch (err) {
    if (err instanceof UnsupportedPattern) throw new UnsupportedPattern(`pattern ${pattern}: ${err.message}`);
    throw new UnsupportedPattern(`pattern ${pattern}: ${(err as Error).message}`);
  }
  return { test: remembered((value) => re.test(value)), toString: () => pattern };
}

/** Answers a pattern remembers, per pattern: metadata repeats its values (terms, units, sites). */
const REMEMBERED = 2048;
/** Values longer than this are tested every time (a long one rarely repeats); at most 98 patterns × 2048 × 64 code units are kept. */
const REMEMBERED_LENGTH = 64;

function remembered(test: (value: string) => boolean): (value: string) => boolean {
  const answers = new Map<string, boolean>();
  return (value) => {
    if (value.length > REMEMBERED_LENGTH) return test(value);
    let answer = answers.get(value);
    if (answer === undefined) {
      answer = test(value);
      if (answers.size >= REMEMBERED) answers.clear();
      answers.set(value, answer);
    }
    return answer;
  };
}

/**
 * Ajv's `code.regExp`: `flags` is empty (the schema is compiled with `unicodeRegExp: false`). The
 * `code` member names the engine in standalone code, which the service does not generate.
 */
export const linearRegExpEngine = Object.assign(
  (pattern: string, flags: string) => {
    if (flags !== '' && flags !== 'u') throw new UnsupportedPattern(`flags "${flags}" of pattern ${pattern}`);
    // Ajv asks again for every place a pattern appears (about 500 places, 98 patterns).
    let compiled = compiledPatterns.get(pattern);
    if (!compiled) compiledPatterns.set(pattern, (compiled = linearPattern(pattern)));
    return compiled;
  },
  { code: 'linearPattern' },
);

const compiledPatterns = new Map<string, LinearPattern>();
