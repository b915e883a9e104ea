/**
 * Port of the original's tests/test_util.py (v2.13.0), its one test that checks something the
 * service holds: the id patterns of the NMDC JSON Schema it validates with (the vendored 11.23.0
 * file, as the original checks the schema its package ships). The two others read the
 * `nmdc_etl_staging` database of the original's deployment (listed in README.md).
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SCHEMA_FILE_VERSION } from '../../../src/schema/schema-view.ts';

interface Definition {
  properties?: { id?: { pattern?: string } };
}

const jsonSchema = () =>
  JSON.parse(
    fs.readFileSync(
      new URL(
        `../../../src/schema/vendor/nmdc-schema-${SCHEMA_FILE_VERSION}/nmdc_materialized_patterns.schema.json`,
        import.meta.url,
      ),
      'utf8',
    ),
  ) as { $defs: Record<string, Definition> };

describe('tests/test_util.py', () => {
  it('test_util.py::test_nmdc_jsonschema_using_new_id_scheme', () => {
    // Every class with a patterned `id` takes ids of the `nmdc:` prefix, or of another CURIE prefix.
    const validPrefixPatterns = ['^(nmdc):', '^[a-zA-Z0-9][a-zA-Z0-9_\\.]+:'];
    // Schema 11.23 (the original 2.13.0 ships 11.14) adds `NcbiTaxon`, whose pattern names its one
    // CURIE prefix literally (`^NCBITaxon:\d+$`): a prefix of the same rule, written out.
    const literalCuriePrefix = /^\^[a-zA-Z0-9][a-zA-Z0-9_.]+:/;
    const patterned = Object.entries(jsonSchema().$defs).filter(
      ([, definition]) => definition.properties?.id?.pattern !== undefined,
    );
    // Many classes do (every identified record class), so the loop below checks something.
    expect(patterned.length).toBeGreaterThan(50);
    const failing = patterned
      .filter(
        ([, definition]) =>
          !validPrefixPatterns.some((p) => definition.properties!.id!.pattern!.startsWith(p)),
      )
      .map(([name, definition]) => `${name}.id: ${definition.properties!.id!.pattern}`);
    expect(failing).toEqual(['NcbiTaxon.id: ^NCBITaxon:\\d+$']);
    for (const text of failing) expect(text.slice(text.indexOf(' ') + 1)).toMatch(literalCuriePrefix);
    expect(patterned.find(([name]) => name === 'Biosample')![1].properties!.id!.pattern).toMatch(
      /^\^\(nmdc\):bsm-/,
    );
  });
});
