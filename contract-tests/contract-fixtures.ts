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

/** A second site, whose client may not report on the first site's operations. */
export const OTHER_SITE_ID = 'pact-other-lab';
export const OTHER_SITE_CLIENT = {
  client_id: 'sys0pact00000000002',
  client_secret: 'pact-site-client-secret-0002',
};

/**
 * A job of a catalog workflow that needs no capability, so any site may claim it, and the
 * operation of the first site's claim of it (the ids the service would mint, fixed here).
 */
export const JOB_ID = 'nmdc:sys0pact00000j01';
export const OPERATION_ID = 'nmdc:sys0pact00000p01';
export const JOB = {
  id: JOB_ID,
  workflow: { id: 'metag-1.0.0' },
  config: { git_repo: 'https://github.com/microbiomedata/metaG', release: 'v1.0.0' },
  claims: [] as Array<{ op_id: string; site_id: string }>,
  created_at: '2025-06-02T14:03:11.204Z',
};
/** What the claiming site reports while it runs the job, and when it has finished. */
export const OPERATION_PROGRESS = { metadata: { step: 'assembly', percent_done: 40 } };
export const OPERATION_RESULT = { done: true, result: { has_output: ['nmdc:dobj-11-pact0001'] } };

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
  jobClaimable: `job ${JOB_ID} is unclaimed and the client ${SITE_CLIENT.client_id} of site ${SITE_ID} is signed in`,
  jobClaimed: `site ${SITE_ID} holds a claim of job ${JOB_ID} through operation ${OPERATION_ID} and its client is signed in`,
  jobClaimedOtherSiteSignedIn: `site ${SITE_ID} holds a claim of job ${JOB_ID} through operation ${OPERATION_ID} and the client ${OTHER_SITE_CLIENT.client_id} of site ${OTHER_SITE_ID} is signed in`,
} as const;

/** Names of the values provider states hand back (`fromProviderState('${...}')`). */
export const INJECTED = {
  cursor: 'nextCursor',
  pageToken: 'nextPageToken',
  queryCursorId: 'queryCursorId',
} as const;
