/**
 * `POST /metadata/changesheets:validate` (public, as in the original) and
 * `POST /metadata/changesheets:submit` (logged in, allowance `/metadata/changesheets:submit`):
 * a changesheet uploaded as the multipart file `uploaded_file` (read before the validator by
 * src/http/request-reading/file-uploads.ts); see src/changesheets/changesheets.ts.
 */
import express from 'express';
import type { Services } from '../services.ts';
import type { Principal } from '../accounts/principal.ts';
import { guardsOf } from '../http/guards.ts';
import { answerLargeJson } from '../http/answer.ts';
import { Forbidden, Unprocessable } from '../errors.ts';
import { Changesheets, validationAnswerOf } from './changesheets.ts';
import { uploadOf, type FileUploadRoutes } from '../http/request-reading/file-uploads.ts';

const UPLOAD_FIELD = 'uploaded_file';

/** The changesheet endpoints' uploads, read before the validator (src/app.ts mounts the reader). */
export const CHANGESHEET_UPLOADS: FileUploadRoutes = {
  paths: new Set(['/metadata/changesheets:validate', '/metadata/changesheets:submit']),
  field: UPLOAD_FIELD,
  tooLargeAdvice: 'split the changesheet into smaller ones',
};

export const CHANGESHEET_SUBMIT_FORBIDDEN =
  'Only specific users are allowed to apply changesheets at this time.';

export function changesheetsRouter(deps: Services): express.Router {
  const changesheets = new Changesheets(deps.store, deps.writer, deps.storedObjects, deps.logger);
  const { requireUser } = guardsOf(deps.auth);
  const router = express.Router();

  const uploaded = (req: express.Request) => {
    const upload = uploadOf(req);
    // The validator already refused a body without the field; this is a body that was not multipart.
    if (!upload)
      throw new Unprocessable(`${UPLOAD_FIELD}: a changesheet file is required (multipart/form-data)`);
    return upload;
  };

  router.post('/metadata/changesheets\\:validate', async (req, res) => {
    const checked = await changesheets.check(uploaded(req));
    // Every record before and after: 17,000 of them are about 50 MB of JSON, written in turns.
    await answerLargeJson(res, validationAnswerOf(checked));
  });

  router.post('/metadata/changesheets\\:submit', requireUser, async (req, res) => {
    const principal = res.locals.principal as Principal;
    if (!(await deps.allowances.permits(principal, '/metadata/changesheets:submit'))) {
      throw new Forbidden(CHANGESHEET_SUBMIT_FORBIDDEN);
    }
    res.json(await changesheets.submit(uploaded(req), principal));
  });
  return router;
}
