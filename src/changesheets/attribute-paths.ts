/**
 * What the NMDC schema says about a changesheet's `attribute` column: each dotted part of the path
 * is a slot of the class reached so far (the record's class first, then each slot's range), and the
 * last slot tells whether the value is a list and how the text of the `value` column is typed
 * (integers, floats, booleans; everything else stays text), as the original types values by the
 * LinkML base type of the slot's range.
 */
import fs from 'node:fs';
import { RE2JS } from 're2js';
import { SCHEMA_FILE_VERSION, schemaView, slotOf, slotsOfClass } from '../schema/schema-view.ts';
import { isDecimalNumeral } from '../query/compact.ts';

/** One dotted part of an attribute path, as the schema defines it for the class it is read from. */
export interface PathStep {
  slot: string;
  /** The class the slot was found on (the range class or one of its subclasses). */
  onClass: string;
  /** The slot's range: a class, a type (`string`, `float`...) or an enumeration. */
  range: string;
  /** The range when it is a class (nested values are objects of it). */
  rangeClass?: string;
  multivalued: boolean;
}

/** An attribute path that cannot be read against the schema; `message` says which part and why. */
export class AttributePathError extends Error {}

interface ClassFacts {
  /** Class name -> its own and inherited slots (and attributes). */
  slots: Map<string, ReadonlySet<string>>;
  /** Class name -> itself and every subclass at any depth, the class first. */
  descendants: Map<string, string[]>;
  /** A record's `type` value (the class URI, e.g. `nmdc:Study`, `prov:Association`) -> class name. */
  byTypeValue: Map<string, string>;
  /** Type name -> the base of its values (`int`, `float`, `Decimal`, `Bool`, `str`...). */
  typeBases: Map<string, string>;
}

let facts: ClassFacts | undefined;

type TypeDefinition = { base?: string; typeof?: string };

/** The schema's types (`float`, `bytes`, `decimal_degree`...), which the class and slot view leaves out. */
function schemaTypes(): Record<string, TypeDefinition> {
  const url = new URL(
    `../schema/vendor/nmdc-schema-${SCHEMA_FILE_VERSION}/nmdc_materialized_patterns.json`,
    import.meta.url,
  );
  return (JSON.parse(fs.readFileSync(url, 'utf8')) as { types?: Record<string, TypeDefinition> }).types ?? {};
}

function classFacts(): ClassFacts {
  if (facts) return facts;
  const view = schemaView();
  const classes = view.classes as Record<
    string,
    { is_a?: string; class_uri?: string; attributes?: Record<string, unknown> }
  >;
  const slots = new Map<string, ReadonlySet<string>>();
  const descendants = new Map<string, string[]>();
  const byTypeValue = new Map<string, string>();
  for (const name of Object.keys(classes)) {
    const own = new Set(slotsOfClass(name));
    for (let c: string | undefined = name, depth = 0; c && depth < 50; c = classes[c]?.is_a, depth++)
      for (const attribute of Object.keys(classes[c]?.attributes ?? {})) own.add(attribute);
    slots.set(name, own);
    descendants.set(name, [name]);
    byTypeValue.set(classes[name]!.class_uri ?? `nmdc:${name}`, name);
  }
  for (const name of Object.keys(classes)) {
    const seen = new Set([name]);
    for (let c = classes[name]!.is_a; c && !seen.has(c); c = classes[c]?.is_a) {
      seen.add(c);
      descendants.get(c)?.push(name);
    }
  }
  const typeBases = new Map<string, string>();
  const types = schemaTypes();
  for (const name of Object.keys(types)) {
    let t: TypeDefinition | undefined = types[name];
    for (let depth = 0; t && !t.base && t.typeof && depth < 10; depth++) t = types[t.typeof];
    typeBases.set(name, t?.base ?? 'str');
  }
  facts = { slots, descendants, byTypeValue, typeBases };
  return facts;
}

export function isSchemaClass(name: string): boolean {
  return classFacts().slots.has(name);
}

/** The class a `type` value names (`nmdc:Study` -> `Study`, `prov:Association` -> `CreditAssociation`). */
export function classOfTypeValue(type: unknown): string | undefined {
  return typeof type === 'string' ? classFacts().byTypeValue.get(type) : undefined;
}

/** The class of a Database collection's records (`biosample_set` -> `Biosample`). */
export function rangeOfCollection(collection: string): string | undefined {
  const range = slotOf('Database', collection).range;
  return range && isSchemaClass(range) ? range : undefined;
}

/** Whether the class has subclasses (then a record needs its `type` to tell which one it is). */
export function hasSubclasses(className: string): boolean {
  return (classFacts().descendants.get(className)?.length ?? 0) > 1;
}

/**
 * The slot `slot` as read from an object of class `className`. A slot of a subclass counts too
 * (a range such as `AttributeValue` holds objects of its subclasses); `hint`, the class an existing
 * value says it is (its `type`), is preferred when it is one of them.
 */
export function stepOf(className: string, slot: string, hint?: string): PathStep {
  const { slots, descendants } = classFacts();
  const family = descendants.get(className) ?? [className];
  const candidates = hint && hint !== className && family.includes(hint) ? [hint, ...family] : family;
  const onClass = candidates.find((c) => slots.get(c)?.has(slot));
  if (onClass === undefined) throw new AttributePathError(`'${slot}' is not a slot of ${className}`);
  const def = slotOf(onClass, slot);
  const range = def.range ?? 'string';
  return {
    slot,
    onClass,
    range,
    rangeClass: isSchemaClass(range) ? range : undefined,
    multivalued: def.multivalued === true,
  };
}

/**
 * Reads a dotted attribute path from `className`. `hintAt(i)` may name the class the object the
 * `i`-th part is read from says it is (its `type`). In an existing record only the last part may be
 * a list, since a path through a list cannot say which item it means; in an object a changesheet
 * builds (`throughLists`), a list part holds that one object.
 */
export function resolvePath(
  className: string,
  attribute: string,
  options: { hintAt?: (depth: number) => string | undefined; throughLists?: boolean } = {},
): PathStep[] {
  const hintAt = options.hintAt ?? (() => undefined);
  const parts = attribute.split('.');
  if (parts.some((p) => p.trim() === '')) throw new AttributePathError(`'${attribute}' has an empty part`);
  const steps: PathStep[] = [];
  let current = className;
  for (let i = 0; i < parts.length; i++) {
    const step = stepOf(current, parts[i]!, hintAt(i));
    steps.push(step);
    if (i === parts.length - 1) break;
    if (step.multivalued && !options.throughLists) {
      throw new AttributePathError(
        `'${parts.slice(0, i + 1).join('.')}' holds a list (name its items with a variable, not a dotted path)`,
      );
    }
    if (!step.rangeClass) {
      throw new AttributePathError(
        `'${parts.slice(0, i + 1).join('.')}' holds a ${step.range} value, which has no '${parts[i + 1]}'`,
      );
    }
    current = step.rangeClass;
  }
  return steps;
}

/** Integer numerals, on the linear-time engine as every pattern that reads a sheet's values. */
const INTEGER = RE2JS.compile('^[+-]?\\d+$');

/**
 * The `value` text typed by the base of the slot's range: `int` and `float` (and `Decimal`, kept as
 * a float as the original does) become numbers, `Bool` becomes true/false; text that does not read
 * as that type stays text (schema validation then says what is wrong with it).
 */
export function typedValue(text: string, range: string): unknown {
  const base = classFacts().typeBases.get(range);
  if (base === 'int') {
    if (INTEGER.test(text)) {
      const n = Number(text);
      if (Number.isSafeInteger(n)) return n;
    }
    return text;
  }
  if (base === 'float' || base === 'Decimal') {
    if (isDecimalNumeral(text)) {
      const n = Number(text);
      if (Number.isFinite(n)) return n;
    }
    return text;
  }
  if (base === 'Bool') {
    const lower = text.toLowerCase();
    if (lower === 'true') return true;
    if (lower === 'false') return false;
  }
  return text;
}
