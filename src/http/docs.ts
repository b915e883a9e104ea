/**
 * The interactive docs: `/docs` (Swagger UI, served from our own origin with no outside network),
 * `/openapi.json` (2.13.0) and `/openapi-1.2.0.json`, and the same documents as YAML
 * (`/openapi.yaml`, `/openapi-1.2.0.yaml`).
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import express from 'express';
import YAML from 'yaml';
import type { Config } from '../config.ts';
import { servedDocuments } from './openapi-documents.ts';

const assetsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'docs');
// swagger-ui-dist ships no type declarations; it only tells where its files are. Its helper alone:
// the package's entry point loads the whole Swagger UI bundle into the server (about 0.2 s).
const absolutePath = createRequire(import.meta.url)('swagger-ui-dist/absolute-path.js') as () => string;
const swaggerUiDir = absolutePath();

/** Served at /docs/assets/: only what the page loads, not the whole package folder. */
const SWAGGER_UI_ASSETS = [
  'swagger-ui.css',
  'index.css',
  'swagger-ui-bundle.js',
  'swagger-ui-standalone-preset.js',
  'favicon-32x32.png',
  'favicon-16x16.png',
];

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The docs page; `externalLabel` names the external sign-in in the banner shown after it. */
export const docsPage = (externalLabel = 'ORCID') => `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="UTF-8">
    <title>NMDC metadata service API</title>
    <link rel="stylesheet" type="text/css" href="/docs/assets/swagger-ui.css">
    <link rel="stylesheet" type="text/css" href="/docs/assets/index.css">
    <link rel="stylesheet" type="text/css" href="/docs/docs.css">
    <link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png" sizes="32x32">
    <link rel="icon" type="image/png" href="/docs/assets/favicon-16x16.png" sizes="16x16">
  </head>
  <body>
    <div id="nmdc-login-banner" role="status" hidden>
      <span>Signed in with ${escapeHtml(externalLabel)}. For command-line use, send this header:</span>
      <code id="nmdc-login-token"></code>
      <button type="button" id="nmdc-login-show">Show token</button>
      <button type="button" id="nmdc-login-copy">Copy token</button>
    </div>
    <div id="swagger-ui" data-api-urls="/openapi.json /openapi-1.2.0.json"></div>
    <script src="/docs/assets/swagger-ui-bundle.js" charset="UTF-8"></script>
    <script src="/docs/assets/swagger-ui-standalone-preset.js" charset="UTF-8"></script>
    <script src="/docs/docs-init.js" charset="UTF-8"></script>
  </body>
</html>
`;

export function docsRouter(config: Pick<Config, 'externalOidc'>): express.Router {
  const { current, legacy } = servedDocuments(config.externalOidc);
  const page = docsPage(config.externalOidc?.label);
  // Serialized once: the documents never change while the process runs. The YAML forms, rarely
  // asked for and slower to write (about 0.2 s each), on first request instead of at start-up.
  const currentJson = JSON.stringify(current);
  const legacyJson = JSON.stringify(legacy);
  const asYaml = (document: object) => {
    let text: string | undefined;
    return () => (text ??= YAML.stringify(document, { aliasDuplicateObjects: false, lineWidth: 0 }));
  };
  const currentYaml = asYaml(current);
  const legacyYaml = asYaml(legacy);
  const router = express.Router();

  // The root sends people (and liveness probes of existing clients) to the docs, as the original does.
  router.get('/', (_req, res) => res.redirect(303, '/docs'));
  router.get('/openapi.json', (_req, res) => void res.type('json').send(currentJson));
  router.get('/openapi-1.2.0.json', (_req, res) => void res.type('json').send(legacyJson));
  // application/yaml (RFC 9512).
  router.get('/openapi.yaml', (_req, res) => void res.type('application/yaml').send(currentYaml()));
  router.get('/openapi-1.2.0.yaml', (_req, res) => void res.type('application/yaml').send(legacyYaml()));

  router.get(
    ['/docs', '/docs/'],
    (_req, res) => void res.type('html').set('Cache-Control', 'no-cache').send(page),
  );
  router.get('/docs/docs-init.js', (_req, res) => res.sendFile(path.join(assetsDir, 'docs-init.js')));
  router.get('/docs/docs.css', (_req, res) => res.sendFile(path.join(assetsDir, 'docs.css')));
  // Swagger UI finishes OAuth logins (authorization code + PKCE) on this page.
  router.get('/docs/oauth2-redirect.html', (_req, res) =>
    res.sendFile(path.join(swaggerUiDir, 'oauth2-redirect.html')),
  );
  router.get('/docs/oauth2-redirect.js', (_req, res) =>
    res.sendFile(path.join(swaggerUiDir, 'oauth2-redirect.js')),
  );
  for (const asset of SWAGGER_UI_ASSETS) {
    router.get(`/docs/assets/${asset}`, (_req, res) =>
      res.sendFile(path.join(swaggerUiDir, asset), { maxAge: '1d' }),
    );
  }
  return router;
}
