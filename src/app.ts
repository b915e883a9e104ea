/**
 * Builds the Express app from the services (src/services.ts): cross-cutting middleware, then each
 * capability's routes from one list. No listen: tests use it in-process.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import express from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import type { Services } from './services.ts';
import { errorHandler } from './http/error-handler.ts';
import { securityHeaders } from './http/security-headers.ts';
import { cacheValidatorRoutes, literalFirstSegment } from './http/validator-route-cache.ts';
import { corsMiddleware } from './http/cors.ts';
import { docsRouter } from './http/docs.ts';
import { methodNotAllowed } from './http/method-not-allowed.ts';
import { createMetrics } from './http/metrics.ts';
import { requestLog as requestLogger } from './http/request-log.ts';
import { waitForUnreadBodies } from './http/unread-bodies.ts';

/** For whoever listens: refusals of Node's HTTP parser answered with a JSON detail too. */
export { answerClientErrors } from './http/client-errors.ts';
/** For whoever listens: the fast path's request checks built ahead of the first requests. */
export { warmFastPath } from './http/fast-path.ts';

/**
 * The HTTP server answering with `app` (its requests and responses born as the app wants them).
 * Each request that is not a large body (bulk work, read in turns) tells bulk work to give way.
 */
export function createServer(app: express.Express): http.Server {
  const server = http.createServer(nodeClasses(app), app);
  server.on('request', (req: http.IncomingMessage) => {
    const length = Number(req.headers['content-length'] ?? 0);
    if (!(length >= IN_TURNS_FROM_BYTES)) requestCame();
  });
  return server;
}
import { loadValidationDocument } from './http/openapi-documents.ts';
import { withLinearPatterns } from './http/contract-patterns.ts';
import { queryReader, readRequestsAsOriginal } from './http/request-reading/index.ts';
import { installFastPath, nodeClasses, type FastRoute } from './http/fast-path.ts';
import { systemRouter } from './http/system-routes.ts';
import { browserFlowsRouter } from './auth/browser-routes.ts';
import { authRouter } from './auth/routes.ts';
import { accountsRouter } from './accounts/routes.ts';
import { allowancesRouter } from './accounts/allowance-routes.ts';
import { siteClientsRouter } from './accounts/site-client-routes.ts';
import { metadataRouter } from './metadata/routes.ts';
import { queriesRouter } from './metadata/query-routes.ts';
import { provenanceRouter } from './provenance/routes.ts';
import { validationRouter } from './validation/routes.ts';
import { submissionBodies, submissionRouter } from './submission/routes.ts';
import { CHANGESHEET_UPLOADS, changesheetsRouter } from './changesheets/routes.ts';
import { fileUploads } from './http/request-reading/file-uploads.ts';
import { pidsRouter } from './pids/routes.ts';
import { workflowCatalogRouter } from './workflows/catalog-routes.ts';
import { workflowExecutionsRouter } from './workflows/workflow-execution-routes.ts';
import { jobsRouter } from './workflows/job-routes.ts';
import { fileStagingRouter } from './workflows/file-staging-routes.ts';
import { runsRouter } from './runs/routes.ts';
import { drsRouter } from './objects/routes.ts';
import { IN_TURNS_FROM_BYTES, jsonBodies } from './http/request-reading/json-in-turns.ts';
import { requestCame } from './turns.ts';
import { warmLargeWrites } from './adapters.ts';
import { isCollectionName } from './schema/nmdc.ts';

/**
 * A capability's router behind a check of the request's first path segment: a request passes
 * through every capability's router in turn, and each tests all its routes' patterns, so a router
 * whose routes all start with literal segments is skipped unless the request starts with one of
 * them. A router with a middleware for all paths, or a route starting with a parameter, is always
 * entered. Express matches paths case-insensitively by default, as this check does.
 */
function enteredByFirstSegment(router: express.Router): express.RequestHandler {
  const firsts = new Set<string>();
  for (const layer of router.stack as Array<{ rawPath?: unknown; slash?: boolean }>) {
    const paths = [layer.rawPath].flat();
    for (const p of paths) {
      const first = typeof p === 'string' && !layer.slash ? literalFirstSegment(p) : undefined;
      if (first === undefined || first === '') return router;
      firsts.add(first.toLowerCase());
    }
  }
  return (req, res, next) => {
    const end = req.path.indexOf('/', 1);
    const first = req.path.slice(1, end < 0 ? undefined : end).toLowerCase();
    if (firsts.has(first)) router(req, res, next);
    else next();
  };
}

/**
 * The hot read-only GETs the fast path answers (src/http/fast-path.ts), on the routers that
 * define them. A listing or record of a collection is taken only for a collection's name, which
 * no route defined before it on its router takes (`/nmdcschema/version`, `/nmdcschema/ids/...`).
 */
function fastRoutes(system: express.Router, metadata: express.Router): FastRoute[] {
  const collection = (params: Record<string, string>) => isCollectionName(params.collection_name ?? '');
  const samples = { collection_name: 'biosample_set' };
  return [
    { router: system, path: '/version' },
    { router: metadata, path: '/nmdcschema/ids/:doc_id' },
    { router: metadata, path: '/nmdcschema/:collection_name/:doc_id', accepts: collection, samples },
    { router: metadata, path: '/nmdcschema/:collection_name', accepts: collection, samples },
    ...['/studies', '/biosamples', '/data_objects', '/planned_processes'].map((path) => ({
      router: metadata,
      path,
    })),
    { router: metadata, path: '/studies/:study_id' },
    { router: metadata, path: '/biosamples/:sample_id' },
    { router: metadata, path: '/data_objects/:data_object_id' },
    { router: metadata, path: '/planned_processes/:planned_process_id' },
  ];
}

/** A capability's routes: every one is built the same way, from the services. */
export type CapabilityRoutes = (services: Services) => express.Router;

/**
 * Every capability's routes, in the order they are mounted. Routes that read their own request
 * bodies (the OIDC provider and its login pages) are mounted before the shared body parsers and
 * the request validator; all others after them.
 */
export const CAPABILITY_ROUTES: ReadonlyArray<{ routes: CapabilityRoutes; readsOwnBody?: true }> = [
  { routes: browserFlowsRouter, readsOwnBody: true },
  { routes: systemRouter },
  { routes: provenanceRouter },
  { routes: metadataRouter },
  { routes: validationRouter },
  { routes: workflowCatalogRouter },
  { routes: workflowExecutionsRouter },
  { routes: authRouter },
  { routes: accountsRouter },
  { routes: allowancesRouter },
  { routes: siteClientsRouter },
  { routes: jobsRouter },
  { routes: pidsRouter },
  { routes: submissionRouter },
  { routes: fileStagingRouter },
  { routes: runsRouter },
  { routes: drsRouter },
  { routes: changesheetsRouter },
  { routes: queriesRouter },
];

export function buildApp(services: Services): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  // Whose X-Forwarded-For names the client (login limits count by the client's address).
  app.set('trust proxy', services.config.trustProxy);
  // An answer on a closing connection waits for the rest of its request's body (unread-bodies.ts).
  waitForUnreadBodies(app.response);
  // Counted and timed from the first byte to the last, whatever answers.
  const metrics = createMetrics(services);
  app.use(metrics.observe);
  const headers = securityHeaders({
    // The docs page's ORCID login runs in a popup that passes through the external issuer and
    // must still reach its opener when it comes back (the default, same-origin, cuts it off).
    crossOriginOpenerPolicy: { policy: 'same-origin-allow-popups' },
    // Swagger UI needs inline styles; scripts are served from our own origin.
    contentSecurityPolicy: {
      directives: {
        'script-src': ["'self'", "'unsafe-inline'"],
        'style-src': ["'self'", "'unsafe-inline'"],
        'img-src': ["'self'", 'data:'],
        'form-action': null,
        'upgrade-insecure-requests': null,
      },
    },
  });
  app.use(headers);
  // Every step of that popup (redirects included) must leave the popup in its opener's group.
  app.use(['/oidc', '/login/external', '/docs/oauth2-redirect.html'], (_req, res, next) => {
    res.setHeader('Cross-Origin-Opener-Policy', 'unsafe-none');
    next();
  });
  const requestLog = requestLogger(services.logger, {
    genReqId: (req, res) => {
      const incoming = req.headers['x-request-id'];
      const id = typeof incoming === 'string' && /^[\w.-]{1,64}$/.test(incoming) ? incoming : randomUUID();
      res.setHeader('X-Request-Id', id);
      return id;
    },
    // Prometheus scrapes every few seconds: its requests are counted, not logged.
    ignore: (req) => req.url === '/metrics',
  });
  app.use(requestLog);

  app.use(corsMiddleware(services.config.corsOrigins));

  const routers = new Map(CAPABILITY_ROUTES.map(({ routes }) => [routes, routes(services)]));
  for (const { routes } of CAPABILITY_ROUTES.filter((entry) => entry.readsOwnBody))
    app.use(routers.get(routes)!);
  app.use(docsRouter(services.config));
  app.use(metrics.router);

  // A large body is likely a large write: the store's writing thread loads while it is read.
  const warmWrites = () =>
    void warmLargeWrites(services).catch((err: unknown) =>
      services.logger.warn({ err }, 'the writing thread could not start ahead; large writes start it'),
    );
  // A submission's records are staged as its body is read (src/submission/early-staging.ts).
  app.use(
    jsonBodies(services.config.maxBodyBytes, { onLarge: warmWrites, observe: submissionBodies(services) }),
  );
  app.use(express.urlencoded({ extended: false, limit: services.config.maxBodyBytes }));
  const readUrl = queryReader(loadValidationDocument());
  app.use(readRequestsAsOriginal(readUrl));
  // Changesheet uploads (multipart) are read here, by busboy, so the validator sees their field.
  app.use(fileUploads(services.config.maxBodyBytes, CHANGESHEET_UPLOADS));
  const contract = withLinearPatterns(loadValidationDocument());
  cacheValidatorRoutes(contract.document);
  const validator = OpenApiValidator.middleware({
    apiSpec: contract.document as any,
    // The contract's patterns, checked by re2js (see src/http/contract-patterns.ts).
    formats: contract.formats,
    validateRequests: { allowUnknownQueryParameters: false, coerceTypes: true },
    // Off in production (config.ts): each answer would pay for checking itself.
    validateResponses: services.config.validateResponses,
    validateSecurity: false,
    ignoreUndocumented: true,
    // Multipart bodies are read by fileUploads above, not by the validator's multer.
    fileUploader: false,
  });
  app.use(validator);

  for (const { routes } of CAPABILITY_ROUTES.filter((entry) => !entry.readsOwnBody))
    app.use(enteredByFirstSegment(routers.get(routes)!));
  app.use(methodNotAllowed(loadValidationDocument()));
  app.use(errorHandler);

  if (services.config.fastPath) {
    installFastPath({
      app,
      routes: fastRoutes(routers.get(systemRouter)!, routers.get(metadataRouter)!),
      before: [metrics.observe, headers, requestLog],
      readUrl,
      validator,
      document: contract.document,
      keepVerdicts: !services.config.validateResponses,
      errorHandler,
    });
  }

  return app;
}
