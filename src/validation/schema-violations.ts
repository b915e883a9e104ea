/**
 * One record's JSON Schema check, described: Ajv's errors for its class in the original's words
 * (rule-messages.ts), at most RECORD_ERRORS_DESCRIBED of them. Ordinary records are checked on the
 * event loop; records of more than LARGE_RECORD_VALUES values on the validation thread
 * (validation-thread.ts), since Ajv checks a record in one step and builds every error first.
 */
import { classErrors } from './json-schema.ts';
import { ruleViolations, type RuleViolation } from './rule-messages.ts';

/**
 * Schema errors of one record described in messages, at most: a record of 250,000 array items each
 * breaking a pattern made 250,000 messages (47 MB of answer for a 1 MB body) and held the event
 * loop for half a second writing them.
 */
export const RECORD_ERRORS_DESCRIBED = 1000;

/**
 * Records holding more values than this are checked on the validation thread. A record of
 * 250,000 failing array items (a 1 MiB body) held the event loop 150-300 ms inside Ajv; one of
 * 10,000 takes a few milliseconds. An NMDC record holds tens to hundreds.
 */
export const LARGE_RECORD_VALUES = 10_000;

/**
 * Most values a record may hold. MongoDB keeps a document of at most 16 MiB, and a value takes at
 * least 3 bytes of it (its type, a one-character name and its end), so no stored record holds
 * more; a record's schema check keeps an error of about 280 bytes per failing value, and a
 * record of tens of millions of them (a body of tens of MB, with MAX_BODY_BYTES raised for large
 * submissions) would exhaust the heap and end the process.
 */
export const MAX_RECORD_VALUES = 6_000_000;

export interface SchemaViolations {
  violations: RuleViolation[];
  /** How many errors those describe, and how many more there were. */
  described: number;
  undescribed: number;
}

/**
 * The first RECORD_ERRORS_DESCRIBED errors of a record, or all of them when an `anyOf` error comes
 * after those: its branches' errors, listed before it, are described with it (rule-messages.ts).
 */
function listedErrors<E extends { keyword: string }>(errors: E[]): E[] {
  if (errors.length <= RECORD_ERRORS_DESCRIBED) return errors;
  for (let i = RECORD_ERRORS_DESCRIBED; i < errors.length; i++)
    if (errors[i]!.keyword === 'anyOf') return errors;
  return errors.slice(0, RECORD_ERRORS_DESCRIBED);
}

/** The rules `record` breaks as an instance of the class (bare name), described. */
export function schemaViolations(className: string, record: unknown): SchemaViolations {
  const errors = classErrors(className, record);
  if (errors.length === 0) return { violations: [], described: 0, undescribed: 0 };
  const listed = listedErrors(errors);
  return {
    violations: ruleViolations(listed, classErrors),
    described: listed.length,
    undescribed: errors.length - listed.length,
  };
}
