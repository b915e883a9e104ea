/**
 * Narrowed validators (src/validation/narrowed-validators.ts) answer yes exactly when the class's
 * own function does, within their bounds, and `classErrors` answers as that function alone would.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { classErrors, classValidator, createNarrowedValidators } from '../../src/validation/json-schema.ts';
import {
  COMPILE_WINDOW_MS,
  MAX_COMPILES,
  MAX_NAMES,
  MAX_VALIDATORS,
} from '../../src/validation/narrowed-validators.ts';
import { generateDatabase } from '../../src/data/generator.ts';

type Rec = Record<string, unknown>;

const DIR = path.join(import.meta.dirname, '../fixtures/nmdc-schema-examples');

/** Every record of the schema's example data (valid and invalid), with its class. */
function exampleRecords(): Array<{ file: string; className: string; record: Rec }> {
  const out: Array<{ file: string; className: string; record: Rec }> = [];
  for (const kind of ['valid', 'invalid'])
    for (const file of fs.readdirSync(path.join(DIR, kind)).filter((f) => f.endsWith('.json'))) {
      const body = JSON.parse(fs.readFileSync(path.join(DIR, kind, file), 'utf8')) as unknown;
      if (typeof body !== 'object' || body === null) continue;
      for (const records of Object.values(body))
        if (Array.isArray(records))
          for (const record of records as Rec[])
            if (typeof record?.type === 'string' && record.type.startsWith('nmdc:'))
              out.push({ file: `${kind}/${file}`, className: record.type.slice(5), record });
    }
  return out;
}

const biosample = (): Rec =>
  structuredClone(
    generateDatabase({ studies: 1, biosamples: 1, dataObjects: 0, seed: 3 }).biosample_set[0],
  ) as Rec;

/** A generated biosample changed in one way: a valid or invalid record either way. */
const MUTATIONS: Array<[string, (r: Rec) => void]> = [
  ['unchanged', () => {}],
  ['id breaks its pattern', (r) => (r.id = 'nmdc:bsm-not an id')],
  ['id is a number', (r) => (r.id = 12)],
  ['name is an object', (r) => (r.name = { a: 1 })],
  ['samp_name is null', (r) => (r.samp_name = null)],
  ['a required slot is missing', (r) => delete r.env_medium],
  ['the id is missing', (r) => delete r.id],
  ['an unknown slot', (r) => (r.colour = 'blue')],
  ['associated_studies is a string', (r) => (r.associated_studies = 'nmdc:sty-11-aaaa')],
  ['associated_studies holds a biosample id', (r) => (r.associated_studies = ['nmdc:bsm-11-aaaa'])],
  ['a latitude that is a string', (r) => ((r.lat_lon as Rec).latitude = 'north')],
  ['a latitude past 90', (r) => ((r.lat_lon as Rec).latitude = 91)],
  ['lat_lon without a longitude', (r) => delete (r.lat_lon as Rec).longitude],
  ['a term id that is a number', (r) => (((r.env_medium as Rec).term as Rec).id = 5)],
  ['type names another class', (r) => (r.type = 'nmdc:Study')],
  ['depth is a string', (r) => (r.depth = '1 m')],
  ['an unknown enum value', (r) => (r.ecosystem_category = 'Nowhere at all')],
  ['a valid optional slot', (r) => (r.elev = 120)],
  ['alternative_identifiers holds a number', (r) => (r.alternative_identifiers = [7])],
  ['__proto__ as a slot name', (r) => Object.assign(r, JSON.parse('{"__proto__": {"x": 1}}'))],
];

/** The class's own answer: whether it accepts the record, and its errors. */
function ownAnswer(className: string, record: unknown) {
  const fn = classValidator(className);
  const valid = fn(record) === true;
  return { valid, errors: valid ? [] : [...(fn.errors ?? [])] };
}

describe('narrowed validators', () => {
  it('exist only for the classes with many properties', () => {
    expect(createNarrowedValidators('Biosample')).toBeDefined();
    expect(createNarrowedValidators('Study')).toBeUndefined();
    expect(createNarrowedValidators('NoSuchClass')).toBeUndefined();
  });

  it('accept a changed biosample exactly when the class does, and classErrors answers as the class alone', () => {
    // Fresh validators for each record, so no bound decides an answer.
    const narrowed = () => createNarrowedValidators('Biosample')!;
    let accepted = 0;
    let refused = 0;
    for (const [label, mutate] of MUTATIONS) {
      const record = biosample();
      mutate(record);
      const own = ownAnswer('Biosample', record);
      expect(narrowed().accepts(record), label).toBe(own.valid);
      expect(classErrors('Biosample', record), label).toEqual(own.errors);
      if (own.valid) accepted++;
      else refused++;
    }
    expect(accepted).toBeGreaterThanOrEqual(3);
    expect(refused).toBeGreaterThanOrEqual(14);
  });

  it("agree with the class on every record of the schema's examples", () => {
    const records = exampleRecords().filter(({ className }) => createNarrowedValidators(className));
    expect(records.length).toBeGreaterThanOrEqual(30);
    let yes = 0;
    for (const { file, className, record } of records) {
      const own = ownAnswer(className, record);
      const known = Object.keys(record).length <= MAX_NAMES;
      // A record naming more properties than a narrowed validator may is left to the class.
      expect(createNarrowedValidators(className)!.accepts(record), file).toBe(own.valid && known);
      expect(classErrors(className, record), file).toEqual(own.errors);
      if (own.valid && known) yes++;
    }
    expect(yes).toBeGreaterThanOrEqual(10);
  });

  /** A generated biosample, and optional slots that accept null (each record below names its own). */
  function nullableSlots(): { base: Rec; nullable: string[] } {
    const base = biosample();
    const properties = Object.keys((classValidator('Biosample').schema as { properties: Rec }).properties);
    const nullable = properties.filter(
      (p) => !(p in base) && ownAnswer('Biosample', { ...base, [p]: null }).valid,
    );
    return { base, nullable };
  }

  it('compile at most MAX_COMPILES in a window, and records past it are still answered by the class', () => {
    let clock = 0;
    const narrowed = createNarrowedValidators('Biosample', () => clock)!;
    const { base, nullable } = nullableSlots();
    const records = nullable.slice(0, MAX_COMPILES + 11).map((p) => ({ ...base, [p]: null }));
    expect(records.length).toBe(MAX_COMPILES + 11);
    const answers = records.slice(0, MAX_COMPILES + 10).map((r) => narrowed.accepts(r));
    const { compiles, names } = narrowed.stats();
    expect(compiles).toBe(MAX_COMPILES);
    expect(names.length).toBeLessThanOrEqual(MAX_VALIDATORS);
    for (const n of names) expect(n).toBeLessThanOrEqual(MAX_NAMES);
    // Each record widened or added a validator until the bound; those after it are left to the class.
    expect(answers.slice(0, MAX_COMPILES).every(Boolean)).toBe(true);
    expect(answers.slice(MAX_COMPILES).some(Boolean)).toBe(false);
    for (const r of records.slice(MAX_COMPILES)) expect(classErrors('Biosample', r)).toEqual([]);
    // What was covered stays covered; a new window compiles again.
    expect(narrowed.accepts(records[0])).toBe(true);
    clock += COMPILE_WINDOW_MS - 1;
    expect(narrowed.accepts(records[MAX_COMPILES + 10])).toBe(false);
    clock += 1;
    expect(narrowed.accepts(records[MAX_COMPILES + 10])).toBe(true);
    expect(narrowed.stats().compiles).toBe(MAX_COMPILES + 1);
  });

  it('replace the least recently used validator when they are all taken', () => {
    const narrowed = createNarrowedValidators('Biosample')!;
    const { base, nullable } = nullableSlots();
    const width = MAX_NAMES - Object.keys(base).length;
    // Records no validator can widen to: each adds `width` slots of its own.
    const shapes = Array.from({ length: MAX_VALIDATORS + 1 }, (_, i) =>
      Object.fromEntries([
        ...Object.entries(base),
        ...nullable.slice(i * width, (i + 1) * width).map((p) => [p, null]),
      ]),
    );
    expect(shapes.at(-1)!).not.toEqual(base);
    expect(Object.keys(shapes.at(-1)!)).toHaveLength(MAX_NAMES);
    for (const shape of shapes.slice(0, MAX_VALIDATORS)) expect(narrowed.accepts(shape)).toBe(true);
    // The first shape is used again: the second is now the least recently used, and goes.
    expect(narrowed.accepts(shapes[0])).toBe(true);
    expect(narrowed.accepts(shapes[MAX_VALIDATORS])).toBe(true);
    expect(narrowed.stats()).toEqual({
      compiles: MAX_VALIDATORS + 1,
      names: Array.from({ length: MAX_VALIDATORS }, () => MAX_NAMES),
    });
    expect(narrowed.accepts(shapes[0])).toBe(true);
    expect(narrowed.stats().compiles).toBe(MAX_VALIDATORS + 1);
    expect(narrowed.accepts(shapes[1])).toBe(true);
    expect(narrowed.stats().compiles).toBe(MAX_VALIDATORS + 2);
  });

  it('leave a record with unknown or too many names to the class, compiling nothing', () => {
    const narrowed = createNarrowedValidators('Biosample')!;
    const crowded: Rec = biosample();
    for (let i = 0; i < 100_000; i++) crowded[`x${i}`] = i;
    expect(narrowed.accepts(crowded)).toBe(false);
    expect(narrowed.accepts([biosample()])).toBe(false);
    expect(narrowed.accepts('nmdc:bsm-11-aaaa')).toBe(false);
    expect(narrowed.accepts(null)).toBe(false);
    // A valid record naming more properties than a narrowed validator may.
    const { base, nullable } = nullableSlots();
    const wide = Object.fromEntries([
      ...Object.entries(base),
      ...nullable.slice(0, MAX_NAMES).map((p) => [p, null]),
    ]);
    expect(Object.keys(wide).length).toBeGreaterThan(MAX_NAMES);
    expect(narrowed.accepts(wide)).toBe(false);
    expect(classErrors('Biosample', wide)).toEqual([]);
    expect(narrowed.stats().compiles).toBe(0);
    const errors = classErrors('Biosample', crowded);
    expect(errors.filter((e) => e.keyword === 'additionalProperties')).toHaveLength(100_000);
  });
});
