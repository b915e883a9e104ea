/**
 * Seeded randomness and the blades of generated ids: deterministic for a seed, distinct for
 * distinct indexes.
 */
/** mulberry32: small, fast, good enough for test data. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const BLADE_ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

const TWO_20 = 2 ** 20;
const TWO_40 = 2 ** 40;
const BLADE_MULTIPLIER = 0x9e3779b97;
const MULTIPLIER_LO = BLADE_MULTIPLIER % TWO_20;
const MULTIPLIER_HI = Math.floor(BLADE_MULTIPLIER / TWO_20);

/** A unique 8-character blade for index `n`, scrambled by the seed so ids look like real ones. */
export function blade(n: number, salt: number): string {
  // An odd multiplier mod 2^40 is a bijection, so distinct n give distinct blades. Computed on
  // 20-bit halves, exact in doubles (the 2^40 term of hi * hi drops out mod 2^40).
  let x: number;
  if (n < TWO_40) {
    const lo = n % TWO_20;
    const hi = Math.floor(n / TWO_20);
    x = (lo * MULTIPLIER_LO + ((lo * MULTIPLIER_HI + hi * MULTIPLIER_LO) % TWO_20) * TWO_20 + salt) % TWO_40;
  } else {
    x = Number((BigInt(n) * BigInt(BLADE_MULTIPLIER) + BigInt(salt)) & 0xffffffffffn);
  }
  const top = Math.floor(x / TWO_20);
  const bottom = x % TWO_20;
  return (
    BLADE_ALPHABET[(top >>> 15) & 31]! +
    BLADE_ALPHABET[(top >>> 10) & 31]! +
    BLADE_ALPHABET[(top >>> 5) & 31]! +
    BLADE_ALPHABET[top & 31]! +
    BLADE_ALPHABET[(bottom >>> 15) & 31]! +
    BLADE_ALPHABET[(bottom >>> 10) & 31]! +
    BLADE_ALPHABET[(bottom >>> 5) & 31]! +
    BLADE_ALPHABET[bottom & 31]!
  );
}
