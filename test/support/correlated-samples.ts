/**
 * Biosamples whose ecosystem category goes with their name (each category's records named alike),
 * so in name order long runs of other categories lie before and between one category's records:
 * what sorted walks under a filter (test/store/walk-*.test.ts) have to step over.
 */
import type { Doc, Filter } from '../../src/store/port.ts';

export const PREFIXES = ['Leaf', 'Permafrost', 'Rhizosphere', 'Sediment', 'Soil'];
/** The category each name prefix goes with: Terrestrial's names come second and last. */
const CATEGORY_OF: Record<string, string> = {
  Leaf: 'Plants',
  Permafrost: 'Terrestrial',
  Rhizosphere: 'Plants',
  Sediment: 'Aquatic',
  Soil: 'Terrestrial',
};

export const TERRESTRIAL: Filter = { ecosystem_category: 'Terrestrial' };

/** The i-th sample, named after `prefix` (by default one of PREFIXES in turn). */
export function sample(i: number, prefix = PREFIXES[i % PREFIXES.length]!): Doc {
  // Every tenth name is shared, so ties fall back to the id.
  const name = `${prefix} sample ${i % 10 === 0 ? 'shared' : String(i).padStart(5, '0')}`;
  return {
    id: `nmdc:bsm-11-${String((i * 7919) % 100_000).padStart(5, '0')}`,
    type: 'nmdc:Biosample',
    // A few records without a name or with several: they sort apart from their index entries.
    ...(i % 97 === 3 ? {} : { name: i % 89 === 4 ? [name, `Zz ${name}`] : name }),
    ecosystem_category: CATEGORY_OF[prefix] ?? 'Plants',
  };
}
