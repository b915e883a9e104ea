import { beforeAll, describe, expect, it } from 'vitest';
import { createConfig, lintFromString, type NormalizedProblem } from '@redocly/openapi-core';
import {
  deriveLegacyDocument,
  loadApiDocuments,
  loadCurrentDocument,
  type OpenApiDocument,
} from '../../src/http/openapi-documents.ts';

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

function operations(doc: OpenApiDocument): Array<{ path: string; method: string; op: Record<string, any> }> {
  return Object.entries<Record<string, any>>(doc.paths).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((method) => ({ path, method, op: item[method] })),
  );
}

async function lint(doc: OpenApiDocument): Promise<NormalizedProblem[]> {
  const config = await createConfig({
    extends: ['recommended'],
    rules: {
      // Operations that are public on purpose (finds, schema endpoints, /token, /version) declare
      // `security: []` or none; the rule asks for a global security requirement, which would
      // wrongly mark them private.
      'security-defined': 'off',
      // The project has not chosen a license, so the document must not claim one.
      'info-license': 'off',
      'info-license-url': 'off',
      // Operations that take no input (versions, health, logout) cannot answer a 4xx: unknown
      // parameters are ignored. 'declares a 4xx response wherever the caller can send input'
      // checks the rest.
      'operation-4xx-response': 'off',
      // The original has both `/workflows/{workflow_id}/object_types` (GET) and
      // `/workflows/workflow_executions/{workflow_execution_id}` (DELETE); their methods differ.
      'no-ambiguous-paths': 'off',
    },
  });
  return lintFromString({
    source: JSON.stringify(doc),
    absoluteRef: `/openapi-${doc.info.version}.json`,
    config,
  });
}

const describeProblems = (problems: NormalizedProblem[]) =>
  problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location?.[0]?.pointer ?? '?'}`);

let current: OpenApiDocument;
let legacy: OpenApiDocument;

beforeAll(() => {
  ({ current, legacy } = loadApiDocuments());
});

describe('the 2.13.0 document', () => {
  it('has no lint errors or warnings under the recommended ruleset', async () => {
    expect(describeProblems(await lint(current))).toEqual([]);
  });

  it('declares a 4xx response wherever the caller can send input or must log in', () => {
    const missing = operations(current)
      .filter(({ op }) => {
        const mustLogIn =
          op.security?.length && !op.security.some((r: object) => Object.keys(r).length === 0);
        const takesInput = (op.parameters ?? []).length > 0 || op.requestBody !== undefined || mustLogIn;
        return takesInput && !Object.keys(op.responses).some((code) => /^4\d\d$/.test(code));
      })
      .map(({ path, method }) => `${method} ${path}`);
    expect(missing).toEqual([]);
  });

  it('is OpenAPI 3.0.3, version 2.13.0, served from the relative root', () => {
    expect(current.openapi).toBe('3.0.3');
    expect(current.info.version).toBe('2.13.0');
    expect(current.servers).toEqual([{ url: '/', description: 'This service' }]);
  });

  it('declares the five groups, each described, and every operation uses one of them', () => {
    const names = current.tags.map((t: { name: string }) => t.name);
    expect(names).toEqual([
      'Metadata access',
      'Workflow management',
      'Persistent identifiers',
      'User accounts',
      'System administration',
    ]);
    for (const tag of current.tags) expect(tag.description.length).toBeGreaterThan(10);
    for (const { op } of operations(current)) {
      expect(op.tags).toHaveLength(1);
      expect(names).toContain(op.tags[0]);
    }
  });

  it('groups the operations as the original 2.13.0 does', () => {
    const byTag: Record<string, string[]> = {};
    for (const { path, method, op } of operations(current))
      (byTag[op.tags[0]] ??= []).push(`${method} ${path}`);
    expect(byTag['Metadata access']).toEqual(
      expect.arrayContaining([
        'get /studies',
        'get /planned_processes',
        'get /planned_processes/{planned_process_id}',
        'get /nmdcschema/ids/{doc_id}',
        'get /nmdcschema/{collection_name}',
        'post /queries:run',
      ]),
    );
    expect(byTag['Workflow management']?.sort()).toEqual([
      'delete /admin/site_clients/{site_client_id}',
      'delete /workflows/workflow_executions/{workflow_execution_id}',
      'get /capabilities',
      'get /capabilities/{capability_id}',
      'get /ga4gh/drs/v1/objects/{object_id}',
      'get /jobs',
      'get /jobs/{job_id}',
      'get /object_types',
      'get /object_types/{object_type_id}',
      'get /object_types/{object_type_id}/workflows',
      'get /objects',
      'get /objects/{object_id}',
      'get /objects/{object_id}/access/{access_id}',
      'get /objects/{object_id}/content',
      'get /objects/{object_id}/types',
      'get /operations',
      'get /operations/{op_id}',
      'get /runs/{run_id}',
      'get /runs/{run_id}/events',
      'get /sites',
      'get /sites/{site_id}',
      'get /sites/{site_id}/capabilities',
      'get /triggers',
      'get /triggers/{trigger_id}',
      'get /wf_file_staging/globus_tasks',
      'get /wf_file_staging/globus_tasks/{task_id}',
      'get /wf_file_staging/jgi_samples',
      'get /wf_file_staging/jgi_sequencing_projects',
      'get /wf_file_staging/jgi_sequencing_projects/{sequencing_project_name}',
      'get /workflows',
      'get /workflows/{workflow_id}',
      'get /workflows/{workflow_id}/capabilities',
      'get /workflows/{workflow_id}/object_types',
      'patch /admin/site_clients/{site_client_id}',
      'patch /objects/{object_id}',
      'patch /operations/{op_id}',
      'patch /sites/{site_id}',
      'patch /wf_file_staging/globus_tasks/{task_id}',
      'patch /wf_file_staging/jgi_samples/{jdp_file_id}',
      'post /jobs',
      'post /jobs/{job_id}:claim',
      'post /jobs/{job_id}:release',
      'post /objects',
      'post /runs',
      'post /runs/{run_id}/events',
      'post /sites',
      'post /sites/{site_id}:generateCredentials',
      'post /wf_file_staging/globus_tasks',
      'post /wf_file_staging/jgi_samples',
      'post /wf_file_staging/jgi_sequencing_projects',
      'post /workflows/workflow_executions',
      'put /objects/{object_id}/types',
      'put /sites/{site_id}/capabilities',
    ]);
    expect(byTag['User accounts']?.sort()).toEqual([
      'delete /admin/allowances',
      'get /admin/allowances',
      'get /admin/allowances/actions',
      'get /users/me',
      'post /admin/allowances',
      'post /logout',
      'post /token',
      'post /users',
      'post /users/me:changePassword',
      'put /users',
    ]);
    expect(byTag['System administration']?.sort()).toEqual(['get /health', 'get /metrics', 'get /version']);
    expect(byTag['Persistent identifiers']?.sort()).toEqual([
      'get /pids/resolve/{id_name}',
      'post /pids/bind',
      'post /pids/delete',
      'post /pids/mint',
    ]);
    expect(byTag['Metadata access']).toEqual(
      expect.arrayContaining([
        'post /metadata/json:validate',
        'post /metadata/json:submit',
        'post /metadata/changesheets:validate',
        'post /metadata/changesheets:submit',
      ]),
    );
    const counted = Object.values(byTag).flat().length;
    expect(counted).toBe(operations(current).length);
  });

  it('covers every operation of the wire reference with a readable operation id', () => {
    const ids = Object.fromEntries(
      operations(current).map(({ path, method, op }) => [`${method} ${path}`, op.operationId]),
    );
    expect(ids).toMatchObject({
      'get /studies': 'findStudies',
      'get /studies/{study_id}': 'getStudy',
      'get /biosamples': 'findBiosamples',
      'get /biosamples/{sample_id}': 'getBiosample',
      'get /data_objects': 'findDataObjects',
      'get /data_objects/{data_object_id}': 'getDataObject',
      'get /planned_processes': 'findPlannedProcesses',
      'get /planned_processes/{planned_process_id}': 'getPlannedProcess',
      'get /nmdcschema/version': 'getSchemaVersion',
      'get /nmdcschema/typecodes': 'listTypecodes',
      'get /nmdcschema/collection_names': 'listCollectionNames',
      'get /nmdcschema/collection_stats': 'getCollectionStats',
      'get /nmdcschema/{collection_name}': 'listCollectionRecords',
      'get /nmdcschema/ids/{doc_id}': 'getRecordById',
      'get /nmdcschema/ids/{doc_id}/collection-name': 'getCollectionNameById',
      'get /nmdcschema/{collection_name}/{doc_id}': 'getCollectionRecord',
      'post /queries:run': 'runQuery',
      'post /token': 'login',
      'get /users/me': 'getCurrentUser',
      'post /users': 'createUser',
      'get /sites': 'listSites',
      'post /sites': 'createSite',
      'get /sites/{site_id}': 'getSite',
      'post /sites/{site_id}:generateCredentials': 'generateSiteCredentials',
      'get /version': 'getVersion',
      'get /health': 'getHealth',
    });
  });

  it('offers the three login methods by their exact names', () => {
    const schemes = current.components.securitySchemes;
    expect(Object.keys(schemes)).toEqual(['userLogin', 'siteClientLogin', 'orcidLogin']);
    expect(schemes.userLogin).toMatchObject({
      type: 'oauth2',
      description: 'User login',
      flows: { password: { tokenUrl: '/token' } },
    });
    expect(schemes.siteClientLogin).toMatchObject({
      type: 'oauth2',
      description: 'Site client login',
      flows: { clientCredentials: { tokenUrl: '/token' } },
    });
    expect(schemes.orcidLogin).toEqual({
      type: 'openIdConnect',
      description: 'User login with ORCID',
      openIdConnectUrl: '/.well-known/openid-configuration',
    });
  });

  it('marks exactly the account, query and workflow writing operations private, with the logins that may call them', () => {
    const privateOps = operations(current)
      .filter(
        ({ op }) => op.security?.length && !op.security.some((r: object) => Object.keys(r).length === 0),
      )
      .map(({ path, method }) => `${method} ${path}`)
      .sort();
    expect(privateOps).toEqual([
      'delete /admin/allowances',
      'delete /admin/site_clients/{site_client_id}',
      'delete /workflows/workflow_executions/{workflow_execution_id}',
      'get /admin/allowances',
      'get /admin/allowances/actions',
      'get /pids/resolve/{id_name}',
      'get /runs/{run_id}',
      'get /runs/{run_id}/events',
      'get /sites',
      'get /users/me',
      'get /wf_file_staging/globus_tasks',
      'get /wf_file_staging/globus_tasks/{task_id}',
      'get /wf_file_staging/jgi_samples',
      'get /wf_file_staging/jgi_sequencing_projects',
      'get /wf_file_staging/jgi_sequencing_projects/{sequencing_project_name}',
      'patch /admin/site_clients/{site_client_id}',
      'patch /objects/{object_id}',
      'patch /operations/{op_id}',
      'patch /sites/{site_id}',
      'patch /wf_file_staging/globus_tasks/{task_id}',
      'patch /wf_file_staging/jgi_samples/{jdp_file_id}',
      'post /admin/allowances',
      'post /jobs',
      'post /jobs/{job_id}:claim',
      'post /jobs/{job_id}:release',
      'post /metadata/changesheets:submit',
      'post /metadata/json:submit',
      'post /objects',
      'post /pids/bind',
      'post /pids/delete',
      'post /pids/mint',
      'post /queries:run',
      'post /runs',
      'post /runs/{run_id}/events',
      'post /sites',
      'post /sites/{site_id}:generateCredentials',
      'post /users',
      'post /users/me:changePassword',
      'post /wf_file_staging/globus_tasks',
      'post /wf_file_staging/jgi_samples',
      'post /wf_file_staging/jgi_sequencing_projects',
      'post /workflows/workflow_executions',
      'put /objects/{object_id}/types',
      'put /sites/{site_id}/capabilities',
      'put /users',
    ]);
    // Operations only a site client may call say so: a user's token is refused with 403.
    const siteClientOnly = operations(current)
      .filter(({ op }) => JSON.stringify(op.security) === JSON.stringify([{ siteClientLogin: [] }]))
      .map(({ path, method }) => `${method} ${path}`)
      .sort();
    expect(siteClientOnly).toEqual([
      'patch /objects/{object_id}',
      'patch /operations/{op_id}',
      'post /jobs',
      'post /jobs/{job_id}:claim',
      'post /jobs/{job_id}:release',
      'post /objects',
      'post /workflows/workflow_executions',
    ]);
    expect(current.paths['/users/me'].get.security).toEqual([
      { userLogin: [] },
      { siteClientLogin: [] },
      { orcidLogin: [] },
    ]);
  });

  it('bounds per_page to 1..2000 with default 25 and page to >= 1, and declares the finds parameters in the original order', () => {
    const params = current.components.parameters;
    expect(params.PerPage.schema).toEqual({ type: 'integer', minimum: 1, maximum: 2000, default: 25 });
    expect(params.Page.schema).toEqual({ type: 'integer', minimum: 1 });
    for (const path of ['/studies', '/biosamples', '/data_objects', '/planned_processes']) {
      const names = current.paths[path].get.parameters.map((p: { $ref: string }) => p.$ref.split('/').pop());
      expect(names).toEqual([
        'CompactFilter',
        'FindSearch',
        'CompactSort',
        'Page',
        'PerPage',
        'Cursor',
        'FindGroupBy',
        'Fields',
      ]);
    }
  });

  it('explains the search semantics in the filter descriptions', () => {
    expect(current.components.parameters.CompactFilter.description).toMatch(
      /attr\.search:text.*case-insensitively/s,
    );
    const jsonFilter = current.paths['/nmdcschema/{collection_name}'].get.parameters.find(
      (p: { name?: string }) => p.name === 'filter',
    );
    expect(jsonFilter.description).toMatch(/\$regex.*`i`, `m`, `s`, `x`.*exactly the same/s);
  });

  it('requires a command key in a /queries:run body, one alternative per command', () => {
    const alternatives = current.components.schemas.QueryCommand.anyOf.map(
      (s: { $ref: string }) => current.components.schemas[s.$ref.split('/').pop()!].required,
    );
    expect(alternatives).toEqual([
      ['find'],
      ['getMore'],
      ['count'],
      ['aggregate'],
      ['update'],
      ['delete'],
      ['explain'],
    ]);
  });

  it('describes records as open objects with a string id', () => {
    expect(current.components.schemas.Record).toEqual({
      type: 'object',
      description: expect.any(String),
      required: ['id'],
      properties: { id: { type: 'string', example: 'nmdc:bsm-11-02g8ftqk' } },
      additionalProperties: true,
    });
  });

  it('gives every operation an error response shaped {detail}', () => {
    for (const { op } of operations(current))
      expect(op.responses.default).toEqual({ $ref: '#/components/responses/Error' });
  });

  it('returns a fresh copy on every load, so one caller cannot change another', () => {
    const a = loadCurrentDocument();
    a.info.version = 'changed';
    a.paths['/studies'].get.parameters.pop();
    const b = loadCurrentDocument();
    expect(b.info.version).toBe('2.13.0');
    expect(b.paths['/studies'].get.parameters).toHaveLength(8);
    expect(b.paths['/biosamples'].get.parameters).toHaveLength(8);
  });
});

describe('the 1.2.0 document, derived from 2.13.0', () => {
  it('has no lint errors or warnings under the recommended ruleset', async () => {
    expect(describeProblems(await lint(legacy))).toEqual([]);
  });

  it('is version 1.2.0 with the groups of 1.2.0', () => {
    expect(legacy.info.version).toBe('1.2.0');
    const groups = [
      'find',
      'metadata',
      'queries',
      'users',
      'sites',
      'workflows',
      'capabilities',
      'object types',
      'triggers',
      'jobs',
      'objects',
      'operations',
      'runs',
      'minter',
    ];
    expect(legacy.tags.map((t: { name: string }) => t.name)).toEqual(groups);
    const used = new Set(operations(legacy).map(({ op }) => op.tags[0]));
    expect([...used].sort()).toEqual([...groups].sort());
  });

  it('groups each operation as 1.2.0 did', () => {
    const tagOf = (path: string, method = 'get') => legacy.paths[path][method].tags;
    expect(tagOf('/studies')).toEqual(['find']);
    expect(tagOf('/activities/{activity_id}')).toEqual(['find']);
    expect(tagOf('/nmdcschema/{collection_name}')).toEqual(['metadata']);
    expect(tagOf('/nmdcschema/ids/{doc_id}')).toEqual(['metadata']);
    expect(tagOf('/queries:run', 'post')).toEqual(['queries']);
    expect(tagOf('/token', 'post')).toEqual(['users']);
    expect(tagOf('/users/me')).toEqual(['users']);
    expect(tagOf('/sites/{site_id}:generateCredentials', 'post')).toEqual(['sites']);
    expect(tagOf('/metadata/json:submit', 'post')).toEqual(['metadata']);
    expect(tagOf('/runs/{run_id}')).toEqual(['runs']);
    expect(tagOf('/pids/mint', 'post')).toEqual(['minter']);
    expect(tagOf('/jobs/{job_id}:claim', 'post')).toEqual(['jobs']);
    expect(tagOf('/operations/{op_id}', 'patch')).toEqual(['operations']);
    expect(tagOf('/ga4gh/drs/v1/objects/{object_id}')).toEqual(['objects']);
    expect(tagOf('/object_types/{object_type_id}/workflows')).toEqual(['object types']);
    expect(tagOf('/runs/{run_id}/events', 'post')).toEqual(['runs']);
  });

  it('serves planned processes at /activities with an activity_id parameter', () => {
    expect(legacy.paths).not.toHaveProperty('/planned_processes');
    expect(legacy.paths).not.toHaveProperty('/planned_processes/{planned_process_id}');
    expect(legacy.paths['/activities'].get.operationId).toBe('findActivities');
    const byId = legacy.paths['/activities/{activity_id}'].get;
    expect(byId.operationId).toBe('getActivity');
    expect(byId.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`)).toEqual([
      'path:activity_id',
    ]);
    expect(byId.responses).toEqual(current.paths['/planned_processes/{planned_process_id}'].get.responses);
  });

  it('lacks the endpoints added later', () => {
    expect(legacy.paths).not.toHaveProperty('/nmdcschema/collection_names');
    expect(legacy.paths).not.toHaveProperty('/nmdcschema/ids/{doc_id}/collection-name');
    expect(legacy.paths).toHaveProperty(['/nmdcschema/ids/{doc_id}']);
    // Workflow management: what 2.13.0 added, or what 1.2.0 only had as hidden stubs.
    for (const path of [
      '/jobs/{job_id}:release',
      '/workflows/workflow_executions',
      '/workflows/workflow_executions/{workflow_execution_id}',
      '/objects/{object_id}/content',
      '/sites/{site_id}/capabilities',
      '/wf_file_staging/globus_tasks',
      '/wf_file_staging/jgi_samples/{jdp_file_id}',
    ])
      expect(legacy.paths).not.toHaveProperty([path]);
    expect(Object.keys(legacy.paths['/jobs'])).toEqual(['get']);
    expect(Object.keys(legacy.paths['/sites/{site_id}'])).toEqual(['get']);
    expect(Object.keys(legacy.paths['/jobs/{job_id}:claim'])).toEqual(['post']);
  });

  it('offers the ORCID login as a link at the top instead of a security scheme', () => {
    expect(legacy.info.description).toMatch(/^\[Sign in with ORCID\]\(\/login\/external\)/);
    expect(Object.keys(legacy.components.securitySchemes)).toEqual(['userLogin', 'siteClientLogin']);
    for (const { op } of operations(legacy)) {
      for (const requirement of op.security ?? []) expect(requirement).not.toHaveProperty('orcidLogin');
    }
    expect(legacy.paths['/queries:run'].post.security).toEqual([{ userLogin: [] }, { siteClientLogin: [] }]);
  });

  it('keeps every other path and shape of 2.13.0', () => {
    const renamed = (p: string) =>
      p
        .replace('/planned_processes/{planned_process_id}', '/activities/{activity_id}')
        .replace('/planned_processes', '/activities');
    const expected = Object.keys(current.paths)
      .filter(
        (p) =>
          ![
            '/nmdcschema/collection_names',
            '/nmdcschema/ids/{doc_id}/collection-name',
            '/nmdcschema/linked_instances',
            '/workflow_executions/{workflow_execution_id}/related_resources',
            '/admin/allowances',
            '/admin/allowances/actions',
            '/jobs/{job_id}:release',
            '/workflows/workflow_executions',
            '/workflows/workflow_executions/{workflow_execution_id}',
            '/objects/{object_id}/content',
            '/sites/{site_id}/capabilities',
            '/admin/site_clients/{site_client_id}',
            '/users/me:changePassword',
          ].includes(p) && !p.startsWith('/wf_file_staging/'),
      )
      .map(renamed);
    expect(Object.keys(legacy.paths)).toEqual(expected);
    const {
      CollectionNameOfId: onlyUsedLater,
      LinkedInstances: linkedLater,
      LinkedInstance: linkedItemLater,
      RelatedResources: relatedLater,
      AllowanceAction: allowanceActionLater,
      Allowance: allowanceLater,
      AllowanceList: allowanceListLater,
      CapabilityIds: capabilityIdsLater,
      SitePatch: sitePatchLater,
      WorkflowExecutionsAccepted: workflowExecutionsLater,
      WorkflowExecutionDeletion: workflowExecutionDeletionLater,
      JobIn: jobInLater,
      GlobusTask: globusTaskLater,
      GlobusTaskPatch: globusTaskPatchLater,
      JgiSample: jgiSampleLater,
      JgiSamplePatch: jgiSamplePatchLater,
      JgiSequencingProject: jgiProjectLater,
      StagingRecordList: stagingListLater,
      UserUpdate: userUpdateLater,
      SiteClientPatch: siteClientPatchLater,
      PasswordChange: passwordChangeLater,
      ...sharedSchemas
    } = current.components.schemas;
    for (const schema of [
      onlyUsedLater,
      linkedLater,
      linkedItemLater,
      relatedLater,
      allowanceActionLater,
      allowanceLater,
      allowanceListLater,
      capabilityIdsLater,
      sitePatchLater,
      workflowExecutionsLater,
      workflowExecutionDeletionLater,
      jobInLater,
      globusTaskLater,
      globusTaskPatchLater,
      jgiSampleLater,
      jgiSamplePatchLater,
      jgiProjectLater,
      stagingListLater,
      userUpdateLater,
      siteClientPatchLater,
      passwordChangeLater,
    ])
      expect(schema).toBeDefined();
    expect(legacy.components.schemas).toEqual(sharedSchemas);
    expect(legacy.paths['/queries:run'].post.requestBody).toEqual(
      current.paths['/queries:run'].post.requestBody,
    );
  });

  it('leaves the document it derives from unchanged', () => {
    const source = loadCurrentDocument();
    const before = JSON.stringify(source);
    deriveLegacyDocument(source);
    expect(JSON.stringify(source)).toBe(before);
  });
});
