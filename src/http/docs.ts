import express from 'express';
import type { AppDeps } from './deps.ts';
import { loadApiDocuments } from './openapi-documents.ts';

/** `/docs` (Swagger UI), `/openapi.json` (2.13.0) and `/openapi-1.2.0.json`. */
export function docsRouter(_deps: AppDeps): express.Router {
  const { current, legacy } = loadApiDocuments();
  const router = express.Router();
  router.get('/openapi.json', (_req, res) => void res.json(current));
  router.get('/openapi-1.2.0.json', (_req, res) => void res.json(legacy));
  return router;
}
