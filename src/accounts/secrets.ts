/**
 * Password and client-secret hashing with bcrypt. Checks always run one bcrypt comparison, also
 * for unknown accounts (against a fixed dummy hash), so response time does not reveal which
 * usernames or client ids exist.
 */
import { createHash, randomBytes } from 'node:crypto';
import bcrypt from 'bcryptjs';
import { compareOnThread, hashOnThread } from './bcrypt-thread.ts';

const PRODUCTION_COST = 10;
let cost = PRODUCTION_COST;
let dummyHash: string | undefined;

/** Tests may lower the bcrypt cost (minimum 4) to keep suites fast; production uses 10. */
export function setBcryptCost(value: number): void {
  cost = Math.max(4, Math.min(15, Math.floor(value)));
  dummyHash = undefined;
}

/** bcrypt reads only the first 72 bytes of its input. */
const BCRYPT_INPUT_BYTES = 72;

/**
 * What bcrypt is given for a secret. Passwords are NFKC-normalised (NIST SP 800-63B), so the same
 * characters typed on different systems match; secrets longer than bcrypt reads (a 128-character
 * password can be 512 bytes) are first reduced to their SHA-256, so every character counts.
 * Shorter secrets are hashed as they are, which keeps hashes made before this rule valid.
 */
function bcryptInput(secret: string): string {
  const normalized = secret.normalize('NFKC');
  if (Buffer.byteLength(normalized) <= BCRYPT_INPUT_BYTES) return normalized;
  return `sha256:${createHash('sha256').update(normalized).digest('base64')}`;
}

/**
 * Costs from which bcrypt runs on its thread (bcrypt-thread.ts): production's 10 takes about 85 ms.
 * The low costs tests set take a millisecond or two and stay on the event loop, where a thread
 * would only add its start.
 */
const ON_THREAD_FROM_COST = 8;

/** The cost a bcrypt hash was made with (`$2b$10$...`), or undefined when it is not one. */
function costOf(hash: string): number | undefined {
  const match = /^\$2[abxy]?\$(\d{2})\$/.exec(hash);
  return match ? Number(match[1]) : undefined;
}

export async function hashSecret(secret: string): Promise<string> {
  const input = bcryptInput(secret);
  if (cost < ON_THREAD_FROM_COST) return bcrypt.hash(input, cost);
  return hashOnThread(input, cost).catch(() => bcrypt.hash(input, cost));
}

/** Compares `secret` with `hash`, or with a dummy hash of the same cost when there is no account. */
export async function verifySecret(secret: string, hash: string | undefined): Promise<boolean> {
  if (hash === undefined) {
    dummyHash ??= await hashSecret(randomBytes(16).toString('hex'));
    await compare(bcryptInput(secret), dummyHash);
    return false;
  }
  return compare(bcryptInput(secret), hash);
}

/** bcrypt's comparison, on its thread for a costly hash (in this thread should the thread fail). */
async function compare(input: string, hash: string): Promise<boolean> {
  if ((costOf(hash) ?? 0) < ON_THREAD_FROM_COST) return bcrypt.compare(input, hash);
  return compareOnThread(input, hash).catch(() => bcrypt.compare(input, hash));
}

/** A random secret for generated passwords and site-client secrets (URL-safe, 256 bits). */
export function generateSecret(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}
