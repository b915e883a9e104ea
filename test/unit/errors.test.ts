/**
 * The domain errors (src/errors.ts): each has a stable code and a kind, and the error handler is
 * where they become answers: the status of the kind, `{"detail": ...}` with any members, and the
 * headers a refusal needs.
 */
import express from 'express';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import * as errors from '../../src/errors.ts';
import { errorHandler, statusOf } from '../../src/http/error-handler.ts';

const { DomainError } = errors;

/** Every error class the module exports, by export name. */
const errorClasses = Object.entries(errors as Record<string, unknown>).filter(
  (entry): entry is [string, new (...args: any[]) => errors.DomainError] =>
    typeof entry[1] === 'function' && entry[1].prototype instanceof DomainError,
);

/** An instance of each class (the two with their own constructors get their own arguments). */
function instanceOf(name: string, ErrorClass: new (...args: any[]) => errors.DomainError) {
  if (name === 'ClaimHeld') return new ErrorClass('job-1', 'op-1');
  if (name === 'LoginRateLimited') return new ErrorClass('Too many attempts', 12.2);
  return new ErrorClass('what was wrong');
}

/** Answers every request by throwing `err`, through the service's error handler. */
function appThrowing(err: unknown): express.Express {
  const app = express();
  app.get('/', () => {
    throw err;
  });
  app.use(errorHandler);
  return app;
}

describe('domain errors', () => {
  it('gives every class a distinct NMDC_ERR_ code, its own name and a kind the handler maps', () => {
    expect(errorClasses.length).toBeGreaterThanOrEqual(15);
    const codes = new Set<string>();
    for (const [name, ErrorClass] of errorClasses) {
      const err = instanceOf(name, ErrorClass);
      expect(err.code, name).toMatch(/^NMDC_ERR_[A-Z]+(_[A-Z]+)*$/);
      expect(codes.has(err.code), `${name} repeats ${err.code}`).toBe(false);
      codes.add(err.code);
      expect(err.name).toBe(name);
      expect(ErrorClass.name).toBe(name);
      expect(err).toBeInstanceOf(Error);
      expect(statusOf(err), name).toBeGreaterThanOrEqual(400);
    }
  });

  it('keeps the codes clients and logs rely on', () => {
    expect(new errors.NotFound().code).toBe('NMDC_ERR_NOT_FOUND');
    expect(new errors.UnsupportedQuery('x').code).toBe('NMDC_ERR_QUERY_UNSUPPORTED');
    expect(new errors.ClaimHeld('j', 'o').code).toBe('NMDC_ERR_JOBS_CLAIM_HELD');
    expect(new errors.LoginRateLimited('x', 1).code).toBe('NMDC_ERR_AUTH_RATE_LIMITED');
  });

  it('maps each kind to the status the original answers with', () => {
    const statuses = Object.fromEntries(
      [
        new errors.BadRequest('x'),
        new errors.InvalidQuery('x'),
        new errors.Unauthorized(),
        new errors.Forbidden(),
        new errors.NotFound(),
        new errors.Conflict('x'),
        new errors.UploadTooLarge('x'),
        new errors.Unprocessable('x'),
        new errors.UnsupportedQuery('x'),
        new errors.LoginRateLimited('x', 1),
        new errors.SubmissionFailed('x'),
        new errors.NotImplemented(),
        new errors.ServiceUnavailable('x'),
      ].map((err) => [err.name, statusOf(err)]),
    );
    expect(statuses).toEqual({
      BadRequest: 400,
      InvalidQuery: 400,
      Unauthorized: 401,
      Forbidden: 403,
      NotFound: 404,
      Conflict: 409,
      UploadTooLarge: 413,
      Unprocessable: 422,
      UnsupportedQuery: 422,
      LoginRateLimited: 429,
      SubmissionFailed: 500,
      NotImplemented: 501,
      ServiceUnavailable: 503,
    });
  });

  it('uses the default detail when a throw site gives none, and the given one otherwise', () => {
    expect(new errors.NotFound().detail).toBe('Not found');
    expect(new errors.Forbidden().detail).toBe('Forbidden');
    expect(new errors.Unauthorized().detail).toBe('Access token is invalid or missing. Please log in again.');
    expect(new errors.NotFound('Study not found').detail).toBe('Study not found');
    expect(new errors.Unprocessable({ biosample_set: ['bad'] }).message).toBe('{"biosample_set":["bad"]}');
  });
});

describe('the error handler', () => {
  it('answers a domain error with its status and {"detail": ...} only', async () => {
    const res = await request(appThrowing(new errors.Conflict('site lab-1 already exists'))).get('/');
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ detail: 'site lab-1 already exists' });
    expect(res.headers['www-authenticate']).toBeUndefined();
  });

  it('puts the members an error carries beside the detail', async () => {
    const res = await request(appThrowing(new errors.ClaimHeld('nmdc:sys0job1', 'nmdc:sys0op1'))).get('/');
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      detail: 'client site already claimed job nmdc:sys0job1 -- see operation nmdc:sys0op1',
      id: 'nmdc:sys0op1',
    });
  });

  it('asks for a bearer token on a 401 and says when to try again on a 429', async () => {
    const unauthorized = await request(appThrowing(new errors.Unauthorized())).get('/');
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.headers['www-authenticate']).toBe('Bearer');
    const limited = await request(appThrowing(new errors.LoginRateLimited('Too many attempts', 12.2))).get(
      '/',
    );
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toBe('13');
    expect(limited.body).toEqual({ detail: 'Too many attempts' });
  });

  it('answers anything else with a 500 that reveals nothing', async () => {
    const res = await request(appThrowing(new Error('secret internals'))).get('/');
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ detail: 'Internal server error' });
  });
});
