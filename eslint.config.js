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
