/**
 * Port of the original's tests/test_api/test_metadata.py (v2.13.0). The original calls its
 * changesheet functions directly: `load_changesheet` (read and resolve a sheet against the
 * records), `_validate_changesheet`, `mongo_update_command_for` and `update_mongo_db` on a scratch
 * copy of the records. `POST /metadata/changesheets:validate` is those steps behind one endpoint
 * (the original's endpoint calls the same functions): it answers the update commands
 * (`update_cmd`) and, per record, `doc_after` and `validation_errors` from a copy, leaving the
 * records untouched. The fixture files are the original's (files/SOURCE.md).
 */
import { describe, expect, it } from 'vitest';
import { withUpstreamServer, type UpstreamServer } from './support/harness.ts';
import { fixtureJson, fixtureText, uploadChangesheet } from './support/files.ts';

let server: UpstreamServer;

withUpstreamServer((started) => (server = started));

/** The record of a fixture file, stored (the original inserts it when absent). */
async function seed(collection: string, file: string): Promise<Record<string, any>> {
  const doc = fixtureJson(file);
  await server.add(collection, [doc]);
  return doc;
}

/** `POST /metadata/changesheets:validate` of a fixture sheet: its status (200 unless given) and answer. */
async function validateSheet(file: string, status = 200): Promise<Record<string, any>> {
  const res = await uploadChangesheet(server.url, 'validate', file, fixtureText(file));
  expect(res.status, res.text).toBe(status);
  return res.json;
}

/**
 * The sheets below leave records the schema refuses (11.23, like the original's 11.14, wants a
 * `type` on every nested object). The original's tests read the updated copy straight from
 * `update_mongo_db`, whatever its validation errors; through the endpoint (the original's as ours)
 * such a sheet is a 422 whose detail holds the update commands and the errors, so the ports read
 * the update commands.
 */
async function refusedSheet(
  file: string,
): Promise<{ update_cmd: Record<string, any>; validation_errors: string[][] }> {
  const answer = await validateSheet(file, 422);
  expect(Object.keys(answer.detail).sort()).toEqual(['update_cmd', 'validation_errors']);
  return answer.detail;
}

/** The `$set` of every update command of one record, merged. */
function setsOf(updateCmd: Record<string, any>, id: string): Record<string, unknown> {
  return Object.assign({}, ...updateCmd[id].updates.map((u: { u: { $set?: object } }) => u.u.$set ?? {}));
}

/** The validation errors of every record the sheet changes (the original raises when any). */
const errorsOf = (answer: Record<string, any>) =>
  (answer.results_of_updates as Array<{ validation_errors: unknown[] }>).flatMap((r) => r.validation_errors);

describe('tests/test_api/test_metadata.py', () => {
  it('test_metadata.py::test_load_changesheet', async () => {
    await seed('study_set', 'nmdc_sty-11-pzmd0x14.json');
    const answer = await validateSheet('changesheet-without-separator3.tsv');
    // The sheet was read and resolved: one record's update commands, by its id.
    expect(Object.keys(answer.update_cmd)).toEqual(['nmdc:sty-11-pzmd0x14']);
    expect(answer.update_cmd['nmdc:sty-11-pzmd0x14'].update).toBe('study_set');
  });

  it('test_metadata.py::test_changesheet_update_slot_with_range_decimal', async () => {
    await seed('biosample_set', 'nmdc_bsm-11-0pyv7738.json');
    // Here a changesheet's records are checked for references too (the original checks the schema
    // only): the biosample names a study that the original's test database holds and ours must.
    const broken = await refusedSheet('test_changesheet_decimal_value.tsv');
    expect(broken.validation_errors.flat().join('\n')).toContain("'nmdc:sty-11-db67n062'");
    await server.add('study_set', [
      { id: 'nmdc:sty-11-db67n062', type: 'nmdc:Study', study_category: 'research_study' },
    ]);
    const answer = await validateSheet('test_changesheet_decimal_value.tsv');
    expect(errorsOf(answer)).toEqual([]);
    const after = answer.results_of_updates[0].doc_after;
    expect(after.depth).toMatchObject({ has_numeric_value: 0.38, has_raw_value: '0.38 m', has_unit: 'm' });
    expect(after.elev).toBe(719);
  });

  it('test_metadata.py::test_changesheet_update_slot_with_range_bytes', async () => {
    await seed('data_object_set', 'nmdc_dobj-11-000n1286.json');
    const answer = await validateSheet('test_changesheet_update_bytes_ranged_slot.tsv');
    expect(errorsOf(answer)).toEqual([]);
    expect(answer.results_of_updates[0].doc_after.file_size_bytes).toBe(1271907);
  });

  it('test_metadata.py::test_changesheet_update_slot_with_range_uriorcurie', async () => {
    await seed('study_set', 'nmdc_sty-11-pzmd0x14.json');
    const answer = await validateSheet('test_changesheet_insert_study_doi.tsv');
    expect(errorsOf(answer)).toEqual([]);
    expect(answer.results_of_updates[0].doc_after.associated_dois).toContainEqual({
      doi_value: 'doi:10.25345/C5CG8S',
      doi_category: 'dataset_doi',
      doi_provider: 'massive',
      type: 'nmdc:Doi',
    });
  });

  it('test_metadata.py::test_changesheet_study_update', async () => {
    // The fixture `docs_for_seeded_db_for_changesheet_study_update`: the study of the sheet.
    await seed('study_set', 'nmdc_sty-11-pzmd0x14.json');
    const before = (await server.get('study_set', 'nmdc:sty-11-pzmd0x14'))!;
    const piInfo = { name: 'NEW PI NAME 1', has_raw_value: 'NEW RAW NAME 1', type: 'nmdc:PersonValue' };
    expect(before.principal_investigator).not.toEqual(piInfo);
    expect(before.name).not.toBe('NEW STUDY NAME 1');
    expect(before.ecosystem).not.toBe('NEW ECOSYSTEM 1');
    expect(before.ecosystem_type).not.toBe('NEW ECOSYSTEM_TYPE 1');
    expect(before.ecosystem_subtype).not.toBe('NEW ECOSYSTEM_SUBTYPE 1');
    const websites = ['HTTP://TEST1.EXAMPLE.COM', 'HTTP://TEST2.EXAMPLE.COM'];
    for (const website of websites) expect(before.websites ?? []).not.toContain(website);

    const answer = await validateSheet('changesheet-without-separator3.tsv');
    const first = answer.results_of_updates[0];
    expect(first.doc_after.principal_investigator).toEqual(piInfo);
    expect(first.doc_after.name).toBe('NEW STUDY NAME 1');
    expect(first.doc_after.ecosystem).toBe('NEW ECOSYSTEM 1');
    expect(first.doc_after.ecosystem_type).toBe('NEW ECOSYSTEM_TYPE 1');
    expect(first.doc_after.ecosystem_subtype).toBe('NEW ECOSYSTEM_SUBTYPE 1');
    for (const website of websites) expect(first.doc_after.websites).toContain(website);
    expect(first.validation_errors).toEqual([]);
    // Validation works on a copy: the stored study is unchanged.
    expect(await server.get('study_set', 'nmdc:sty-11-pzmd0x14')).toEqual(before);
  });

  it('test_metadata.py::test_changesheet_array_item_nested_attributes', async () => {
    await seed('study_set', 'study_no_credit_associations.json');
    const before = (await server.get('study_set', 'nmdc:sty-11-r2h77870'))!;
    const creditInfo = {
      applied_roles: ['Conceptualization'],
      applies_to_person: {
        name: 'CREDIT NAME 1',
        email: 'CREDIT_NAME_1@foo.edu',
        orcid: 'orcid:0000-0000-0000-0001',
      },
    };
    expect(before.has_credit_associations ?? []).not.toContainEqual(creditInfo);

    const { update_cmd, validation_errors } = await refusedSheet(
      'changesheet-array-item-nested-attributes.tsv',
    );
    expect(validation_errors.flat()).toEqual([
      "'type' is a required property in /study_set/0/has_credit_associations/0 (id 'nmdc:sty-11-r2h77870')",
      "'type' is a required property in /study_set/0/has_credit_associations/0/applies_to_person (id 'nmdc:sty-11-r2h77870')",
    ]);
    const after = { ...before, ...setsOf(update_cmd, 'nmdc:sty-11-r2h77870') };
    expect(after).toHaveProperty('has_credit_associations');
    expect(after.has_credit_associations).toContainEqual(creditInfo);
  });

  it('test_metadata.py::test_update_pi_websites', async () => {
    await seed('study_set', 'study_no_credit_associations.json');
    const before = (await server.get('study_set', 'nmdc:sty-11-r2h77870'))!;
    const piInfo = {
      has_raw_value: 'NEW PI NAME',
      name: 'NEW PI NAME',
      profile_image_url: 'https://portal.nersc.gov/NEW-PI-NAME.jpg',
      orcid: 'orcid:0000-0000-0000-0000',
      websites: ['https://www.ornl.gov/staff-profile/NEW-PI-NAME'],
    };
    expect(before.principal_investigator ?? []).not.toEqual(piInfo);

    const { update_cmd, validation_errors } = await refusedSheet('changesheet-update-pi-websites.tsv');
    expect(validation_errors.flat()).toEqual([
      "'type' is a required property in /study_set/0/principal_investigator (id 'nmdc:sty-11-r2h77870')",
    ]);
    const sets = setsOf(update_cmd, 'nmdc:sty-11-r2h77870');
    for (const [key, value] of Object.entries(piInfo))
      expect(sets[`principal_investigator.${key}`], key).toEqual(value);
  });

  it('test_metadata.py::test_update_biosample_ph', async () => {
    await seed('biosample_set', 'nmdc_bsm-11-5nhz3402.json');
    // The fixture is a record of an older schema, so the sheet is refused; its update command is
    // what the original's test reads.
    const { update_cmd } = await refusedSheet('test_changesheet_update_one_ph.tsv');
    // The value is set as a number (the slot's range is a float), not as the sheet's text.
    const ph = update_cmd['nmdc:bsm-11-5nhz3402'].updates[0].u.$set.ph;
    expect(typeof ph).toBe('number');
    expect(ph).toBe(5.58);
  });
});
