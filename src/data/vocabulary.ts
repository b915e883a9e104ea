/**
 * The fixed vocabulary generated records draw from: ecosystem paths (with the ENVO terms and the
 * words their text fields use), sampling sites, people and funders.
 */
interface EcosystemPath {
  ecosystem: string;
  ecosystem_category: string;
  ecosystem_type: string;
  ecosystem_subtype: string;
  specific_ecosystem: string;
  broad: [string, string];
  local: [string, string];
  medium: [string, string];
  words: string;
}

export const ECOSYSTEMS: EcosystemPath[] = [
  {
    ecosystem: 'Environmental',
    ecosystem_category: 'Terrestrial',
    ecosystem_type: 'Soil',
    ecosystem_subtype: 'Loam',
    specific_ecosystem: 'Agricultural land',
    broad: ['ENVO:00000446', 'terrestrial biome'],
    local: ['ENVO:00000114', 'agricultural field'],
    medium: ['ENVO:00001998', 'soil'],
    words: 'Soil microbial communities from agricultural fields',
  },
  {
    ecosystem: 'Host-associated',
    ecosystem_category: 'Plants',
    ecosystem_type: 'Phyllosphere',
    ecosystem_subtype: 'Leaf',
    specific_ecosystem: 'Unclassified',
    broad: ['ENVO:01000174', 'forest biome'],
    local: ['ENVO:01000245', 'plant-associated environment'],
    medium: ['PO:0025034', 'leaf'],
    words: 'Leaf surface microbiome of poplar trees',
  },
  {
    ecosystem: 'Host-associated',
    ecosystem_category: 'Plants',
    ecosystem_type: 'Rhizosphere',
    ecosystem_subtype: 'Soil',
    specific_ecosystem: 'Unclassified',
    broad: ['ENVO:01000180', 'tundra biome'],
    local: ['ENVO:00005801', 'rhizosphere'],
    medium: ['ENVO:00005801', 'rhizosphere soil'],
    words: 'Rhizosphere soil microbial communities of switchgrass',
  },
  {
    ecosystem: 'Environmental',
    ecosystem_category: 'Aquatic',
    ecosystem_type: 'Freshwater',
    ecosystem_subtype: 'Lake',
    specific_ecosystem: 'Sediment',
    broad: ['ENVO:01000252', 'freshwater lake biome'],
    local: ['ENVO:00000020', 'lake'],
    medium: ['ENVO:00002007', 'sediment'],
    words: 'Freshwater lake sediment microbial communities',
  },
  {
    ecosystem: 'Environmental',
    ecosystem_category: 'Aquatic',
    ecosystem_type: 'Marine',
    ecosystem_subtype: 'Coastal',
    specific_ecosystem: 'Sediment',
    broad: ['ENVO:00000447', 'marine biome'],
    local: ['ENVO:00000303', 'coastal wetland'],
    medium: ['ENVO:00002007', 'sediment'],
    words: 'Coastal wetland sediment and water column metagenomes',
  },
  {
    ecosystem: 'Environmental',
    ecosystem_category: 'Terrestrial',
    ecosystem_type: 'Soil',
    ecosystem_subtype: 'Permafrost',
    specific_ecosystem: 'Unclassified',
    broad: ['ENVO:01000180', 'tundra biome'],
    local: ['ENVO:00000134', 'permafrost'],
    medium: ['ENVO:00005773', 'permafrost soil'],
    words: 'Permafrost soil carbon cycling microbial communities',
  },
];

export const SITES: Array<[string, number, number]> = [
  ['USA: Michigan, Kellogg Biological Station', 42.41, -85.37],
  ['USA: Alaska, Toolik Lake', 68.63, -149.6],
  ['USA: Colorado, East River', 38.92, -106.95],
  ['USA: Washington, Columbia River', 46.37, -119.27],
  ['USA: Florida, Everglades', 25.32, -80.93],
  ['USA: Oregon, Willamette Valley', 44.94, -123.03],
  ['Canada: British Columbia, Vancouver Island', 49.65, -125.45],
  ['Australia: Northern Territory, Darwin', -12.46, 130.84],
  ['Germany: Saxony, Leipzig', 51.34, 12.37],
  ['Brazil: Amazonas, Manaus', -3.1, -60.02],
];

export const PEOPLE = ['Kirsten Hofmockel', 'Janet Jansson', 'Emiley Eloe-Fadrosh', 'Mary Lipton', 'Chris Mungall', 'Wendy Brown'];
export const FUNDERS = [
  'DOE Office of Biological and Environmental Research',
  'National Science Foundation',
  'DOE Joint Genome Institute Community Science Program',
  'EMSL User Program',
];
