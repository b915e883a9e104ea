/**
 * The two API documents: 2.13.0 from `openapi.yaml` (the source of truth) and 1.2.0 derived from
 * it in code, so the older description cannot silently drift from what the server does.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';

export type OpenApiDocument = Record<string, any> & {
  openapi: string;
  info: { version: string; title: string; description?: string };
  paths: Record<string, any>;
};

/**
 * What a local `$ref` of `document` (`#/components/parameters/DocId`) points at, followed through
 * references to references; any other node as it is.
 */
export function resolveRef(document: OpenApiDocument, node: unknown): any {
  let at: any = node;
  // A few hops at most in the contract; a loop of references ends here rather than spinning.
  for (let hops = 0; hops < 32; hops++) {
    const ref: unknown = at?.$ref;
    if (typeof ref !== 'string' || !ref.startsWith('#/')) return at;
    at = document;
    for (const part of ref.slice(2).split('/')) at = at?.[part];
  }
  return undefined;
}

export const CURRENT_API_VERSION = '2.13.0';
export const LEGACY_API_VERSION = '1.2.0';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

let parsed: OpenApiDocument | undefined;

/** The 2.13.0 document. A fresh copy each call: the request validator annotates what it is given. */
export function loadCurrentDocument(): OpenApiDocument {
  // The contract shares parameter and response lists between the finds through YAML aliases; the
  // JSON round trip gives each operation its own copy, so editing one never edits another.
  parsed ??= JSON.parse(
    JSON.stringify(
      YAML.parse(fs.readFileSync(path.join(root, 'openapi.yaml'), 'utf8'), { maxAliasCount: -1 }),
    ),
  ) as OpenApiDocument;
  return structuredClone(parsed);
}

export function loadApiDocuments(): { current: OpenApiDocument; legacy: OpenApiDocument } {
  const current = loadCurrentDocument();
  return { current, legacy: deriveLegacyDocument(current) };
}

/**
 * What the request and response validator checks against: the 2.13.0 document plus the paths
 * only 1.2.0 has (`/activities`), so 1.2.0 clients get the same validation as everyone else.
 */
export function loadValidationDocument(): OpenApiDocument {
  const { current, legacy } = loadApiDocuments();
  for (const [pathName, item] of Object.entries(legacy.paths)) {
    if (!(pathName in current.paths)) current.paths[pathName] = item;
  }
  allowReservedCharacters(current);
  return current;
}

/** The external sign-in's security scheme in the 2.13.0 document. */
export const EXTERNAL_LOGIN_SCHEME = 'orcidLogin';
const LEGACY_EXTERNAL_LINK =
  '[Sign in with ORCID](/login/external) to get an access token for the private operations.\n\n';

/**
 * The documents as this service serves them: the external sign-in (ORCID in production) is
 * offered, under its configured name, only when an external issuer is configured; otherwise its
 * security scheme and the 1.2.0 link are left out, so no login is offered that cannot work.
 */
export function servedDocuments(external: { label: string } | undefined): {
  current: OpenApiDocument;
  legacy: OpenApiDocument;
} {
  const { current, legacy } = loadApiDocuments();
  if (external) {
    const scheme = current.components?.securitySchemes?.[EXTERNAL_LOGIN_SCHEME];
    if (scheme) scheme.description = `User login with ${external.label}`;
    legacy.info.description = (legacy.info.description ?? '').replace(
      LEGACY_EXTERNAL_LINK,
      `[Sign in with ${external.label}](/login/external) to get an access token for the private operations.\n\n`,
    );
    return { current, legacy };
  }
  delete current.components?.securitySchemes?.[EXTERNAL_LOGIN_SCHEME];
  for (const item of Object.values<Record<string, any>>(current.paths)) {
    for (const method of HTTP_METHODS) {
      const operation = item[method];
      if (Array.isArray(operation?.security))
        operation.security = operation.security.filter(
          (requirement: Record<string, unknown>) => !(EXTERNAL_LOGIN_SCHEME in requirement),
        );
    }
  }
  legacy.info.description = (legacy.info.description ?? '').replace(LEGACY_EXTERNAL_LINK, '');
  return { current, legacy };
}

/**
 * The original (FastAPI) reads a query value however it comes: clients send `/`, `:`, `@` and the
 * like unencoded (`?action=/metadata/changesheets:submit`). The validator refuses reserved
 * characters in a query value unless its parameter says `allowReserved`, so every one says it.
 */
function allowReservedCharacters(document: OpenApiDocument): void {
  const mark = (parameters: unknown) => {
    if (!Array.isArray(parameters)) return;
    for (const parameter of parameters)
      if (parameter && typeof parameter === 'object' && parameter.in === 'query')
        parameter.allowReserved = true;
  };
  mark(Object.values(document.components?.parameters ?? {}));
  for (const item of Object.values(document.paths)) {
    mark(item?.parameters);
    for (const method of HTTP_METHODS) mark(item?.[method]?.parameters);
  }
}

/** The 1.2.0 groups, in the order the docs page lists them. */
export const LEGACY_TAGS = [
  {
    name: 'find',
    description:
      'Find studies, biosamples, data objects and activities with the compact syntax. These page with ' +
      '`per_page` (up to 2000) and `page` (the first 10,000 records) or `cursor` (`*`, then ' +
      '`meta.next_cursor`); `max_page_size` and `page_token` belong to the metadata listings and are ignored here.',
  },
  {
    name: 'metadata',
    description:
      'Schema facts, collections queried with JSON filters, records by id, whole collections exported, and ' +
      'service versions. The listings page with `max_page_size` (up to 100000) and `page_token` (the ' +
      "previous answer's `next_page_token`); `per_page`, `page` and `cursor` belong to the finds and are ignored here.",
  },
  {
    name: 'queries',
    description: 'Database commands (`find`, `getMore`, `count`, ...) with `POST /queries:run`.',
  },
  { name: 'users', description: 'Logins (`POST /token`) and user accounts.' },
  { name: 'sites', description: 'Sites, their capabilities and their client credentials.' },
  {
    name: 'workflows',
    description:
      'Templates for jobs: the capabilities a site needs to run one, and the object types that trigger it.',
  },
  { name: 'capabilities', description: 'What a site must be able to do to claim the jobs of a workflow.' },
  { name: 'object types', description: 'Annotations of objects that trigger workflows.' },
  { name: 'triggers', description: 'Which workflow a job is created for when an object gains a type.' },
  {
    name: 'jobs',
    description:
      'A workflow paired with its configuration; a site claims a job and runs it through an operation.',
  },
  { name: 'objects', description: 'Data Repository Service (DRS) objects: workflow inputs and outputs.' },
  {
    name: 'operations',
    description: 'The progress and result of a claimed job, as a long-running operation.',
  },
  { name: 'runs', description: 'Runs of metadata submissions: status, counts, timings and errors.' },
  { name: 'minter', description: 'Mint, resolve, bind and delete persistent identifiers (site clients).' },
] as const;

export type LegacyTag = (typeof LEGACY_TAGS)[number]['name'];

/** Which 1.2.0 group an operation of the 2.13.0 document belongs to, by its path. */
export function legacyTagOf(pathName: string): LegacyTag {
  if (pathName.startsWith('/sites')) return 'sites';
  if (pathName.startsWith('/workflows')) return 'workflows';
  if (pathName.startsWith('/capabilities')) return 'capabilities';
  if (pathName.startsWith('/object_types')) return 'object types';
  if (pathName.startsWith('/triggers')) return 'triggers';
  if (pathName.startsWith('/jobs')) return 'jobs';
  if (pathName.startsWith('/objects') || pathName.startsWith('/ga4gh/')) return 'objects';
  if (pathName.startsWith('/operations')) return 'operations';
  if (pathName.startsWith('/runs')) return 'runs';
  if (pathName.startsWith('/pids')) return 'minter';
  if (pathName.startsWith('/metadata/')) return 'metadata';
  if (pathName === '/token' || pathName === '/logout' || pathName.startsWith('/users')) return 'users';
  if (pathName.startsWith('/queries')) return 'queries';
  if (
    pathName.startsWith('/nmdcschema') ||
    pathName.startsWith('/export/') ||
    pathName === '/version' ||
    pathName === '/health'
  )
    return 'metadata';
  return 'find';
}

/** Paths added after 1.2.0. */
const PATHS_ADDED_LATER = new Set([
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
]);

/** Operations added after 1.2.0 to paths 1.2.0 already had (`METHOD path`). */
const OPERATIONS_ADDED_LATER = new Set(['post /jobs', 'patch /sites/{site_id}', 'put /users']);

/** Path prefixes of groups added after 1.2.0. */
const PREFIXES_ADDED_LATER = ['/wf_file_staging/'];

/** 1.2.0 names of renamed paths, with the renamed path parameter and operation ids. */
const RENAMED_PATHS: Record<
  string,
  { path: string; param?: [string, string]; operationId: string; summary: string }
> = {
  '/planned_processes': { path: '/activities', operationId: 'findActivities', summary: 'Find activities' },
  '/planned_processes/{planned_process_id}': {
    path: '/activities/{activity_id}',
    param: ['planned_process_id', 'activity_id'],
    operationId: 'getActivity',
    summary: 'Get an activity by id',
  },
};

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const LATER_SCHEME = EXTERNAL_LOGIN_SCHEME;

/**
 * The 1.2.0 document: the same operations and shapes, grouped in the 1.2.0 tags, planned
 * processes at `/activities`, without the later endpoints, and with the external (ORCID) login
 * as a link near the top instead of a security scheme.
 */
export function deriveLegacyDocument(current: OpenApiDocument): OpenApiDocument {
  const doc = structuredClone(current);
  doc.info = {
    ...doc.info,
    version: LEGACY_API_VERSION,
    description: LEGACY_EXTERNAL_LINK + (doc.info.description ?? ''),
  };
  doc.tags = LEGACY_TAGS.map((t) => ({ ...t }));

  const paths: Record<string, any> = {};
  for (const [pathName, item] of Object.entries<Record<string, any>>(doc.paths)) {
    if (PATHS_ADDED_LATER.has(pathName) || PREFIXES_ADDED_LATER.some((p) => pathName.startsWith(p))) continue;
    const renamed = RENAMED_PATHS[pathName];
    for (const method of HTTP_METHODS) {
      if (OPERATIONS_ADDED_LATER.has(`${method} ${pathName}`)) delete item[method];
      const operation = item[method];
      if (!operation) continue;
      operation.tags = [legacyTagOf(pathName)];
      if (Array.isArray(operation.security)) {
        operation.security = operation.security.filter(
          (requirement: Record<string, unknown>) => !(LATER_SCHEME in requirement),
        );
      }
      if (renamed) {
        operation.operationId = renamed.operationId;
        operation.summary = renamed.summary;
        if (renamed.param) {
          const [from, to] = renamed.param;
          operation.parameters = (operation.parameters ?? []).map((p: Record<string, any>) =>
            p.name === from ? { ...p, name: to, description: 'Activity identifier.' } : p,
          );
        }
      }
    }
    paths[renamed?.path ?? pathName] = item;
  }
  doc.paths = paths;

  const schemes = doc.components?.securitySchemes;
  if (schemes) delete schemes[LATER_SCHEME];
  pruneUnusedSchemas(doc);
  return doc;
}

/** Drops component schemas that only the removed paths used, until none is left unreferenced. */
function pruneUnusedSchemas(doc: OpenApiDocument): void {
  const schemas: Record<string, unknown> | undefined = doc.components?.schemas;
  if (!schemas) return;
  for (;;) {
    const text = JSON.stringify(doc);
    const unused = Object.keys(schemas).filter((name) => !text.includes(`"#/components/schemas/${name}"`));
    if (unused.length === 0) return;
    for (const name of unused) delete schemas[name];
  }
}
