/**
 * `POST /metadata/json:validate`: checks an NMDC Database payload against the schema and the
 * store (src/validation) and answers as the original: 200 with `{"result": "All Okay!"}` or
 * `{"result": "errors", "detail": {...}}`. Public: a bearer token, if any, is not looked at.
 */
import express from 'express';
import type { Services } from '../services.ts';
import { MetadataValidator, validationAnswer } from './index.ts';

export function validationRouter(deps: Services): express.Router {
  const router = express.Router();
  const validator = new MetadataValidator(deps.store);
  // Express reads `:validate` as a route parameter unless the colon is escaped.
  router.post('/metadata/json\\:validate', async (req, res) => {
    const outcome = await validator.validateDatabase(req.body as Record<string, unknown>);
    res.json(validationAnswer(outcome));
  });
  return router;
}
