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
import { NotFound } from './http/errors.ts';
import { docsRouter } from './http/docs.ts';
import { loadValidationDocument } from './http/openapi-documents.ts';
import { readRequestsAsOriginal } from './http/request-reading/index.ts';
import { systemRouter } from './http/routes/system.ts';
import { metadataRouter } from './http/routes/metadata.ts';
import { provenanceRouter } from './http/routes/provenance.ts';
import { createAuth } from './auth/index.ts';
import { queriesRouter } from './http/routes/queries.ts';
import { QueryPlanner } from '../search/planner.ts';
import { RecordWriter } from '../search/writer.ts';

export interface BuiltApp {
  app: express.Express;
  close(): Promise<void>;
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

  const planner = new QueryPlanner(deps.store, deps.searchIndex);
  const auth = await createAuth(deps, planner);
  app.use(auth.preRouter);
  app.use(docsRouter(deps));

  app.use(express.json({ limit: deps.config.maxBodyBytes }));
  app.use(express.urlencoded({ extended: false, limit: deps.config.maxBodyBytes }));
  app.use(readRequestsAsOriginal(loadValidationDocument()));
  app.use(
    OpenApiValidator.middleware({
      apiSpec: loadValidationDocument() as any,
      validateRequests: { allowUnknownQueryParameters: false, coerceTypes: true },
      validateResponses: true,
      validateSecurity: false,
      ignoreUndocumented: true,
    }),
  );

  app.use(systemRouter(deps));
  app.use(provenanceRouter(deps));
  app.use(metadataRouter(deps, planner));
  app.use(auth.apiRouter);
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
      await auth.close();
    },
  };
}
