/**
 * `/admin/allowances`: list, create and delete allowances, and list the action names. Managed by
 * runtime administrators and by holders of the `/admin/allowances` allowance, as in the original.
 * Bodies and the `action` query parameter are already checked against the action enum by the
 * OpenAPI validator (422 naming the allowed values); the checks here guard direct use.
 */
import express, { type Response } from 'express';
import type { Services } from '../services.ts';
import { guardsOf } from '../http/guards.ts';
import { Conflict, Forbidden, NotFound, Unprocessable } from '../errors.ts';
import { ALLOWANCE_ACTIONS, isAllowanceAction, type AllowanceAction, type Allowances } from './allowances.ts';
import type { Principal } from './principal.ts';

export const MANAGE_ALLOWANCES_FORBIDDEN = 'Only admin users can manage allowances.';

async function requireManager(allowances: Allowances, res: Response): Promise<void> {
  const principal = res.locals.principal as Principal;
  if (!(await allowances.permits(principal, '/admin/allowances')))
    throw new Forbidden(MANAGE_ALLOWANCES_FORBIDDEN);
}

function optionalText(value: unknown, name: string): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string') throw new Unprocessable(`${name} must be a single string`);
  return value;
}

function actionOf(value: unknown): AllowanceAction {
  if (!isAllowanceAction(value)) {
    throw new Unprocessable(`action must be one of: ${ALLOWANCE_ACTIONS.map((a) => `'${a}'`).join(', ')}`);
  }
  return value;
}

export function allowancesRouter(deps: Services): express.Router {
  const { allowances } = deps;
  const { requireUser } = guardsOf(deps.auth);
  const router = express.Router();

  router.get('/admin/allowances/actions', requireUser, async (_req, res) => {
    await requireManager(allowances, res);
    res.json([...ALLOWANCE_ACTIONS].sort());
  });

  router.get('/admin/allowances', requireUser, async (req, res) => {
    await requireManager(allowances, res);
    const username = optionalText(req.query.username, 'username');
    const action = optionalText(req.query.action, 'action');
    const resources = await allowances.list({
      username,
      action: action === undefined ? undefined : actionOf(action),
    });
    res.json({ resources });
  });

  router.post('/admin/allowances', requireUser, async (req, res) => {
    await requireManager(allowances, res);
    const body = (req.body ?? {}) as Record<string, unknown>;
    const username = optionalText(body.username, 'username');
    if (username === undefined) throw new Unprocessable('username is required');
    const action = actionOf(body.action);
    if (!(await allowances.create({ username, action }))) {
      throw new Conflict(`Allowance already exists for user '${username}' and action '${action}'`);
    }
    res.status(201).json({ username, action });
  });

  router.delete('/admin/allowances', requireUser, async (req, res) => {
    await requireManager(allowances, res);
    const username = optionalText(req.query.username, 'username');
    if (username === undefined) throw new Unprocessable('username is required');
    const action = actionOf(optionalText(req.query.action, 'action'));
    if (!(await allowances.remove({ username, action }))) {
      throw new NotFound(`No allowance found for user '${username}' and action '${action}'`);
    }
    res.status(204).end();
  });

  return router;
}
