/**
 * The import rules that keep the layout one idea (run by `npm run lint`):
 *   app.ts and src/http/ (HTTP for everyone) -> each capability's routes files -> capabilities
 *   -> query, search, schema -> ports.
 * Only src/http, src/app.ts and the routes files (`routes.ts`, `*-routes.ts`) may import Express
 * or src/http; nothing in src/ or search/ imports test/ or bench/; and no module imports itself
 * through others (type-only imports count: they tie modules together just the same).
 */
/** Files that may speak HTTP: the HTTP layer, the app, and each capability's routes files. */
const HTTP_SIDE = ['^src/http/', '^src/app[.]ts$', '(^|/)routes[.]ts$', '-routes[.]ts$'];

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A circle of imports: give the shared piece one home below every module that uses it.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'domain-imports-http',
      severity: 'error',
      comment:
        'Only src/http, src/app.ts and the routes files speak HTTP: throw an error of src/errors.ts ' +
        'instead, and read the request in the routes file.',
      from: { path: '^(src|search)/', pathNot: HTTP_SIDE },
      to: { path: ['^src/http/', '^node_modules/(express|@types/express)/'] },
    },
    {
      name: 'src-imports-tests-or-benchmarks',
      severity: 'error',
      comment: 'The service never depends on its tests or benchmarks.',
      from: { path: '^(src|search)/' },
      to: { path: '^(test|bench|contract-tests)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(generated|src/schema/vendor)/' },
    // Type-only imports are dependencies too.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.mts', '.js', '.mjs', '.json'] },
  },
};
