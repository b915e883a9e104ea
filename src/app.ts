/**
 * Builds the Express app from ready dependencies. No listen: tests use it in-process.
 */
import { randomUUID } from 'node:crypto';
import express from 'express';
import helmet from 'helmet';
import { pinoHttp } from 'pino-http';
import * as OpenApiValidator from 'express-openapi-validator';
import type { AppDeps } from './http/deps.ts';
import { errorHandler } from './http/error-handler.ts';
import { corsMiddleware } from './http/cors.ts';
import { BadRequest, NotFound } from './http/errors.ts';
import { docsRouter } from './http/docs.ts';
import { loadValidationDocument } from './http/openapi-documents.ts';
import { withLinearPatterns } from './http/contract-patterns.ts';
import { readRequestsAsOriginal } from './http/request-reading/index.ts';
import { systemRouter } from './http/routes/system.ts';
import { metadataRouter } from './http/routes/metadata.ts';
import { provenanceRouter } from './http/routes/provenance.ts';
import { validationRouter } from './http/routes/validation.ts';
import { pidsRouter } from './http/routes/pids.ts';
import { createAuth } from './auth/index.ts';
import { ensureCatalog } from './workflows/catalog.ts';
import { workflowCatalogRouter } from './workflows/catalog-routes.ts';
import { workflowExecutionsRouter } from './workflows/workflow-executions.ts';
import { queriesRouter } from './http/routes/queries.ts';
import { QueryPlanner } from './query/planner/planner.ts';
import { RecordWriter } from '../search/writer.ts';
import { submissionRouter } from './http/routes/submission.ts';
import { runsRouter } from './runs/routes.ts';
import { fileStagingRouter } from './workflows/file-staging-routes.ts';
import { openStoredObjects } from './objects/stored-objects.ts';
import { drsRouter } from './objects/drs-routes.ts';
import { TriggerDispatcher } from './workflows/triggers.ts';
import { changesheetsRouter } from './http/routes/changesheets.ts';
import { changesheetUploads } from './changesheets/upload.ts';
import { jobsRouter } from './workflows/job-routes.ts';
import { nestingRefusal, textNestsDeeper } from './store/nesting.ts';

export interface BuiltApp {
  app: express.Express;
  close(): Promise<void>;
}

/**
 * Refuses, before it is parsed, a JSON body nested deeper than the store accepts: 400 naming the
 * limit, instead of a stack overflow in whatever walks it next.
 */
function refuseDeepJson(_req: unknown, _res: unknown, body: Buffer, encoding: string): void {
  let text: Buffer | string = body;
  if (!/^utf-?8$/i.test(encoding)) {
    try {
      text = new TextDecoder(encoding).decode(body);
    } catch {
      // An encoding TextDecoder does not know: its ASCII brackets are counted as bytes.
    }
  }
  if (textNestsDeeper(text)) throw new BadRequest(nestingRefusal('The JSON body'));
}

export async function buildApp(deps: AppDeps): Promise<BuiltApp> {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', 'loopback');
  app.use(
    helmet({
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
    }),
  );
  // Every step of that popup (redirects included) must leave the popup in its opener's group.
  app.use(['/oidc', '/login/external', '/docs/oauth2-redirect.html'], (_req, res, next) => {
    res.setHeader('Cross-Origin-Opener-Policy', 'unsafe-none');
    next();
  });
  app.use(
    pinoHttp({
      logger: deps.logger,
      genReqId: (req, res) => {
        const incoming = req.headers['x-request-id'];
        const id = typeof incoming === 'string' && /^[\w.-]{1,64}$/.test(incoming) ? incoming : randomUUID();
        res.setHeader('X-Request-Id', id);
        return id;
      },
      // Never log credentials: only method, path and status.
      serializers: {
        req: (req) => ({ id: req.id, method: req.method, url: String(req.url).split('?')[0] }),
        res: (res) => ({ statusCode: res.statusCode }),
      },
    }),
  );

  app.use(corsMiddleware(deps.config.corsOrigins));

  const planner = new QueryPlanner(deps.store, deps.searchIndex, { logger: deps.logger });
  const auth = await createAuth(deps, planner);
  await ensureCatalog(deps.store, deps.config.workflowCatalog);
  app.use(auth.preRouter);
  app.use(docsRouter(deps));

  app.use(express.json({ limit: deps.config.maxBodyBytes, verify: refuseDeepJson }));
  app.use(express.urlencoded({ extended: false, limit: deps.config.maxBodyBytes }));
  app.use(readRequestsAsOriginal(loadValidationDocument()));
  // Changesheet uploads (multipart) are read here, by busboy, so the validator sees their field.
  app.use(changesheetUploads(deps.config.maxBodyBytes));
  const contract = withLinearPatterns(loadValidationDocument());
  app.use(
    OpenApiValidator.middleware({
      apiSpec: contract.document as any,
      // The contract's patterns, checked by re2js (see src/http/contract-patterns.ts).
      formats: contract.formats,
      validateRequests: { allowUnknownQueryParameters: false, coerceTypes: true },
      validateResponses: true,
      validateSecurity: false,
      ignoreUndocumented: true,
      // Multipart bodies are read by changesheetUploads above, not by the validator's multer.
      fileUploader: false,
    }),
  );

  app.use(systemRouter(deps));
  app.use(provenanceRouter(deps));
  app.use(metadataRouter(deps, planner));
  app.use(validationRouter(deps));
  app.use(workflowCatalogRouter(deps.store));
  app.use(
    workflowExecutionsRouter(
      deps.store,
      auth,
      new RecordWriter(deps.store, [deps.searchIndex, deps.edgeIndex]),
    ),
  );
  app.use(auth.apiRouter);
  app.use(jobsRouter(deps, auth));
  app.use(pidsRouter(deps.store, auth.requireUser));
  // Submitted payloads (and changesheets) are kept as stored objects; one instance for every route.
  const storedObjects = await openStoredObjects(deps.config.dataDir, deps.store, (err) =>
    deps.logger.warn({ err }, 'sweeping unreferenced stored-object bytes failed'),
  );
  // Turns queued trigger firings into jobs: now, after each PUT of object types, and every few seconds.
  const triggerDispatcher = new TriggerDispatcher(deps.store, deps.logger);
  triggerDispatcher.start();
  app.use(
    submissionRouter(
      deps,
      auth,
      storedObjects,
      new RecordWriter(deps.store, [deps.searchIndex, deps.edgeIndex]),
    ),
  );
  app.use(fileStagingRouter(deps, auth));
  app.use(runsRouter(deps.store, auth));
  app.use(drsRouter(deps, auth, storedObjects, triggerDispatcher));
  app.use(
    changesheetsRouter(
      deps,
      auth,
      storedObjects,
      new RecordWriter(deps.store, [deps.searchIndex, deps.edgeIndex]),
    ),
  );
  app.use(
    queriesRouter(deps, planner, auth, new RecordWriter(deps.store, [deps.searchIndex, deps.edgeIndex])),
  );
  app.use(() => {
    throw new NotFound();
  });
  app.use(errorHandler);

  return {
    app,
    close: async () => {
      await triggerDispatcher.stop();
      await auth.close();
    },
  };
}
