/**
 * Which dotted field paths the records of a collection can have, by the vendored schema: the first
 * segment a slot of the collection's class (or a subclass), each further segment a slot of the
 * class the previous slot holds inline (`lat_lon.latitude`, `env_broad_scale.term.name`). Array
 * positions (`has_credit_associations.0.applies_to_person.name`) are transparent. Used to refuse a
 * sort on a field no record can have, which MongoDB would accept and ignore.
 */
import { classAndDescendants } from './class-tree.ts';
import { schemaView, slotOf, slotsOfClass } from './schema-view.ts';

const bare = (name: string) => name.replace(/^nmdc:/, '');

const slotSets = new Map<string, ReadonlySet<string>>();
/** A class's slots (inherited included) as a set, computed once per class. */
function slotSet(className: string): ReadonlySet<string> {
  let set = slotSets.get(className);
  if (!set) slotSets.set(className, (set = new Set(slotsOfClass(className))));
  return set;
}

/** The class and its subclasses, bare names. */
function withSubclasses(className: string): string[] {
  return [...classAndDescendants(`nmdc:${className}`)].map(bare);
}

/** Bare names of the classes whose instances a collection of the Database class holds. */
export function classesOfCollection(collection: string): string[] {
  const range = slotOf('Database', collection).range;
  return range && schemaView().classes[range] ? withSubclasses(range) : [];
}

/**
 * Builds what field paths are checked against (the schema view, the class tree, the slots of each
 * collection's classes) now, at start-up, rather than on the first sorted request (about 20 ms).
 */
export function prepareFieldPaths(): void {
  for (const collection of slotsOfClass('Database'))
    for (const className of classesOfCollection(collection)) slotSet(className);
}

/** The classes a slot holds inline for records of `classes`, and whether it also holds plain values. */
function step(classes: string[], slot: string): { known: boolean; inline: string[] } {
  const { classes: all } = schemaView();
  let known = false;
  const inline = new Set<string>();
  for (const c of classes) {
    if (!slotSet(c).has(slot)) continue;
    known = true;
    const def = slotOf(c, slot);
    const range = def.range;
    if (!range || !all[range]) continue;
    // A class with an `id` is referenced by id unless the slot says it is inlined.
    const referenced = slotSet(range).has('id') && !def.inlined && !def.inlined_as_list;
    if (!referenced) for (const sub of withSubclasses(range)) inline.add(sub);
  }
  return { known, inline: [...inline] };
}

export interface UnknownPath {
  /** The first segment no record of the collections can have. */
  segment: string;
  /** The path up to that segment (empty for the first). */
  parent: string;
  /** Slots valid at that place, for hints. */
  valid: string[];
}

/**
 * Undefined when records of one of `collections` can have `path`; otherwise where it goes wrong.
 * A collection the schema names no class for accepts every path.
 */
export function unknownFieldPath(collections: string[], path: string): UnknownPath | undefined {
  let classes = collections.flatMap(classesOfCollection);
  if (classes.length === 0) return undefined;
  const segments = path.split('.');
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    if (/^\d+$/.test(segment) && i > 0) continue;
    const { known, inline } = step(classes, segment);
    if (!known) {
      const valid = [...new Set(classes.flatMap((c) => [...slotSet(c)]))].sort();
      return { segment, parent: segments.slice(0, i).join('.'), valid };
    }
    if (i < segments.length - 1 && inline.length === 0) {
      return { segment: segments[i + 1]!, parent: segments.slice(0, i + 1).join('.'), valid: [] };
    }
    classes = inline;
  }
  return undefined;
}

/** Edit distance counting a swap of neighbours as one edit; Infinity once it exceeds `max`. */
function distance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return Infinity;
  const rows: number[][] = [Array.from({ length: b.length + 1 }, (_, j) => j)];
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      let d = Math.min(
        rows[i - 1]![j]! + 1,
        row[j - 1]! + 1,
        rows[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      row.push(d);
    }
    rows.push(row);
  }
  const d = rows[a.length]![b.length]!;
  return d > max ? Infinity : d;
}

/** The valid names closest to `name` (a few edits away; the nearest ones, at most three). */
export function closestNames(name: string, valid: string[]): string[] {
  if (name.length > 100) return [];
  const lower = name.toLowerCase();
  const scored = valid
    .map(
      (v) =>
        [v, distance(lower, v.toLowerCase(), Math.min(3, Math.max(1, Math.floor(v.length / 3))))] as const,
    )
    .filter(([, d]) => d !== Infinity);
  const best = Math.min(...scored.map(([, d]) => d));
  return scored
    .filter(([, d]) => d === best)
    .map(([v]) => v)
    .sort()
    .slice(0, 3);
}
