import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import express from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import { createTestApp, type TestApp } from '../support/server.ts';
import { loadCurrentDocument } from '../../src/http/openapi-documents.ts';
import { errorHandler } from '../../src/http/error-handler.ts';

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

describe('the served API documents', () => {
  it('serves the 2.13.0 document at /openapi.json with the five groups and a relative server', async () => {
    const res = await request(t.app).get('/openapi.json').expect(200).expect('Content-Type', /json/);
    expect(res.body.info.version).toBe('2.13.0');
    expect(res.body.servers).toEqual([{ url: '/', description: 'This service' }]);
    expect(res.body.tags.map((tag: { name: string }) => tag.name)).toEqual([
      'Metadata access',
      'Workflow management',
      'Persistent identifiers',
      'User accounts',
      'System administration',
    ]);
  });

  it('offers the password and site client logins, and no external sign-in when none is configured', async () => {
    const res = await request(t.app).get('/openapi.json').expect(200);
    const schemes = res.body.components.securitySchemes;
    expect(Object.keys(schemes)).toEqual(['userLogin', 'siteClientLogin']);
    expect(Object.values(schemes).map((s: any) => s.description)).toEqual([
      'User login',
      'Site client login',
    ]);
    expect(res.body.paths['/queries:run'].post.security).toEqual([
      { userLogin: [] },
      { siteClientLogin: [] },
    ]);
    expect(JSON.stringify(res.body)).not.toContain('orcidLogin');
    const legacy = await request(t.app).get('/openapi-1.2.0.json').expect(200);
    expect(legacy.body.info.description).not.toContain('/login/external');
    const external = await request(t.app).get('/login/external').expect(404);
    expect(external.text).toContain('External sign-in is not configured on this service.');
  });

  it('lists the three login methods, the external one under its configured name, when an issuer is configured', async () => {
    for (const [label, env] of [
      ['ORCID', {}],
      ['LS Login', { EXTERNAL_OIDC_LABEL: 'LS Login' }],
    ] as const) {
      const app = await createTestApp({
        EXTERNAL_OIDC_ISSUER: 'http://127.0.0.1:9/issuer',
        EXTERNAL_OIDC_CLIENT_ID: 'nmdc',
        EXTERNAL_OIDC_CLIENT_SECRET: 'secret',
        ...env,
      });
      try {
        const res = await request(app.app).get('/openapi.json').expect(200);
        const schemes = res.body.components.securitySchemes;
        expect(Object.keys(schemes)).toEqual(['userLogin', 'siteClientLogin', 'orcidLogin']);
        expect(Object.values(schemes).map((s: any) => s.description)).toEqual([
          'User login',
          'Site client login',
          `User login with ${label}`,
        ]);
        expect(schemes.orcidLogin.openIdConnectUrl).toBe('/.well-known/openid-configuration');
        const legacy = await request(app.app).get('/openapi-1.2.0.json').expect(200);
        expect(legacy.body.info.description).toContain(`[Sign in with ${label}](/login/external)`);
        expect((await request(app.app).get('/docs').expect(200)).text).toContain(`Signed in with ${label}.`);
      } finally {
        await app.close();
      }
    }
  });

  it('serves the 1.2.0 document with the find, metadata and queries groups', async () => {
    const res = await request(t.app).get('/openapi-1.2.0.json').expect(200).expect('Content-Type', /json/);
    expect(res.body.info.version).toBe('1.2.0');
    expect(res.body.tags.map((tag: { name: string }) => tag.name)).toEqual([
      'find',
      'metadata',
      'queries',
      'users',
      'sites',
      'workflows',
      'capabilities',
      'object types',
      'triggers',
      'jobs',
      'objects',
      'operations',
      'runs',
      'minter',
    ]);
    expect(Object.keys(res.body.components.securitySchemes)).toEqual(['userLogin', 'siteClientLogin']);
    expect(res.body.paths).toHaveProperty(['/activities']);
    expect(res.body.paths).not.toHaveProperty(['/planned_processes']);
  });
});

describe('the docs page', () => {
  it('is where the root redirects, with 303 as the original answers', async () => {
    const res = await request(t.app).get('/').expect(303);
    expect(res.headers.location).toBe('/docs');
  });

  it('loads Swagger UI and its start script from our own origin only', async () => {
    const res = await request(t.app).get('/docs').expect(200).expect('Content-Type', /html/);
    for (const asset of [
      '/docs/assets/swagger-ui.css',
      '/docs/assets/swagger-ui-bundle.js',
      '/docs/assets/swagger-ui-standalone-preset.js',
      '/docs/docs-init.js',
    ]) {
      expect(res.text).toContain(`"${asset}"`);
    }
    expect(res.text).toContain('/openapi.json');
    expect(res.text).toContain('/openapi-1.2.0.json');
    expect(res.text).not.toMatch(/(src|href)="(https?:)?\/\//);
    // The start code is a separate file, so the page has no inline script.
    expect(res.text).not.toMatch(/<script>(?!<)/);
  });

  it('serves the referenced assets with the right types', async () => {
    await request(t.app)
      .get('/docs/assets/swagger-ui-bundle.js')
      .expect(200)
      .expect('Content-Type', /javascript/);
    await request(t.app).get('/docs/assets/swagger-ui-standalone-preset.js').expect(200);
    await request(t.app).get('/docs/assets/swagger-ui.css').expect(200).expect('Content-Type', /css/);
    const redirect = await request(t.app).get('/docs/oauth2-redirect.html').expect(200);
    expect(redirect.text).toContain('oauth2-redirect.js');
    await request(t.app)
      .get('/docs/oauth2-redirect.js')
      .expect(200)
      .expect('Content-Type', /javascript/);
  });

  it('starts Swagger UI with the version selector, persisted logins and PKCE for the docs client', async () => {
    const res = await request(t.app)
      .get('/docs/docs-init.js')
      .expect(200)
      .expect('Content-Type', /javascript/);
    expect(res.text).toContain("{ url: '/openapi.json', name: '2.13.0' }");
    expect(res.text).toContain("{ url: '/openapi-1.2.0.json', name: '1.2.0' }");
    expect(res.text).toContain("'urls.primaryName': '2.13.0'");
    expect(res.text).toContain('persistAuthorization: true');
    expect(res.text).toContain('validatorUrl: null');
    // The ORCID login is offered as authorization code + PKCE only, with a token banner.
    expect(res.text).toContain("external.get('flow') === 'authorization_code'");
    expect(res.text).toMatch(/restoreAuthorization[\s\S]*showBanner/);
    expect(res.text).toContain("new URL('/docs/oauth2-redirect.html'");
    expect(res.text).toContain(
      "ui.initOAuth({ clientId: 'swagger-ui', usePkceWithAuthorizationCodeGrant: true })",
    );
  });

  it('does not serve other files of the Swagger UI package', async () => {
    await request(t.app).get('/docs/assets/package.json').expect(404);
    await request(t.app).get('/docs/assets/../../package.json').expect(404);
  });
});

describe('request validation against the contract', () => {
  it.each(['0', '5000'])('answers 422 naming per_page for per_page=%s', async (perPage) => {
    const res = await request(t.app).get(`/biosamples?per_page=${perPage}`).expect(422);
    expect(res.body.detail).toMatch(/per_page/);
    expect(res.body.detail).toMatch(perPage === '0' ? />= 1/ : /<= 2000/);
  });

  it('validates the 1.2.0 /activities paths like /planned_processes', async () => {
    const res = await request(t.app).get('/activities?per_page=0').expect(422);
    expect(res.body.detail).toMatch(/per_page must be >= 1/);
  });

  it('answers 422 for a page below 1', async () => {
    const res = await request(t.app).get('/studies?page=0').expect(422);
    expect(res.body.detail).toMatch(/page must be >= 1/);
  });

  it('names the command keys when a /queries:run body has none, before asking for a token', async () => {
    for (const body of [{}, { filter: {} }]) {
      const res = await request(t.app).post('/queries:run').send(body).expect(422);
      expect(res.body.detail).toBe(
        'Unknown command: the body must name one of the commands find, getMore, count, aggregate, update, delete, explain ' +
          '(e.g. {"find": "biosample_set", "filter": {}})',
      );
    }
  });

  it('still asks for a token when the /queries:run body is a valid command', async () => {
    const res = await request(t.app).post('/queries:run').send({ find: 'study_set' }).expect(401);
    expect(typeof res.body.detail).toBe('string');
  });

  it('refuses an unknown grant_type at /token naming the allowed ones', async () => {
    const res = await request(t.app).post('/token').type('form').send({ grant_type: 'magic' });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(res.body.detail).toMatch(/grant_type/);
  });

  it('accepts reserved characters in compact filters, sorts and cursors', async () => {
    const res = await request(t.app)
      .get('/studies?filter=id:nmdc:sty-11-x,name.search:soil&sort=name:desc&cursor=*')
      .expect(200);
    expect(res.body.meta).toMatchObject({ count: 0, page: null, next_cursor: null });
    expect(res.body.results).toEqual([]);
  });
});

describe('response validation against the contract', () => {
  it('turns a response outside the contract into a 500 that names the contract', async () => {
    const app = express();
    app.use(express.json());
    app.use(
      OpenApiValidator.middleware({
        apiSpec: loadCurrentDocument() as any,
        validateRequests: { allowUnknownQueryParameters: false, coerceTypes: true },
        validateResponses: true,
        validateSecurity: false,
        ignoreUndocumented: true,
      }),
    );
    app.get('/version', (_req, res) => void res.json({}));
    app.get('/health', (_req, res) =>
      res.json({
        status: 'ok',
        web_server: true,
        database: true,
        store: 'sqlite',
        search_index: 'sqlite-fts5',
        collections: 0,
      }),
    );
    app.use(errorHandler);

    const bad = await request(app).get('/version').expect(500);
    expect(bad.body.detail).toMatch(/^Response does not match the contract: /);
    expect(bad.body.detail).toContain('nmdc-runtime');
    const good = await request(app).get('/health').expect(200);
    expect(good.body.status).toBe('ok');
  });
});
