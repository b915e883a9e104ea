/**
 * `src/auth` builds on `src/accounts`, never the reverse: no domain file under src/accounts imports
 * from src/auth, directly or through other modules of the project (type-only imports included,
 * since they tie the modules together just the same for readers and tools). The routes files
 * (`routes.ts`, `*-routes.ts`) sit above every capability: they take the composition root's
 * services, auth included.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { chainsInto, importsOf, relative, ROOT, sourceFiles } from '../support/project-imports.ts';

const ACCOUNTS = path.join(ROOT, 'src/accounts');
const AUTH = path.join(ROOT, 'src/auth');

const insideAuth = (file: string) => file.startsWith(AUTH + path.sep);
const isRoutesFile = (file: string) => /(^|-)routes\.ts$/.test(path.basename(file));
const accountsDomain = () => sourceFiles(ACCOUNTS).filter((file) => !isRoutesFile(file));

describe('src/accounts does not depend on src/auth', () => {
  it('has no file under src/accounts that imports from src/auth', () => {
    const offending = accountsDomain().flatMap((file) =>
      importsOf(file)
        .filter(insideAuth)
        .map((target) => `${relative(file)} -> ${relative(target)}`),
    );
    expect(offending).toEqual([]);
  });

  it('reaches no file under src/auth through other modules either', () => {
    expect(chainsInto(accountsDomain(), insideAuth)).toEqual([]);
  });

  it('reads the import specifiers it checks (a self-test on a file known to import accounts)', () => {
    expect(importsOf(path.join(AUTH, 'index.ts')).map(relative)).toContain('src/accounts/index.ts');
  });
});
