/**
 * The NMDC class tree (`is_a`), from the vendored schema. Class names here carry the `nmdc:`
 * prefix, as records' `type` values and the API's `types` parameter do.
 */
import { schemaView } from './schema-view.ts';

const PREFIX = 'nmdc:';

export const NAMED_THING = 'nmdc:NamedThing';

interface Tree {
  names: Set<string>;
  /** Class -> itself and every ancestor. */
  ancestors: Map<string, string[]>;
  /** Class -> itself and every descendant. */
  descendants: Map<string, Set<string>>;
}

let tree: Tree | undefined;

function build(): Tree {
  const { classes } = schemaView();
  const names = new Set(Object.keys(classes).map((n) => PREFIX + n));
  const ancestors = new Map<string, string[]>();
  const descendants = new Map<string, Set<string>>();
  for (const name of names) descendants.set(name, new Set([name]));
  for (const bare of Object.keys(classes)) {
    const line: string[] = [];
    for (
      let c: string | undefined = bare;
      c !== undefined && !line.includes(PREFIX + c);
      c = classes[c]?.is_a
    )
      line.push(PREFIX + c);
    ancestors.set(PREFIX + bare, line);
    for (const a of line) descendants.get(a)?.add(PREFIX + bare);
  }
  return { names, ancestors, descendants };
}

function get(): Tree {
  return (tree ??= build());
}

/** Every class name of the schema, `nmdc:`-prefixed. */
export function classNames(): ReadonlySet<string> {
  return get().names;
}

export function isClassName(name: string): boolean {
  return get().names.has(name);
}

/** The class and its ancestors, nearest first (`nmdc:Biosample` -> Biosample, Sample, MaterialEntity, NamedThing). */
export function typeAndAncestors(type: string): readonly string[] {
  return get().ancestors.get(type) ?? [type];
}

/** The class and every subclass at any depth. */
export function classAndDescendants(type: string): ReadonlySet<string> {
  return get().descendants.get(type) ?? new Set([type]);
}

/** The concrete types a `types` list asks for: each given class and its subclasses. */
export function matchingTypes(types: Iterable<string>): Set<string> {
  const out = new Set<string>();
  for (const t of types) for (const d of classAndDescendants(t)) out.add(d);
  return out;
}
