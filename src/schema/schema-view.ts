/**
 * The vendored NMDC schema (LinkML, patterns materialized), read once on first use: classes with
 * their `is_a`, slots and `slot_usage`, and every slot's range. See `vendor/.../SOURCE.md`.
 */
import fs from 'node:fs';

export const SCHEMA_FILE_VERSION = '11.23.0';

interface SlotDefinition {
  name: string;
  range?: string;
  multivalued?: boolean;
  inlined?: boolean;
  inlined_as_list?: boolean;
}

interface ClassDefinition {
  name: string;
  is_a?: string;
  abstract?: boolean;
  slots?: string[];
  slot_usage?: Record<string, Partial<SlotDefinition>>;
}

export interface SchemaView {
  classes: Record<string, ClassDefinition>;
  slots: Record<string, SlotDefinition>;
}

let view: SchemaView | undefined;

export function schemaView(): SchemaView {
  if (!view) {
    const url = new URL(
      `./vendor/nmdc-schema-${SCHEMA_FILE_VERSION}/nmdc_materialized_patterns.json`,
      import.meta.url,
    );
    const raw = JSON.parse(fs.readFileSync(url, 'utf8')) as SchemaView;
    view = { classes: raw.classes, slots: raw.slots };
  }
  return view;
}

/** The class and its ancestors by `is_a`, nearest first (bare names). */
function lineage(className: string): string[] {
  const { classes } = schemaView();
  const line: string[] = [];
  for (
    let c: string | undefined = className;
    c !== undefined && classes[c] && !line.includes(c);
    c = classes[c]!.is_a
  )
    line.push(c);
  return line;
}

/** A class's slots, its own and inherited (LinkML lists only a class's own in `slots`). */
export function slotsOfClass(className: string): string[] {
  const { classes } = schemaView();
  const out = new Set<string>();
  for (const c of lineage(className)) for (const s of classes[c]!.slots ?? []) out.add(s);
  return [...out];
}

/**
 * A slot as one class uses it: the slot's definition with the `slot_usage` of the class's
 * ancestors over it, the nearest last.
 */
export function slotOf(className: string, slot: string): SlotDefinition {
  const { classes, slots } = schemaView();
  let def: SlotDefinition = { ...slots[slot], name: slot };
  for (const c of lineage(className).reverse())
    def = { ...def, ...(classes[c]!.slot_usage?.[slot] ?? {}), name: slot };
  return def;
}
