/**
 * The NMDC schema's own check beyond JSON Schema (its `NmdcSchemaValidationPlugin`, which the
 * original service runs with the JSON Schema): every QuantityValue has a `has_unit`, and where the
 * slot holding it names `storage_units` (an annotation of the LinkML schema, e.g. `depth`: `m`),
 * the unit is one of them.
 */
import { schemaView } from '../schema/schema-view.ts';
import { clipped, type RuleViolation } from './rule-messages.ts';

const QUANTITY_VALUE = 'nmdc:QuantityValue';

let unitsBySlot: Map<string, readonly string[]> | undefined;

interface AnnotatedSlot {
  annotations?: Record<string, { value?: unknown }>;
}

function storageUnits(): Map<string, readonly string[]> {
  if (!unitsBySlot) {
    unitsBySlot = new Map();
    for (const [name, slot] of Object.entries(schemaView().slots as Record<string, AnnotatedSlot>)) {
      const value = slot.annotations?.storage_units?.value;
      if (value !== undefined && value !== null) unitsBySlot.set(name, String(value).split('|'));
    }
  }
  return unitsBySlot;
}

/**
 * The QuantityValue unit problems inside one record, at JSON pointers inside it; the texts name
 * the place as `base` + pointer (the record's own place in the payload, e.g. `/biosample_set/3`).
 */
export function unitViolations(record: Record<string, unknown>, base: string): RuleViolation[] {
  const out: RuleViolation[] = [];
  const units = storageUnits();
  const visit = (value: unknown, path: string, slot: string | undefined): void => {
    if (value === null || typeof value !== 'object') return;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) visit(value[i], `${path}/${i}`, slot);
      return;
    }
    const obj = value as Record<string, unknown>;
    if (obj.type === QUANTITY_VALUE) {
      const unit = obj.has_unit;
      if (unit === undefined || unit === null) {
        out.push({
          path,
          placed: true,
          text: `QuantityValue at ${base}${path} is missing required 'has_unit' property`,
        });
        return;
      }
      const allowed = slot === undefined ? undefined : units.get(slot);
      if (allowed && !allowed.includes(String(unit)))
        out.push({
          path,
          placed: true,
          text: `QuantityValue at ${base}${path} has unit '${clipped(String(unit))}' which is not allowed for slot '${slot}' (allowed: ${allowed.join(', ')})`,
        });
      return;
    }
    for (const key in obj) {
      const child = obj[key];
      if (child !== null && typeof child === 'object') visit(child, `${path}/${key}`, key);
    }
  };
  visit(record, '', undefined);
  return out;
}
