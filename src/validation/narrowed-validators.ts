/**
 * Quicker yes-answers for classes with many properties. Ajv writes one function per class that
 * checks every property the class has: Biosample's, with 550 properties, is 1.2 MB of source, far
 * past the largest function V8 optimizes (60 KB of bytecode), so it always runs interpreted, about
 * 43 us per generated biosample. A record uses a few dozen of those properties; a schema with the
 * class's other keywords and only those properties (`additionalProperties: false` then refuses
 * every other name, as the class's does) accepts exactly the records whose property names it
 * lists that the class's schema accepts. Its function is small enough to be optimized: 11-13 us
 * for the same biosample.
 *
 * So a class keeps a few such narrowed validators, each for the names of the records it has
 * seen, widened, added or (the least recently used) replaced as records with other names come,
 * within bounds: a narrowed validator names at most MAX_NAMES properties (a larger one is no
 * longer optimized), a class keeps at most MAX_VALIDATORS of them and compiles at most
 * MAX_COMPILES (20-65 ms each) in any COMPILE_WINDOW_MS: past that, records of other shapes are
 * checked by the class's own function until the window ends, so mixed or crafted shapes cannot
 * keep the process compiling. A record with a name the class does not have is invalid anyway
 * and is left to the class's function too.
 *
 * Only a yes is taken from a narrowed validator: a no (or no narrowed validator) sends the record
 * to the class's own function, whose errors are the answer, unchanged.
 */
import type { Ajv2019, AnySchemaObject, ValidateFunction } from 'ajv/dist/2019.js';

/** Classes with more properties than this get narrowed validators; so many names make one at most. */
export const MAX_NAMES = 48;
/** Narrowed validators one class keeps. */
export const MAX_VALIDATORS = 8;
/** Compilations one class may make in a window of COMPILE_WINDOW_MS. */
export const MAX_COMPILES = 32;
export const COMPILE_WINDOW_MS = 10 * 60_000;

interface ClassDefinition {
  properties?: Record<string, unknown>;
  [keyword: string]: unknown;
}

interface Narrowed {
  names: Set<string>;
  schema: AnySchemaObject;
  validate: ValidateFunction;
  /** When it last answered (a count of answers), for replacing the least recently used. */
  used: number;
}

/** `node` with every reference local to the document (`#/...`) made absolute, for use outside it. */
function absoluteRefs(node: unknown, documentId: string): unknown {
  if (Array.isArray(node)) return node.map((item) => absoluteRefs(item, documentId));
  if (typeof node !== 'object' || node === null) return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node))
    out[key] =
      key === '$ref' && typeof value === 'string' && value.startsWith('#')
        ? documentId + value
        : absoluteRefs(value, documentId);
  return out;
}

let narrowedSchemas = 0;

export class NarrowedValidators {
  private readonly validators: Narrowed[] = [];
  /** Compilations in the window that began at `windowStart`, and in all. */
  private compiles = 0;
  private windowStart = -Infinity;
  private totalCompiles = 0;
  private answers = 0;
  private readonly properties: Record<string, unknown>;
  /** The class's keywords but `properties`, references made absolute. */
  private readonly rest: Record<string, unknown>;

  constructor(
    private readonly ajv: Ajv2019,
    documentId: string,
    definition: ClassDefinition,
    private readonly now: () => number = Date.now,
  ) {
    const { properties = {}, ...rest } = definition;
    this.properties = absoluteRefs(properties, documentId) as Record<string, unknown>;
    this.rest = absoluteRefs(rest, documentId) as Record<string, unknown>;
  }

  /** Whether a class this large is worth narrowing. */
  static worthIt(definition: ClassDefinition): boolean {
    return Object.keys(definition.properties ?? {}).length > MAX_NAMES;
  }

  /**
   * True when `value` is certainly a valid instance of the class (its own function would accept
   * it); false when it may not be, or this cannot tell.
   */
  accepts(value: unknown): boolean {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
    const names = Object.keys(value);
    for (const name of names) if (!Object.hasOwn(this.properties, name)) return false;
    const narrowed = this.covering(names) ?? this.compiledFor(names);
    if (narrowed === undefined) return false;
    narrowed.used = ++this.answers;
    return narrowed.validate(value) === true;
  }

  /** Compilations made (in all), and how many property names each kept validator lists. */
  stats(): { compiles: number; names: number[] } {
    return { compiles: this.totalCompiles, names: this.validators.map((v) => v.names.size) };
  }

  private covering(names: string[]): Narrowed | undefined {
    for (const narrowed of this.validators) if (names.every((n) => narrowed.names.has(n))) return narrowed;
    return undefined;
  }

  /** A validator widened, added or replaced to cover `names`; undefined past the bounds. */
  private compiledFor(names: string[]): Narrowed | undefined {
    if (names.length > MAX_NAMES) return undefined;
    const now = this.now();
    if (now - this.windowStart >= COMPILE_WINDOW_MS) {
      this.windowStart = now;
      this.compiles = 0;
    }
    if (this.compiles >= MAX_COMPILES) return undefined;
    let at = this.validators.findIndex(
      (v) => v.names.size + names.filter((n) => !v.names.has(n)).length <= MAX_NAMES,
    );
    const all = new Set(names);
    if (at >= 0) for (const n of this.validators[at]!.names) all.add(n);
    else if (this.validators.length < MAX_VALIDATORS) at = this.validators.length;
    else at = this.validators.reduce((oldest, v, i, list) => (v.used < list[oldest]!.used ? i : oldest), 0);
    const properties: Record<string, unknown> = {};
    for (const n of all) properties[n] = this.properties[n];
    const schema: AnySchemaObject = {
      ...this.rest,
      $id: `urn:nmdc-runtime:narrowed:${++narrowedSchemas}`,
      properties,
    };
    this.compiles++;
    this.totalCompiles++;
    let validate: ValidateFunction;
    try {
      validate = this.ajv.compile(schema);
    } catch {
      // Not expected (the class's own schema compiled); its own function answers instead.
      return undefined;
    }
    const replaced = this.validators[at];
    if (replaced) this.ajv.removeSchema(replaced.schema);
    const narrowed = { names: all, schema, validate, used: this.answers };
    this.validators[at] = narrowed;
    return narrowed;
  }
}
