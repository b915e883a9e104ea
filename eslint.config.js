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
);
