/**
 * The blade of a minted identifier (`nmdc:<typecode>-<shoulder>-<blade>`): 30 random bits in
 * Douglas Crockford's base32 (lower case, six characters) followed by two ISO 7064 mod 97-10
 * check digits, the shape the original service's minter gives (e.g. `nmdc:bsm-11-9k4vw724`).
 * The check digits let a mistyped id be recognised without asking the store.
 */
import { randomInt } from 'node:crypto';

/** Crockford's alphabet: digits and letters without i, l, o and u, which read as others. */
export const BLADE_ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

/** Base32 characters before the check digits. */
export const BLADE_RANDOM_CHARS = 6;

const RANDOM_SPACE = 32 ** BLADE_RANDOM_CHARS;

/** Something that gives a new blade each call; the minter takes another (tests force collisions). */
export type BladeSource = () => string;

/** The two check digits of a number: 98 - (100 n mod 97), always two digits ("02".."98"). */
function checkDigits(n: number): string {
  // 100 n stays far below 2^53 for 30-bit n, so plain arithmetic is exact.
  return String(98 - ((100 * n) % 97)).padStart(2, '0');
}

export function bladeOf(n: number): string {
  if (!Number.isInteger(n) || n < 0 || n >= RANDOM_SPACE)
    throw new RangeError(`blade number out of range: ${n}`);
  let text = '';
  for (let rest = n, i = 0; i < BLADE_RANDOM_CHARS; i++, rest = Math.floor(rest / 32)) {
    text = BLADE_ALPHABET[rest % 32] + text;
  }
  return text + checkDigits(n);
}

/** A fresh blade from the operating system's cryptographic random source. */
export const randomBlade: BladeSource = () => bladeOf(randomInt(0, RANDOM_SPACE));

/** True when `blade` is six base32 characters whose check digits are right. */
export function isWellFormedBlade(blade: string): boolean {
  const match = /^([0-9a-hjkmnp-tv-z]{6})([0-9]{2})$/.exec(blade);
  if (!match) return false;
  let n = 0;
  for (const c of match[1]!) n = n * 32 + BLADE_ALPHABET.indexOf(c);
  return checkDigits(n) === match[2];
}
