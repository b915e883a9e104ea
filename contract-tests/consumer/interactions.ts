/**
 * The interactions both SDK consumers expect of the service, as Pact V3 interactions with
 * matchers: ids and tokens by pattern, records by type, continuation values injected from the
 * provider state (a cursor or page token only the running provider can know).
 */
import { MatchersV3, type V3Interaction } from '@pact-foundation/pact';
import {
  ABSENT_BIOSAMPLE_ID,
  BIOSAMPLE_FILTER,
  BIOSAMPLE_ID,
  BIOSAMPLES,
  INJECTED,
  JOB,
  JOB_ID,
  NEW_SITE_ID,
  OPERATION_ID,
  OPERATION_PROGRESS,
  OPERATION_RESULT,
  PAGE_SIZE,
  PLANNED_PROCESS_ID,
  SCHEMA_FILTER,
  SITE_CLIENT,
  SITE_ID,
  STATE,
  STUDY_ID,
  USER,
} from '../contract-fixtures.ts';

const { like, eachLike, regex, integer, nullValue, fromProviderState, string } = MatchersV3;

/** The id shape of every NMDC record (COMPAT: Identifiers). */
const NMDC_ID = /^[a-zA-Z0-9][a-zA-Z0-9_.]+:[a-zA-Z0-9_][a-zA-Z0-9_\-/.,]*$/;
const OPAQUE = /^[A-Za-z0-9_-]+$/;
const JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
const EXAMPLE_JWT = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJwYWN0LXJlc2VhcmNoZXIifQ.c2lnbmF0dXJl';

const JSON_CONTENT = {
  'Content-Type': regex(/^application\/json(;.*)?$/, 'application/json; charset=utf-8'),
};
const BEARER = { Authorization: regex(/^Bearer [A-Za-z0-9_.-]+$/, `Bearer ${EXAMPLE_JWT}`) };
const FORM = 'application/x-www-form-urlencoded';
const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/;

const id = (example: string) => regex(NMDC_ID, example);

const biosample = (example: (typeof BIOSAMPLES)[number]) => ({
  id: id(example.id),
  type: 'nmdc:Biosample',
  name: string(example.name),
  associated_studies: eachLike(id(STUDY_ID)),
});

const findMeta = (extra: Record<string, unknown>) => ({
  mongo_filter_dict: like({ associated_studies: STUDY_ID }),
  count: integer(BIOSAMPLES.length),
  db_response_time_ms: integer(2),
  per_page: integer(PAGE_SIZE),
  ...extra,
});

export const findFirstPage = (path: string): V3Interaction => ({
  states: [{ description: STATE.biosamples }],
  uponReceiving: `a compact find of a study's biosamples starting cursor paging at ${path}`,
  withRequest: {
    method: 'GET',
    path,
    query: { filter: BIOSAMPLE_FILTER, per_page: String(PAGE_SIZE), cursor: '*' },
  },
  willRespondWith: {
    status: 200,
    headers: JSON_CONTENT,
    body: {
      meta: findMeta({ page: nullValue(), next_cursor: regex(OPAQUE, 'c2Vjb25kLXBhZ2U') }),
      results: [biosample(BIOSAMPLES[0]!), biosample(BIOSAMPLES[1]!)],
      group_by: [],
    },
  },
});

export const findNextPage = (path: string): V3Interaction => ({
  states: [{ description: STATE.biosamplesCursor }],
  uponReceiving: `the last page of a compact find of a study's biosamples by its next_cursor at ${path}`,
  withRequest: {
    method: 'GET',
    path,
    query: {
      filter: BIOSAMPLE_FILTER,
      per_page: String(PAGE_SIZE),
      cursor: fromProviderState(`\${${INJECTED.cursor}}`, 'c2Vjb25kLXBhZ2U'),
    },
  },
  willRespondWith: {
    status: 200,
    headers: JSON_CONTENT,
    body: {
      meta: findMeta({ page: nullValue(), next_cursor: nullValue() }),
      results: eachLike(biosample(BIOSAMPLES[2]!)),
      group_by: [],
    },
  },
});

export const getBiosample = (): V3Interaction => ({
  states: [{ description: STATE.biosamples }],
  uponReceiving: 'a request for one biosample by id',
  withRequest: { method: 'GET', path: `/biosamples/${encodeURIComponent(BIOSAMPLE_ID)}` },
  willRespondWith: { status: 200, headers: JSON_CONTENT, body: biosample(BIOSAMPLES[0]!) },
});

export const getAbsentBiosample = (): V3Interaction => ({
  states: [{ description: STATE.noBiosample }],
  uponReceiving: 'a request for a biosample that does not exist',
  withRequest: { method: 'GET', path: `/biosamples/${encodeURIComponent(ABSENT_BIOSAMPLE_ID)}` },
  willRespondWith: { status: 404, headers: JSON_CONTENT, body: { detail: 'Not found' } },
});

export const findPlannedProcesses = (path: string): V3Interaction => ({
  states: [{ description: STATE.plannedProcesses }],
  uponReceiving: `a compact find of planned processes at ${path}`,
  withRequest: { method: 'GET', path, query: { filter: `has_input:${BIOSAMPLE_ID}` } },
  willRespondWith: {
    status: 200,
    headers: JSON_CONTENT,
    body: {
      meta: like({ count: 1, page: 1, per_page: 25 }),
      results: eachLike({ id: id(PLANNED_PROCESS_ID), type: string('nmdc:MetagenomeAssembly') }),
      group_by: [],
    },
  },
});

export const schemaQueryFirstPage = (): V3Interaction => ({
  states: [{ description: STATE.biosamples }],
  uponReceiving: 'the first page of a collection query with a filter and a projection',
  withRequest: {
    method: 'GET',
    path: '/nmdcschema/biosample_set',
    query: { filter: SCHEMA_FILTER, projection: 'name', max_page_size: String(PAGE_SIZE) },
  },
  willRespondWith: {
    status: 200,
    headers: JSON_CONTENT,
    body: {
      resources: [BIOSAMPLES[0]!, BIOSAMPLES[1]!].map((b) => ({ id: id(b.id), name: string(b.name) })),
      next_page_token: regex(OPAQUE, 'bmV4dC1wYWdl'),
    },
  },
});

export const schemaQueryNextPage = (): V3Interaction => ({
  states: [{ description: STATE.biosamplesPageToken }],
  uponReceiving: 'the last page of a collection query with a filter, a projection and a page token',
  withRequest: {
    method: 'GET',
    path: '/nmdcschema/biosample_set',
    query: {
      filter: SCHEMA_FILTER,
      projection: 'name',
      max_page_size: String(PAGE_SIZE),
      page_token: fromProviderState(`\${${INJECTED.pageToken}}`, 'bmV4dC1wYWdl'),
    },
  },
  willRespondWith: {
    status: 200,
    headers: JSON_CONTENT,
    // The last page carries no next_page_token; the projection leaves only id and name.
    body: { resources: eachLike({ id: id(BIOSAMPLES[2]!.id), name: string(BIOSAMPLES[2]!.name) }) },
  },
});

const tokenBody = {
  access_token: regex(JWT, EXAMPLE_JWT),
  token_type: 'bearer',
  expires: { days: integer(1), hours: integer(0), minutes: integer(0) },
};

export const passwordLogin = (): V3Interaction => ({
  states: [{ description: STATE.user }],
  uponReceiving: 'a password login at /token',
  withRequest: {
    method: 'POST',
    path: '/token',
    headers: { 'Content-Type': FORM },
    contentType: FORM,
    body: new URLSearchParams({ grant_type: 'password', ...USER }).toString(),
  },
  willRespondWith: { status: 200, headers: JSON_CONTENT, body: tokenBody },
});

export const clientCredentialsLogin = (): V3Interaction => ({
  states: [{ description: STATE.siteClient }],
  uponReceiving: 'a site client login at /token',
  withRequest: {
    method: 'POST',
    path: '/token',
    headers: { 'Content-Type': FORM },
    contentType: FORM,
    body: new URLSearchParams({ grant_type: 'client_credentials', ...SITE_CLIENT }).toString(),
  },
  willRespondWith: { status: 200, headers: JSON_CONTENT, body: tokenBody },
});

export const FIND_COMMAND = {
  find: 'biosample_set',
  filter: { associated_studies: STUDY_ID },
  batchSize: PAGE_SIZE,
};

export const runFind = (): V3Interaction => ({
  states: [{ description: STATE.signedInWithBiosamples }],
  uponReceiving: 'a find command at /queries:run',
  withRequest: {
    method: 'POST',
    path: '/queries:run',
    headers: { ...BEARER, 'Content-Type': 'application/json' },
    body: FIND_COMMAND,
  },
  willRespondWith: {
    status: 200,
    headers: JSON_CONTENT,
    body: {
      ok: 1,
      cursor: {
        firstBatch: [biosample(BIOSAMPLES[0]!), biosample(BIOSAMPLES[1]!)],
        id: regex(OPAQUE, 'cXVlcnktY3Vyc29y'),
        ns: 'nmdc.biosample_set',
      },
    },
  },
});

export const runGetMore = (): V3Interaction => ({
  states: [{ description: STATE.queryCursorOpen }],
  uponReceiving: 'a getMore command continuing a find at /queries:run',
  withRequest: {
    method: 'POST',
    path: '/queries:run',
    headers: { ...BEARER, 'Content-Type': 'application/json' },
    body: {
      getMore: fromProviderState(`\${${INJECTED.queryCursorId}}`, 'cXVlcnktY3Vyc29y'),
      batchSize: PAGE_SIZE,
    },
  },
  willRespondWith: {
    status: 200,
    headers: JSON_CONTENT,
    body: { ok: 1, cursor: { nextBatch: eachLike(biosample(BIOSAMPLES[2]!)), id: nullValue() } },
  },
});

export const createSite = (): V3Interaction => ({
  states: [{ description: STATE.signedInWithoutNewSite }],
  uponReceiving: 'a request to create a site',
  withRequest: {
    method: 'POST',
    path: '/sites',
    headers: { ...BEARER, 'Content-Type': 'application/json' },
    body: { id: NEW_SITE_ID },
  },
  willRespondWith: { status: 201, headers: JSON_CONTENT, body: { id: NEW_SITE_ID, capability_ids: [] } },
});

export const createExistingSite = (): V3Interaction => ({
  states: [{ description: STATE.signedInSiteAdmin }],
  uponReceiving: 'a request to create a site whose id exists',
  withRequest: {
    method: 'POST',
    path: '/sites',
    headers: { ...BEARER, 'Content-Type': 'application/json' },
    body: { id: SITE_ID },
  },
  willRespondWith: {
    status: 409,
    headers: JSON_CONTENT,
    body: { detail: string(`Site ${SITE_ID} already exists`) },
  },
});

export const generateCredentials = (): V3Interaction => ({
  states: [{ description: STATE.signedInSiteAdmin }],
  uponReceiving: 'a request for new site client credentials by an administrator of the site',
  withRequest: {
    method: 'POST',
    path: `/sites/${SITE_ID}:generateCredentials`,
    headers: BEARER,
  },
  willRespondWith: {
    status: 200,
    headers: JSON_CONTENT,
    body: {
      client_id: regex(/^[A-Za-z0-9_-]{8,}$/, 'sys0c78f0d7a9388909e'),
      client_secret: regex(/^[A-Za-z0-9_-]{20,}$/, 'WrnNc8dxCho5whTT7alkc6iYvnxwmPRrOrIkXWT2PgY'),
    },
  },
});

/** The model of a job operation's metadata, by the original's dotted name; site clients read it. */
const JOB_OPERATION_MODEL = 'nmdc_runtime.api.models.job.JobOperationMetadata';

/** An operation of the site's claim of the job, as the service answers it. */
const jobOperation = (operationId: ReturnType<typeof id> | string, done: boolean) => ({
  id: operationId,
  done,
  expire_time: regex(ISO_TIME, '2025-07-02T14:03:11.204Z'),
  metadata: {
    job: { id: JOB_ID, workflow: like(JOB.workflow), config: like(JOB.config) },
    site_id: SITE_ID,
    model: JOB_OPERATION_MODEL,
  },
});

const JOB_PATH = `/jobs/${encodeURIComponent(JOB_ID)}:claim`;
const OPERATION_PATH = `/operations/${encodeURIComponent(OPERATION_ID)}`;

export const claimJob = (): V3Interaction => ({
  states: [{ description: STATE.jobClaimable }],
  uponReceiving: 'a claim of a job by a site client',
  withRequest: { method: 'POST', path: JOB_PATH, headers: BEARER },
  willRespondWith: {
    status: 200,
    headers: JSON_CONTENT,
    // The service mints the operation's id; the client reads it to report on the claim.
    body: jobOperation(id('nmdc:sys0t5c8h2vn6r3d'), false),
  },
});

export const claimJobAgain = (): V3Interaction => ({
  states: [{ description: STATE.jobClaimed }],
  uponReceiving: 'a second claim of a job by the site that holds a claim of it',
  withRequest: { method: 'POST', path: JOB_PATH, headers: BEARER },
  willRespondWith: {
    status: 409,
    headers: JSON_CONTENT,
    body: {
      detail: string(`client site already claimed job ${JOB_ID} -- see operation ${OPERATION_ID}`),
      id: OPERATION_ID,
    },
  },
});

export const reportOperationProgress = (): V3Interaction => ({
  states: [{ description: STATE.jobClaimed }],
  uponReceiving: "the claiming site's progress report on its operation",
  withRequest: {
    method: 'PATCH',
    path: OPERATION_PATH,
    headers: { ...BEARER, 'Content-Type': 'application/json' },
    body: OPERATION_PROGRESS,
  },
  willRespondWith: {
    status: 200,
    headers: JSON_CONTENT,
    body: (() => {
      const op = jobOperation(OPERATION_ID, false);
      // The reported metadata replaces the stored one; job, site_id and model stay.
      return { ...op, metadata: { ...OPERATION_PROGRESS.metadata, ...op.metadata } };
    })(),
  },
});

export const completeOperation = (): V3Interaction => ({
  states: [{ description: STATE.jobClaimed }],
  uponReceiving: "the claiming site's report that its operation is done, with its result",
  withRequest: {
    method: 'PATCH',
    path: OPERATION_PATH,
    headers: { ...BEARER, 'Content-Type': 'application/json' },
    body: OPERATION_RESULT,
  },
  willRespondWith: {
    status: 200,
    headers: JSON_CONTENT,
    body: { ...jobOperation(OPERATION_ID, true), result: OPERATION_RESULT.result },
  },
});

export const updateOtherSitesOperation = (): V3Interaction => ({
  states: [{ description: STATE.jobClaimedOtherSiteSignedIn }],
  uponReceiving: "a report on an operation of another site's claim",
  withRequest: {
    method: 'PATCH',
    path: OPERATION_PATH,
    headers: { ...BEARER, 'Content-Type': 'application/json' },
    body: OPERATION_RESULT,
  },
  willRespondWith: {
    status: 403,
    headers: JSON_CONTENT,
    body: { detail: string(`client authorized for different site_id than ${SITE_ID}`) },
  },
});
