/**
 * Password and client-secret hashing with bcrypt. Checks always run one bcrypt comparison, also
 * for unknown accounts (against a fixed dummy hash), so response time does not reveal which
 * usernames or client ids exist.
 */
import { randomBytes } from 'node:crypto';
import bcrypt from 'bcryptjs';

const PRODUCTION_COST = 10;
let cost = PRODUCTION_COST;
let dummyHash: string | undefined;

/** Tests may lower the bcrypt cost (minimum 4) to keep suites fast; production uses 10. */
export function setBcryptCost(value: number): void {
  cost = Math.max(4, Math.min(15, Math.floor(value)));
  dummyHash = undefined;
}

export async function hashSecret(secret: string): Promise<string> {
  return bcrypt.hash(secret, cost);
}

/** Compares `secret` with `hash`, or with a dummy hash of the same cost when there is no account. */
export async function verifySecret(secret: string, hash: string | undefined): Promise<boolean> {
  if (hash === undefined) {
    dummyHash ??= bcrypt.hashSync(randomBytes(16).toString('hex'), cost);
    await bcrypt.compare(secret, dummyHash);
    return false;
  }
  return bcrypt.compare(secret, hash);
}

/** A random secret for generated passwords and site-client secrets (URL-safe, 256 bits). */
export function generateSecret(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}
