import { describe, expect, it } from 'vitest';
import {
  OperationIndex,
  readQueryString,
  type QueryParameter,
} from '../../../src/http/request-reading/index.ts';
import { loadValidationDocument, type OpenApiDocument } from '../../../src/http/openapi-documents.ts';

const params: QueryParameter[] = [
  { name: 'filter', kind: 'single' },
  { name: 'max_page_size', kind: 'single' },
  { name: 'hydrate', kind: 'boolean' },
  { name: 'ids', kind: 'list', itemKind: 'single' },
  { name: 'flags', kind: 'list', itemKind: 'boolean' },
];

const read = (raw: string) => readQueryString(raw, params);

describe('readQueryString', () => {
  it('drops empty values as absent parameters', () => {
    expect(read('filter=&max_page_size=20&hydrate=')).toEqual({ query: 'max_page_size=20', ignored: [] });
    expect(read('filter=&max_page_size=')).toEqual({ query: '', ignored: [] });
  });

  it('ignores parameters the operation does not take, an empty name included, and reports their names', () => {
    expect(read('&filter=x&foo=1&=3&foo=2&bar')).toEqual({ query: 'filter=x', ignored: ['foo', '', 'bar'] });
  });

  it('keeps the last value of a repeated single-valued parameter, even when it is empty', () => {
    expect(read('max_page_size=5&max_page_size=7').query).toBe('max_page_size=7');
    expect(read('filter=a&filter=').query).toBe('');
  });

  it('keeps every non-empty value of a list parameter, in order', () => {
    expect(read('ids=b&filter=x&ids=a&ids=&ids=c').query).toBe('ids=b&ids=a&ids=c&filter=x');
  });

  it.each([
    ['true', 'true'],
    ['True', 'true'],
    ['1', 'true'],
    ['YES', 'true'],
    ['on', 'true'],
    ['t', 'true'],
    ['y', 'true'],
    ['false', 'false'],
    ['False', 'false'],
    ['0', 'false'],
    ['no', 'false'],
    ['Off', 'false'],
    ['f', 'false'],
    ['n', 'false'],
  ])('reads the boolean word %s as %s', (word, value) => {
    expect(read(`hydrate=${word}`).query).toBe(`hydrate=${value}`);
    expect(read(`flags=${word}&flags=0`).query).toBe(`flags=${value}&flags=false`);
  });

  it('leaves a word that is not boolean for the validator to refuse', () => {
    expect(read('hydrate=maybe').query).toBe('hydrate=maybe');
  });

  it('decodes as the original does (+ is a space) and encodes what it hands on', () => {
    const { query } = read('filter=%7B%22name%22%3A+%22a+b%22%7D');
    expect(new URLSearchParams(query).get('filter')).toBe('{"name": "a b"}');
  });
});

describe('OperationIndex over the served document', () => {
  const index = new OperationIndex(loadValidationDocument() as OpenApiDocument);
  const names = (method: string, path: string) => index.queryParametersOf(method, path)?.map((p) => p.name);

  it('finds the query parameters of templated paths', () => {
    expect(names('get', '/nmdcschema/biosample_set')).toEqual([
      'filter',
      'projection',
      'max_page_size',
      'page_token',
    ]);
    expect(names('get', '/nmdcschema/biosample_set/nmdc:bsm-11-x')).toEqual(['projection']);
    expect(names('get', '/biosamples')).toEqual([
      'filter',
      'search',
      'sort',
      'page',
      'per_page',
      'cursor',
      'group_by',
      'fields',
    ]);
  });

  it('prefers literal paths over templated ones', () => {
    expect(names('get', '/nmdcschema/version')).toEqual([]);
    expect(names('get', '/nmdcschema/ids/nmdc:bsm-11-x')).toEqual([]);
  });

  it('matches a template that ends inside a segment, and tells methods apart', () => {
    expect(names('post', '/sites/lab-1:generateCredentials')).toEqual([]);
    expect(names('get', '/sites/lab-1')).toEqual([]);
    expect(names('get', '/sites')).toEqual(['filter', 'max_page_size', 'page_token']);
    expect(names('delete', '/sites')).toBeUndefined();
  });

  it('answers HEAD with the GET operation and knows the 1.2.0 paths', () => {
    expect(names('head', '/studies')).toContain('per_page');
    expect(names('get', '/activities')).toContain('per_page');
    expect(names('get', '/activities/nmdc:wfmgas-11-x')).toEqual([]);
  });

  it('leaves paths the document does not describe alone', () => {
    expect(index.queryParametersOf('get', '/docs')).toBeUndefined();
    expect(index.queryParametersOf('get', '/oidc/auth')).toBeUndefined();
  });
});
