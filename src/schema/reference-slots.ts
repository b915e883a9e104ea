/**
 * Which slots reference other records, derived from the vendored schema, and each one's
 * direction in the provenance graph. A slot references records when its range (or a subclass
 * of it) is the class of records kept in a Database collection and its values are not inlined.
 *
 * Direction: an upstream slot's value helped produce the referring record (a biosample's study);
 * a downstream slot's value came from the referring record (a process's outputs). The schema
 * does not say which, so the two lists name them, as the original service does; a reference
 * slot in neither list (a schema upgrade) fails the schema-graph test until it is placed.
 */
import { classAndDescendants } from './class-tree.ts';
import { schemaView, slotOf, slotsOfClass } from './schema-view.ts';

export type Direction = 'upstream' | 'downstream';

export const UPSTREAM_SLOTS: readonly string[] = [
  'associated_studies',
  'collected_from',
  'has_chromatography_configuration',
  'has_input',
  'has_mass_spectrometry_configuration',
  'instrument_used',
  'part_of',
  'was_generated_by',
  'was_informed_by',
  // Schema 11.23 adds it: the organism an organism sample was taken from is upstream of it, as
  // the site a biosample was collected from is (`collected_from`).
  'expected_organism',
];

export const DOWNSTREAM_SLOTS: readonly string[] = [
  'calibration_object',
  'generates_calibration',
  'has_output',
  'in_manifest',
  'uses_calibration',
  'superseded_by',
];

export interface ReferenceSlot {
  slot: string;
  /** The slot's range, `nmdc:`-prefixed. */
  range: string;
  direction: Direction | undefined;
}

export interface Reference {
  slot: string;
  /** The referenced record's id. */
  id: string;
  direction: Direction;
}

interface Derived {
  byClass: Map<string, ReferenceSlot[]>;
  /** Every directed reference slot name, for records whose type the schema does not know. */
  anyClass: ReferenceSlot[];
}

let derived: Derived | undefined;

function directionOf(slot: string): Direction | undefined {
  if (UPSTREAM_SLOTS.includes(slot)) return 'upstream';
  if (DOWNSTREAM_SLOTS.includes(slot)) return 'downstream';
  return undefined;
}

/** Classes whose instances are records of a collection: each collection's range and its subclasses. */
export function recordClasses(): Set<string> {
  const { classes } = schemaView();
  const out = new Set<string>();
  for (const slot of classes.Database?.slots ?? []) {
    const range = slotOf('Database', slot).range;
    if (range) for (const c of classAndDescendants(`nmdc:${range}`)) out.add(c);
  }
  return out;
}

function derive(): Derived {
  const { classes } = schemaView();
  const records = recordClasses();
  const referencesRecords = (range: string) =>
    [...classAndDescendants(`nmdc:${range}`)].some((c) => records.has(c));
  const byClass = new Map<string, ReferenceSlot[]>();
  const all = new Map<string, ReferenceSlot>();
  for (const name of Object.keys(classes)) {
    if (!records.has(`nmdc:${name}`)) continue;
    const list: ReferenceSlot[] = [];
    for (const slot of slotsOfClass(name)) {
      const def = slotOf(name, slot);
      if (!def.range || !classes[def.range] || def.inlined || def.inlined_as_list) continue;
      if (!referencesRecords(def.range)) continue;
      const ref = { slot, range: `nmdc:${def.range}`, direction: directionOf(slot) };
      list.push(ref);
      if (ref.direction && !all.has(slot)) all.set(slot, ref);
    }
    byClass.set(`nmdc:${name}`, list);
  }
  return { byClass, anyClass: [...all.values()] };
}

function get(): Derived {
  return (derived ??= derive());
}

/** The reference slots of one class (empty for a class whose records reference nothing). */
export function referenceSlotsOf(type: string): readonly ReferenceSlot[] {
  return get().byClass.get(type) ?? [];
}

/** Every reference slot name the schema has, with or without a direction. */
export function allReferenceSlotNames(): Set<string> {
  const out = new Set<string>();
  for (const list of get().byClass.values()) for (const r of list) out.add(r.slot);
  return out;
}

/**
 * The directed references a record makes, by its `type` (a record of an unknown type: every
 * directed slot it has). Values that are not strings are skipped; a repeated reference is given once.
 */
export function referencesOf(doc: Record<string, unknown>): Reference[] {
  const type = typeof doc.type === 'string' ? doc.type : undefined;
  const slots = (type && get().byClass.get(type)) || get().anyClass;
  const out: Reference[] = [];
  const seen = new Set<string>();
  for (const { slot, direction } of slots) {
    if (!direction) continue;
    const value = doc[slot];
    if (value === undefined || value === null) continue;
    for (const id of Array.isArray(value) ? value : [value]) {
      if (typeof id !== 'string' || id === '') continue;
      const key = `${slot}\u0000${id}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({ slot, id, direction });
    }
  }
  return out;
}
