/**
 * Browser-facing routes mounted before the body parsers: the provider itself (`/oidc/...`,
 * discovery), its login interaction, the external researcher sign-in and token revocation.
 */
import express, { type Request, type Response } from 'express';
import type { Services } from '../services.ts';
import type { PendingExternalLogin } from './external-identity.ts';
import { errorPage, passwordLoginPage, tokenPage } from './pages.ts';
import { OIDC_PREFIX } from './provider.ts';
import { ID_TOKEN_TYPE, TOKEN_EXCHANGE_GRANT } from './grants/external-id-token.ts';
import { expiresOf, type TokenLogins } from './token-endpoint.ts';
import { runInProcess, type InProcessResponse } from './in-process-request.ts';
import { DomainError, LoginRateLimited } from '../errors.ts';

const PENDING_KIND = 'external_login';
const PENDING_TTL_SECONDS = 600;
const STATE_COOKIE = 'nmdc_external_login';

interface StoredPendingLogin extends PendingExternalLogin {
  /** Set when the sign-in was started by the provider's login interaction (docs page). */
  interactionUid?: string;
}

function cookieValue(req: Request, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return decodeURIComponent(part.slice(eq + 1).trim());
  }
  return undefined;
}

function sendHtml(res: Response, status: number, html: string): void {
  res.status(status).set('Cache-Control', 'no-store').type('html').send(html);
}

function expiresText(seconds: number): string {
  const { days, hours, minutes } = expiresOf(seconds);
  const parts = [
    days ? `${days} day${days === 1 ? '' : 's'}` : '',
    hours ? `${hours} hour${hours === 1 ? '' : 's'}` : '',
    minutes ? `${minutes} minute${minutes === 1 ? '' : 's'}` : '',
  ].filter(Boolean);
  return parts.length ? `for ${parts.join(' ')}` : 'for less than a minute';
}

export function browserFlowsRouter(deps: Services): express.Router {
  const { accounts, logger } = deps;
  const { provider, external, issuer, limiter } = deps.auth;
  const { publicUrl, tokenTtlSeconds } = deps.config;
  const { state } = deps.store;
  const router = express.Router();
  const providerHandler = provider.callback();
  const secureCookies = publicUrl.startsWith('https:');
  const form = express.urlencoded({ extended: false, limit: '16kb' });
  const publicOrigin = new URL(publicUrl);

  // The provider builds its endpoint URLs from the request; pin them to the public URL so
  // discovery and redirects never depend on a client-chosen Host header.
  router.use((req, _res, next) => {
    if (req.path.startsWith(`${OIDC_PREFIX}/`) || req.path === '/.well-known/openid-configuration') {
      req.headers['x-forwarded-host'] = publicOrigin.host;
      req.headers['x-forwarded-proto'] = publicOrigin.protocol.slice(0, -1);
    }
    next();
  });

  // Revocation of our JWT access tokens (the provider only revokes tokens it stores). Anyone
  // holding a token may revoke it; unknown or foreign tokens are ignored, as RFC 7009 asks.
  router.post(`${OIDC_PREFIX}/token/revocation`, form, async (req, res) => {
    await deps.auth.tokens.revoke(typeof req.body?.token === 'string' ? req.body.token : '');
    res.status(200).set('Cache-Control', 'no-store').end();
  });

  /** Finishes the provider's login interaction for `accountId` and sends the browser back to it. */
  async function finishInteraction(res: Response, uid: string, accountId: string): Promise<void> {
    const interaction = await provider.Interaction.find(uid);
    if (!interaction) {
      sendHtml(
        res,
        400,
        errorPage('Sign-in expired', 'The sign-in took too long. Start again from the documentation page.'),
      );
      return;
    }
    interaction.result = { login: { accountId } };
    await interaction.save(Math.max(1, interaction.exp - Math.floor(Date.now() / 1000)));
    res.redirect(303, interaction.returnTo);
  }

  /** The pending interaction, or null after an error page when it is unknown or expired. */
  async function interactionOf(req: Request, res: Response) {
    try {
      return await provider.interactionDetails(req, res);
    } catch {
      sendHtml(
        res,
        400,
        errorPage(
          'Sign-in expired',
          'This sign-in is unknown or expired. Start again from the documentation page.',
        ),
      );
      return null;
    }
  }

  router.get(`${OIDC_PREFIX}/interaction/:uid`, async (req, res) => {
    const details = await interactionOf(req, res);
    if (!details) return;
    if (details.prompt.name !== 'login') {
      // First-party docs client gets its grant without a consent screen; nothing else asks here.
      const result = {
        error: 'access_denied',
        error_description: 'consent is not available for this client',
      };
      await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
      return;
    }
    if (external) {
      res.redirect(303, `/login/external?interaction=${encodeURIComponent(details.uid)}`);
      return;
    }
    sendHtml(res, 200, passwordLoginPage(`${OIDC_PREFIX}/interaction/${details.uid}/login`, {}));
  });

  router.post(`${OIDC_PREFIX}/interaction/:uid/login`, form, async (req, res) => {
    const details = await interactionOf(req, res);
    if (!details) return;
    const username = typeof req.body?.username === 'string' ? req.body.username : '';
    const password = typeof req.body?.password === 'string' ? req.body.password : '';
    const address = req.ip ?? 'unknown';
    await limiter.admit(`user:${username}`, address);
    const user = await accounts.verifyPassword(username, password);
    if (!user) {
      sendHtml(
        res,
        401,
        passwordLoginPage(`${OIDC_PREFIX}/interaction/${details.uid}/login`, {
          error: 'Incorrect username or password',
        }),
      );
      return;
    }
    await limiter.succeeded(`user:${username}`, address);
    await provider.interactionFinished(
      req,
      res,
      { login: { accountId: user.username } },
      { mergeWithLastSubmission: false },
    );
  });

  router.get('/login/external', async (req, res) => {
    if (!external) {
      sendHtml(res, 404, errorPage('Not available', 'External sign-in is not configured on this service.'));
      return;
    }
    const interactionUid = typeof req.query.interaction === 'string' ? req.query.interaction : undefined;
    let begun;
    try {
      begun = await external.begin();
    } catch (err) {
      logger.error({ err: err instanceof Error ? err.message : String(err) }, 'external issuer unreachable');
      sendHtml(
        res,
        503,
        errorPage(
          'Sign-in unavailable',
          `${external.label} cannot be reached right now. Please try again later.`,
        ),
      );
      return;
    }
    const { url, pending } = begun;
    const stored: StoredPendingLogin = { ...pending, ...(interactionUid ? { interactionUid } : {}) };
    await state.put(PENDING_KIND, pending.state, stored, PENDING_TTL_SECONDS);
    // Binds the flow to this browser: the callback must come back with the same state cookie.
    res.cookie(STATE_COOKIE, pending.state, {
      httpOnly: true,
      sameSite: 'lax',
      secure: secureCookies,
      path: '/login/external',
      maxAge: PENDING_TTL_SECONDS * 1000,
    });
    res.redirect(303, url.href);
  });

  router.get('/login/external/callback', async (req, res) => {
    if (!external) {
      sendHtml(res, 404, errorPage('Not available', 'External sign-in is not configured on this service.'));
      return;
    }
    res.clearCookie(STATE_COOKIE, { path: '/login/external' });
    const stateParam = typeof req.query.state === 'string' ? req.query.state : '';
    if (typeof req.query.error === 'string') {
      const described =
        typeof req.query.error_description === 'string' ? req.query.error_description : req.query.error;
      sendHtml(res, 400, errorPage('Sign-in failed', `${external.label} answered: ${described}`));
      return;
    }
    const pending = stateParam ? await state.get<StoredPendingLogin>(PENDING_KIND, stateParam) : undefined;
    if (!pending || cookieValue(req, STATE_COOKIE) !== stateParam) {
      sendHtml(
        res,
        400,
        errorPage('Sign-in failed', 'This sign-in is unknown or expired. Please start again.'),
      );
      return;
    }
    await state.delete(PENDING_KIND, stateParam);
    const query = req.originalUrl.slice(req.originalUrl.indexOf('?'));
    let finished;
    try {
      finished = await external.finish(new URL(`${publicUrl}/login/external/callback${query}`), pending);
    } catch (err) {
      logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'external sign-in failed');
      sendHtml(
        res,
        400,
        errorPage('Sign-in failed', `${external.label} sign-in could not be completed. Please try again.`),
      );
      return;
    }
    const user = await accounts.userForExternalSubject(finished.subject.sub, finished.subject);
    if (user.disabled) {
      sendHtml(res, 403, errorPage('Account disabled', 'This account is disabled.'));
      return;
    }
    if (pending.interactionUid) {
      await finishInteraction(res, pending.interactionUid, user.username);
      return;
    }
    const issued = await issuer.issue(
      {
        grant_type: TOKEN_EXCHANGE_GRANT,
        subject_token: finished.idToken,
        subject_token_type: ID_TOKEN_TYPE,
      },
      req.ip,
    );
    if (!('accessToken' in issued)) {
      logger.warn({ error: issued.error }, 'token issuance after external sign-in failed');
      sendHtml(res, 400, errorPage('Sign-in failed', 'No token could be issued. Please try again.'));
      return;
    }
    sendHtml(
      res,
      200,
      tokenPage({
        username: user.username,
        accessToken: issued.accessToken,
        publicUrl,
        expiresText: expiresText(issued.expiresIn ?? tokenTtlSeconds),
      }),
    );
  });

  // The token endpoint the discovery document names takes what `POST /token` takes (a user's
  // password, a site client's credentials) as well as the provider's own grants, so an OAuth
  // client configured from discovery logs in as the docs and README say. Other grants
  // (authorization codes of the docs page, token exchange) go on to the provider unchanged.
  const rawBody = express.raw({ type: () => true, limit: '56kb' });
  router.post(`${OIDC_PREFIX}/token`, rawBody, async (req, res) => {
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const fields = req.is('application/x-www-form-urlencoded')
      ? Object.fromEntries(new URLSearchParams(raw.toString('utf8')))
      : {};
    if (fields.grant_type === 'password' || fields.grant_type === 'client_credentials') {
      await oauthLogin(deps.auth.logins, fields, req, res);
      return;
    }
    sendRaw(res, await runInProcess(providerHandler, inProcessRequestOf(req, raw)));
  });

  // The discovery document, with the grants the token endpoint takes beyond the provider's own.
  router.get('/.well-known/openid-configuration', async (req, res) => {
    const answer = await runInProcess(providerHandler, inProcessRequestOf(req));
    let document: Record<string, unknown>;
    try {
      document = JSON.parse(answer.body) as Record<string, unknown>;
    } catch {
      sendRaw(res, answer);
      return;
    }
    if (answer.status === 200 && Array.isArray(document.grant_types_supported)) {
      const grants = new Set([
        ...(document.grant_types_supported as string[]),
        'password',
        'client_credentials',
      ]);
      document.grant_types_supported = [...grants];
    }
    res.status(answer.status).set('Cache-Control', 'public, max-age=60').json(document);
  });

  // Everything else under /oidc and the discovery document is the provider's.
  router.use((req, res, next) => {
    if (req.path.startsWith(`${OIDC_PREFIX}/`) || req.path === '/.well-known/openid-configuration') {
      // The provider answers its own errors; its handler's promise never rejects.
      void providerHandler(req, res);
      return;
    }
    next();
  });
  return router;
}

/** An Express request as an in-process request to the provider (its body already read). */
function inProcessRequestOf(req: Request, body?: Buffer): Parameters<typeof runInProcess>[1] {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === 'string') headers[name] = value;
    else if (Array.isArray(value)) headers[name] = value.join(', ');
  }
  delete headers['content-length'];
  delete headers['transfer-encoding'];
  return {
    method: req.method,
    path: req.originalUrl,
    headers,
    ...(body && body.length > 0 ? { body: body.toString('utf8') } : {}),
    remoteAddress: req.ip,
  };
}

/** Answers what an in-process request to the provider answered. */
function sendRaw(res: Response, answer: InProcessResponse): void {
  for (const [name, value] of Object.entries(answer.headers)) {
    if (value === undefined || name === 'content-length' || name === 'transfer-encoding') continue;
    res.setHeader(name, value as string | string[]);
  }
  res.status(answer.status).send(answer.body);
}

/**
 * A login of the `/token` form contract answered as OAuth 2.0 answers (RFC 6749 §5):
 * `{access_token, token_type, expires_in}`, or `{error, error_description}`.
 */
async function oauthLogin(
  logins: TokenLogins,
  fields: Record<string, string>,
  req: Request,
  res: Response,
): Promise<void> {
  res.set({ 'Cache-Control': 'no-store', Pragma: 'no-cache' });
  try {
    const { accessToken, expiresIn } = await logins.issue(fields, req.headers.authorization, req.ip);
    res.json({ access_token: accessToken, token_type: 'Bearer', expires_in: expiresIn });
  } catch (err) {
    if (!(err instanceof DomainError)) throw err;
    const description = typeof err.detail === 'string' ? err.detail : JSON.stringify(err.detail);
    if (err.kind === 'unauthenticated' && fields.grant_type === 'client_credentials') {
      res.status(401).set('WWW-Authenticate', 'Basic realm="token"');
      res.json({ error: 'invalid_client', error_description: description });
    } else if (err.kind === 'unauthenticated') {
      res.status(400).json({ error: 'invalid_grant', error_description: description });
    } else if (err instanceof LoginRateLimited) {
      res.status(429).set('Retry-After', String(err.retryAfterSeconds));
      res.json({ error: 'temporarily_unavailable', error_description: description });
    } else {
      res.status(400).json({ error: 'invalid_request', error_description: description });
    }
  }
}
