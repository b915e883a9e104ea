/**
 * The encoders against requests the clients really prepared (copied verbatim from what
 * `requests` 2.34.2 built for nmdc_api_utilities): if these drift, every compat test drifts.
 */
import { describe, expect, it } from 'vitest';
import { jsonDumps, requestsForm, requestsQuery } from './python.ts';

describe('the requests-style encoders', () => {
  it('build the query string of CollectionSearch.get_records with an empty filter and projection', () => {
    expect(
      requestsQuery([
        ['filter', ''],
        ['max_page_size', 100],
        ['projection', ''],
      ]),
    ).toBe('filter=&max_page_size=100&projection=');
  });

  it('build a json.dumps filter with ids and a projection', () => {
    const filter = jsonDumps({
      id: { $in: ['nmdc:bsm-11-006pnx90', 'nmdc:bsm-11-002vgm56', 'nmdc:bsm-11-00dkyf35'] },
    });
    expect(
      requestsQuery([
        ['filter', filter],
        ['max_page_size', 3],
        ['projection', 'id,name'],
      ]),
    ).toBe(
      'filter=%7B%22id%22%3A+%7B%22%24in%22%3A+%5B%22nmdc%3Absm-11-006pnx90%22%2C+%22nmdc%3Absm-11-002vgm56%22%2C+%22nmdc%3Absm-11-00dkyf35%22%5D%7D%7D&max_page_size=3&projection=id%2Cname',
    );
  });

  it('repeat list parameters, drop None and write booleans as Python does', () => {
    expect(
      requestsQuery([
        ['types', ['nmdc:Study', 'nmdc:DataObject']],
        ['ids', ['nmdc:bsm-11-002vgm56', 'nmdc:bsm-11-006pnx90']],
        ['hydrate', false],
        ['max_page_size', 500],
        ['page_token', null],
      ]),
    ).toBe(
      'types=nmdc%3AStudy&types=nmdc%3ADataObject&ids=nmdc%3Absm-11-002vgm56&ids=nmdc%3Absm-11-006pnx90&hydrate=False&max_page_size=500',
    );
  });

  it('dump JSON with Python separators and ASCII escapes', () => {
    expect(jsonDumps({ a: [1, { b: 'é' }], c: {}, d: [] })).toBe(
      '{"a": [1, {"b": "\\u00e9"}], "c": {}, "d": []}',
    );
    expect(
      requestsForm([
        ['grant_type', 'password'],
        ['username', 'a b'],
        ['password', 'p&q=r'],
      ]),
    ).toBe('grant_type=password&username=a+b&password=p%26q%3Dr');
  });
});
