/**
 * Validation of NMDC `Database` payloads against the vendored NMDC schema, as the original
 * service's `validate_json` does it, in three passes:
 *
 * 1. every key is a Database collection (`@type: "Database"` aside);
 * 2. every record validates against the JSON Schema of its collection's class (the class its
 *    `type` names, for collections of several classes), QuantityValue units included, and no id
 *    repeats in a collection;
 * 3. only when those pass: referential integrity, every id a record references exists in the
 *    payload or in the store, in a collection the schema allows for that slot.
 *
 * Used by `POST /metadata/json:validate`, `POST /metadata/json:submit` and the loader.
 */
import type { DocumentStore } from '../store/port.ts';
import { isCollectionName, isDatabaseType } from '../schema/nmdc.ts';
import { DatabaseCheck } from './database-check.ts';
import { clipped, pyRepr } from './rule-messages.ts';
import { Turns } from '../turns.ts';

export { DatabaseCheck, type DatabaseCheckOptions, type RecordProblem } from './database-check.ts';
export { compileAll as compileSchema } from './json-schema.ts';

/** Collection name -> messages. */
export type ValidationDetail = Record<string, string[]>;
export type ValidationOutcome = { valid: true } | { valid: false; detail: ValidationDetail };

/**
 * Problems listed per collection at most. A payload of 30,000 records each missing its required
 * slots came to 180,000 messages: a public request of 0.9 MB answered 16 MB. Checking a
 * collection stops after the record that brings its problems to this many (saying where); broken
 * references past it are counted.
 */
export const PROBLEMS_LISTED = 1000;

/** The key the messages go under when the payload is not an object at all. */
const WHOLE_PAYLOAD = 'Database';

export class MetadataValidator {
  constructor(private readonly store: Pick<DocumentStore, 'find'>) {}

  /**
   * Collection names, JSON Schema of each record against its collection's range class, then
   * referential integrity (ids referenced must exist in the store or the same payload, in a
   * collection the schema allows). Never throws for bad input.
   */
  async validateDatabase(payload: Record<string, unknown>): Promise<ValidationOutcome> {
    if (payload === null || typeof payload !== 'object' || Array.isArray(payload))
      return { valid: false, detail: { [WHOLE_PAYLOAD]: [`${pyRepr(payload)} is not of type 'object'`] } };
    // Every collection of the payload has its list, empty when it passes (as the original answers).
    // A Map, not an object: a payload key such as `__proto__` must stay a key.
    const detail = new Map<string, string[]>();
    const check = new DatabaseCheck(this.store);
    const turns = new Turns();
    for (const [name, records] of Object.entries(payload)) {
      if (name === '@type' && isDatabaseType(records)) continue;
      if (!isCollectionName(name)) {
        detail.set(name, [`'${clipped(name)}' is not a known schema collection name`]);
        continue;
      }
      const messages: string[] = [];
      detail.set(name, messages);
      if (records === null || records === undefined) continue;
      if (!Array.isArray(records)) {
        messages.push(`${pyRepr(records)} is not of type 'array', 'null' in /${name}`);
        continue;
      }
      for (let i = 0; i < records.length; i++) {
        // A record's own messages are bounded (the last one counts the rest: DatabaseCheck).
        for (const m of await check.record(name, i, records[i])) messages.push(m);
        if (messages.length >= PROBLEMS_LISTED) {
          if (i + 1 < records.length)
            messages.push(
              `checking /${name} stopped at ${messages.length.toLocaleString('en-US')} problems, ` +
                `at /${name}/${i}: the records after it were not checked`,
            );
          break;
        }
        if (turns.due()) await turns.give();
      }
    }
    if (hasMessages(detail)) return { valid: false, detail: Object.fromEntries(detail) };
    const unlisted = new Map<string, number>();
    for (const problem of await check.references()) {
      const messages = detail.get(problem.collection)!;
      if (messages.length < PROBLEMS_LISTED) messages.push(problem.message);
      else unlisted.set(problem.collection, (unlisted.get(problem.collection) ?? 0) + 1);
    }
    for (const [name, count] of unlisted)
      detail
        .get(name)!
        .push(
          `and ${count.toLocaleString('en-US')} more references of /${name} that resolve nowhere (not listed)`,
        );
    return hasMessages(detail) ? { valid: false, detail: Object.fromEntries(detail) } : { valid: true };
  }
}

function hasMessages(detail: Map<string, string[]>): boolean {
  for (const messages of detail.values()) if (messages.length > 0) return true;
  return false;
}

/** The COMPAT answer: {"result":"All Okay!"} or {"result":"errors","detail":{...}} */
export function validationAnswer(outcome: ValidationOutcome): Record<string, unknown> {
  return outcome.valid ? { result: 'All Okay!' } : { result: 'errors', detail: outcome.detail };
}

/**
 * A JSON value as Python's `repr` prints the equal dict, list or str, in full: how the original
 * service's 422s spell a validation answer (`{'result': 'errors', 'detail': {...}}`).
 */
export function pythonText(value: unknown): string {
  if (value === null || value === undefined) return 'None';
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return pythonString(value);
  if (Array.isArray(value)) return `[${value.map(pythonText).join(', ')}]`;
  const entries = Object.entries(value as Record<string, unknown>);
  return `{${entries.map(([k, v]) => `${pythonString(k)}: ${pythonText(v)}`).join(', ')}}`;
}

/** `repr(str)`: single quotes unless the text holds one and no double quote; escapes as Python's. */
function pythonString(text: string): string {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let out = quote;
  for (const c of text) {
    const code = c.codePointAt(0)!;
    if (c === '\\' || c === quote) out += `\\${c}`;
    else if (c === '\n') out += '\\n';
    else if (c === '\r') out += '\\r';
    else if (c === '\t') out += '\\t';
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else out += c;
  }
  return out + quote;
}
