import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'src/schema/vendor/**',
      'generated/**',
      'node_modules/**',
      'data/**',
      'artifacts/**',
      'pacts/**',
    ],
  },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  // SQLite (3.53, as better-sqlite3 builds it) reads a value bound to a bare LIMIT, GLOB or LIKE
  // parameter while planning, so it prepares such a statement again on every run (9-15 us each on
  // the project's machine). `LIMIT +?`, `GLOB +?` and `LIKE +?` bind the same value without that.
  {
    rules: {
      'no-restricted-syntax': [
        'error',
        ...['Literal[value', 'TemplateElement[value.raw'].map((node) => ({
          selector: `${node}=/\\b(LIMIT|GLOB|LIKE) [?@:$]/]`,
          message:
            'SQLite prepares a statement again on each run when a bare parameter is bound to LIMIT, GLOB or LIKE: write LIMIT +?, GLOB +? or LIKE +?',
        })),
      ],
    },
  },
  // Rules that need the types: a promise nobody awaits or handles, a promise where a callback
  // must return nothing (an Express handler's rejection is caught by Express 5, so those pass),
  // and a switch over a union that misses a member.
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
    },
  },
);
