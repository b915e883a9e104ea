/**
 * Identifiers the service mints for its own records (stored objects, runs), shaped as the
 * original's: a shoulder (`gfs0` for objects kept in its GridFS, `sys0` for the runtime's own
 * records) followed by random Crockford base32 characters.
 */
import { randomBytes } from 'node:crypto';

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';

/** `length` random Crockford base32 characters (5 bits each; 12 characters carry 60 random bits). */
export function randomCrockford(length: number): string {
  const bytes = randomBytes(length);
  let out = '';
  for (let i = 0; i < length; i++) out += CROCKFORD[bytes[i]! & 31];
  return out;
}

/** Ids of the runtime's own records (jobs, operations, runs): `nmdc:sys0` and 60 random bits. */
export function mintSystemId(): string {
  return `nmdc:sys0${randomCrockford(12)}`;
}
