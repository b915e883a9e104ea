/**
 * The store and query layers (src/store, src/query, search/) sit below the HTTP layer: they throw
 * domain errors (src/errors.ts) and no file of theirs imports from src/http, directly or through
 * other modules of the project (type-only imports included). The HTTP error handler maps their
 * errors to statuses.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { chainsInto, importsOf, relative, ROOT, sourceFiles } from '../support/project-imports.ts';
import { statusOf } from '../../src/http/error-handler.ts';
import { InvalidQuery, InvalidRecord, UnsupportedQuery } from '../../src/errors.ts';

const LOWER_LAYERS = ['src/store', 'src/query', 'search'].map((dir) => path.join(ROOT, dir));
const HTTP = path.join(ROOT, 'src/http');

const insideHttp = (file: string) => file.startsWith(HTTP + path.sep);

describe('the store and query layers do not depend on src/http', () => {
  it('has no file under src/store, src/query or search/ that imports from src/http', () => {
    const offending = LOWER_LAYERS.flatMap(sourceFiles).flatMap((file) =>
      importsOf(file)
        .filter(insideHttp)
        .map((target) => `${relative(file)} -> ${relative(target)}`),
    );
    expect(offending).toEqual([]);
  });

  it('reaches no file under src/http through other modules either', () => {
    expect(chainsInto(LOWER_LAYERS.flatMap(sourceFiles), insideHttp)).toEqual([]);
  });

  it('reads the import specifiers it checks (a self-test on a file known to import src/http)', () => {
    expect(importsOf(path.join(ROOT, 'src/app.ts')).some(insideHttp)).toBe(true);
  });
});

describe('statusOf', () => {
  it('answers 400 for input that can never be valid and 422 for a query the service will not run', () => {
    expect(statusOf(new InvalidQuery('skip must not be negative'))).toBe(400);
    expect(statusOf(new InvalidRecord('record 0 has no string id'))).toBe(400);
    expect(statusOf(new UnsupportedQuery('$regex must be a string'))).toBe(422);
  });

  it('keeps the detail as given and names the error by its class', () => {
    const err = new UnsupportedQuery('Filter is nested deeper than 20 levels');
    expect(err.detail).toBe('Filter is nested deeper than 20 levels');
    expect(err.message).toBe(err.detail);
    expect(err.name).toBe('UnsupportedQuery');
  });
});
