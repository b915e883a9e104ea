/**
 * Which typecode a new identifier of a schema class gets, read from the vendored NMDC schema:
 * the class's `id` slot pattern names the typecodes its ids may carry (`^(nmdc):(dgns|omprc)-...`),
 * and new ids take the first one, as the original service's minter does
 * (`get_typecode_for_future_ids`). Classes whose ids have no NMDC typecode (abstract classes,
 * ontology terms) cannot be minted for.
 */
import { schemaView, slotOf } from '../schema/schema-view.ts';

export interface TypecodeOfClass {
  /** `nmdc:Biosample_typecode`, as the original names it. */
  id: string;
  /** `nmdc:Biosample` */
  schema_class: string;
  /** `bsm` */
  name: string;
}

/** The leading typecode group of an NMDC id pattern: `^(nmdc):bsm-` or `^(nmdc):(dgns|omprc)-`. */
const TYPECODES_IN_PATTERN = /^\^\(nmdc\):\(?([a-z]+(?:\|[a-z]+)*)\)?-/;

const NMDC_PREFIX = 'nmdc:';

/** The class's `id` pattern as the schema materializes it (with its ancestors' slot usage). */
export function idPatternOfClass(className: string): string | undefined {
  return (slotOf(className, 'id') as { pattern?: string }).pattern;
}

export type ClassLookup =
  { found: true; typecode: TypecodeOfClass } | { found: false; reason: 'unknown_class' | 'no_typecode' };

/** `schemaClass` is a CURIE such as `nmdc:Biosample`, exactly as clients send it. */
export function typecodeOfClass(schemaClass: string): ClassLookup {
  if (!schemaClass.startsWith(NMDC_PREFIX)) return { found: false, reason: 'unknown_class' };
  const className = schemaClass.slice(NMDC_PREFIX.length);
  const definition = Object.hasOwn(schemaView().classes, className)
    ? schemaView().classes[className]
    : undefined;
  if (!definition) return { found: false, reason: 'unknown_class' };
  if (definition.abstract) return { found: false, reason: 'no_typecode' };
  const match = TYPECODES_IN_PATTERN.exec(idPatternOfClass(className) ?? '');
  if (!match) return { found: false, reason: 'no_typecode' };
  return {
    found: true,
    typecode: { id: `${schemaClass}_typecode`, schema_class: schemaClass, name: match[1]!.split('|')[0]! },
  };
}
