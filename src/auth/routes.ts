/**
 * `POST /token` (the original's form contract: password, client credentials, and an external
 * identity token) and `POST /logout` (the presented token stops working at once).
 */
import express from 'express';
import type { Services } from '../services.ts';
import { bearerTokenOf } from '../http/guards.ts';

export function authRouter(deps: Services): express.Router {
  const router = express.Router();
  router.post('/token', async (req, res) => {
    const answer = await deps.auth.logins.login(req.body, req.headers.authorization, req.ip);
    res.set('Cache-Control', 'no-store').json(answer);
  });
  router.post('/logout', async (req, res) => {
    await deps.auth.tokens.revoke(bearerTokenOf(req.headers.authorization));
    res.status(204).end();
  });
  return router;
}
