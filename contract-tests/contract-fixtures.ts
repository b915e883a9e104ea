/**
 * What the consumers and the provider of the contracts agree on: names, provider states and the
 * example values the states make true. Consumers write pacts with these examples; the provider's
 * state handlers create exactly this data before each interaction is replayed.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const PROVIDER = 'nmdc-metadata-service';
export const CONSUMER_2_13_0 = 'nmdc-sdk-2.13.0';
export const CONSUMER_1_2_0 = 'nmdc-sdk-1.2.0';

/** Pact files are written here by the consumer tests and read by the provider verification. */
export const PACT_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'pacts');

export const pactFileOf = (consumer: string): string => path.join(PACT_DIR, `${consumer}-${PROVIDER}.json`);

export const STUDY_ID = 'nmdc:sty-11-pact01';
export const BIOSAMPLE_ID = 'nmdc:bsm-11-pact0001';
export const ABSENT_BIOSAMPLE_ID = 'nmdc:bsm-11-absent0';
export const PLANNED_PROCESS_ID = 'nmdc:wfmgas-11-pact01';

export const USER = { username: 'pact-researcher', password: 'pact-researcher-password-1' };
export const SITE_ID = 'pact-lab';
export const NEW_SITE_ID = 'pact-new-lab';
export const SITE_CLIENT = {
  client_id: 'sys0pact00000000001',
  client_secret: 'pact-site-client-secret-0001',
};

/** Three biosamples of the study, in id order; the page size in the contracts is 2. */
export const BIOSAMPLES = [1, 2, 3].map((n) => ({
  id: `nmdc:bsm-11-pact000${n}`,
  type: 'nmdc:Biosample',
  name: `Rhizosphere soil core ${n}`,
  ecosystem_category: 'Terrestrial',
  associated_studies: [STUDY_ID],
  env_medium: { has_raw_value: 'ENVO:00001998', type: 'nmdc:ControlledIdentifiedTermValue' },
}));

export const PLANNED_PROCESSES = [
  {
    id: PLANNED_PROCESS_ID,
    type: 'nmdc:MetagenomeAssembly',
    name: 'Metagenome assembly of core 1',
    has_input: [BIOSAMPLE_ID],
  },
];

export const PAGE_SIZE = 2;
export const BIOSAMPLE_FILTER = `associated_studies:${STUDY_ID}`;
export const SCHEMA_FILTER = JSON.stringify({ associated_studies: STUDY_ID });

/** Provider states, by name. Values handed back by a state are injected into the request. */
export const STATE = {
  biosamples: `three biosamples of study ${STUDY_ID} exist`,
  biosamplesCursor: `three biosamples of study ${STUDY_ID} exist and a find cursor points past the first page`,
  biosamplesPageToken: `three biosamples of study ${STUDY_ID} exist and a page token points past the first page`,
  noBiosample: `biosample ${ABSENT_BIOSAMPLE_ID} does not exist`,
  plannedProcesses: `planned process ${PLANNED_PROCESS_ID} exists`,
  user: `user ${USER.username} exists with a known password`,
  siteClient: `site ${SITE_ID} has the client ${SITE_CLIENT.client_id}`,
  signedInWithBiosamples: `user ${USER.username} is signed in and three biosamples of study ${STUDY_ID} exist`,
  queryCursorOpen: `user ${USER.username} is signed in and a find over biosamples has more batches`,
  signedInWithoutNewSite: `user ${USER.username} is signed in and site ${NEW_SITE_ID} does not exist`,
  signedInSiteAdmin: `user ${USER.username} is signed in and administers site ${SITE_ID}`,
} as const;

/** Names of the values provider states hand back (`fromProviderState('${...}')`). */
export const INJECTED = {
  cursor: 'nextCursor',
  pageToken: 'nextPageToken',
  queryCursorId: 'queryCursorId',
} as const;
