/**
 * A store whose connection is lost after start-up: requests answer 503 with a detail, quickly,
 * instead of a 500 or a hang; they recover when the connection comes back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { pino } from 'pino';
import { createTestApp, type TestApp } from '../support/server.ts';
import { buildApp } from '../../src/app.ts';
import { openServices, type Services } from '../../src/services.ts';
import type { DocumentStore } from '../../src/store/port.ts';

class MongoNetworkError extends Error {
  override name = 'MongoNetworkError';
}

let t: TestApp;
let app: TestApp['app'];
let flakyServices: Services;
let connected = true;

beforeAll(async () => {
  t = await createTestApp();
  await t.store.upsertMany('study_set', [
    { id: 'nmdc:sty-11-lost01', type: 'nmdc:Study', name: 'Lost study' },
  ]);
  // Every read method of the store throws a driver connection error while disconnected.
  const flaky = new Proxy(t.store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || prop === 'close') return value;
      return (...args: unknown[]) => {
        if (!connected) {
          const err = new Error('connection 1 to 127.0.0.1:27017 closed', {
            cause: Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }),
          });
          return Promise.reject(prop === 'find' ? new MongoNetworkError(err.message) : err);
        }
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  }) as DocumentStore;
  flakyServices = await openServices(t.config, pino({ level: 'silent' }), {
    adapters: { store: flaky, searchIndex: t.searchIndex, edgeIndex: t.edgeIndex },
  });
  app = buildApp(flakyServices);
});
afterAll(async () => {
  await flakyServices?.stop();
  await t?.close();
});

describe('lost store connection', () => {
  it('answers 503 with a detail while the connection is down, and 200 once it is back', async () => {
    await request(app).get('/studies/nmdc:sty-11-lost01').expect(200);
    connected = false;
    try {
      for (const path of ['/studies/nmdc:sty-11-lost01', '/studies?filter=name:x', '/nmdcschema/study_set']) {
        const t0 = performance.now();
        const res = await request(app).get(path).timeout(5000);
        expect(res.status, path).toBe(503);
        expect(res.body.detail).toMatch(/unreachable/);
        expect(performance.now() - t0).toBeLessThan(2000);
      }
    } finally {
      connected = true;
    }
    const back = await request(app).get('/studies/nmdc:sty-11-lost01').expect(200);
    expect(back.body.name).toBe('Lost study');
  });
});
