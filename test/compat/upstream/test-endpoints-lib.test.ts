/**
 * Port of the original's tests/test_api/test_endpoints_lib.py (v2.13.0):
 * `simulate_updates_and_check_references`, the check `POST /queries:run` makes of an update
 * command before applying it (the references the updated records hold, and the references other
 * records hold to them, whose `id` an update may change). The original calls the function and
 * reads its list of messages; the port sends the same command to `POST /queries:run`, which runs
 * that check: where the list would be empty the command is applied (200), otherwise it is refused
 * with the original's 422, whose `detail` joins the messages after `Details: `. The port reads the
 * messages back from that text, in order, and checks `broken_references` (one per message) and
 * that nothing was written.
 *
 * The original's fixture stores `part_of` as one string; the schema makes it a list, and the
 * endpoint (unlike the function alone) validates the updated records, so lists are used here.
 */
import { describe, expect, it } from 'vitest';
import { TEST_USER, withUpstreamServer, type UpstreamServer } from './support/harness.ts';
import { Faker, type Record_ } from './support/faker.ts';
import type { WireResponse } from '../support/wire.ts';

let server: UpstreamServer;
const faker = new Faker();
withUpstreamServer((started) => (server = started));

/** The allowance that lets a user send update and delete commands. */
const WRITE = '/queries:run(query_cmd:DeleteCommand)';
const MISSING_STUDY = 'nmdc:sty-00-000099';
const DETAILS =
  'The operation was not performed, because performing it would have left behind one or more broken references. Details: ';

/** `make_violation_message`'s text. */
const MESSAGE =
  /^The document having id='[^']*' in the collection '[^']+' contains a reference \(in its '[^']+' field, referring to the document having id='[^']*'\) which would be broken\.$/;

interface Seeded {
  studyA: Record_;
  studyB: Record_;
  biosampleA: Record_;
  biosampleB: Record_;
}

/**
 * The fixture `seeded_db`: study B part of study A, biosample A of study A, biosample B of study
 * B, named so that statements can match them by name.
 */
async function seeded(): Promise<Seeded> {
  const [studyA] = faker.studies(1, { name: 'Study A' }) as [Record_];
  const [studyB] = faker.studies(1, { name: 'Study B', part_of: [studyA.id] }) as [Record_];
  const [biosampleA] = faker.biosamples(1, [studyA.id], { name: 'Biosample A' }) as [Record_];
  const [biosampleB] = faker.biosamples(1, [studyB.id], { name: 'Biosample B' }) as [Record_];
  const studyIds = [studyA.id, studyB.id];
  const biosampleIds = [biosampleA.id, biosampleB.id];
  expect(await server.count('study_set', { id: { $in: studyIds } })).toBe(0);
  expect(await server.count('biosample_set', { id: { $in: biosampleIds } })).toBe(0);
  await server.add('study_set', [studyA, studyB]);
  await server.add('biosample_set', [biosampleA, biosampleB]);
  await server.allow(TEST_USER.username, WRITE);
  return { studyA, studyB, biosampleA, biosampleB };
}

type Statement = { q: Record<string, unknown>; u: Record<string, unknown> };

/** `UpdateCommand(update=collection, updates=statements)`, sent as testuser. */
const update = (collection: string, statements: Statement[]) =>
  server.userClient().request('POST', '/queries:run', { update: collection, updates: statements });

/** The same command, which must be refused: the response. */
const refusedUpdate = (collection: string, statements: Statement[]) =>
  server.userClient().failing('POST', '/queries:run', { update: collection, updates: statements });

/**
 * The function's list of violation messages, read from a refusal: the 422's `detail` joins them
 * with `, ` after `Details: `; `broken_references` holds one entry per message.
 */
function violationMessages(response: WireResponse): string[] {
  expect(response.status).toBe(422);
  const detail = response.json.detail as string;
  expect(typeof detail).toBe('string');
  expect(detail.startsWith(DETAILS)).toBe(true);
  const messages = detail.slice(DETAILS.length).split(/, (?=The document having id=)/);
  for (const message of messages) expect(message).toMatch(MESSAGE);
  expect(response.json.broken_references).toHaveLength(messages.length);
  return messages;
}

/** The stored records, unchanged by a refused command. */
async function expectUnchanged(records: Record_[]) {
  for (const record of records) {
    const collection = record.type === 'nmdc:Study' ? 'study_set' : 'biosample_set';
    expect(await server.get(collection, record.id)).toMatchObject(record);
  }
}

describe('tests/test_api/test_endpoints_lib.py: TestSimulateUpdatesAndCheckReferences', () => {
  it('test_endpoints_lib.py::TestSimulateUpdatesAndCheckReferences::test_it_returns_empty_list_when_operation_does_not_break_any_references', async () => {
    const { studyA } = await seeded();
    const response = await update('study_set', [
      { q: { name: 'Study A' }, u: { $set: { name: 'Study Alpha' } } },
    ]);
    expect(response.status).toBe(200);
    expect(response.json).toMatchObject({ n: 1, nModified: 1 });
    expect((await server.get('study_set', studyA.id))!.name).toBe('Study Alpha');
  });

  it('test_endpoints_lib.py::TestSimulateUpdatesAndCheckReferences::test_it_returns_empty_list_when_operation_repairs_the_references_it_breaks', async () => {
    const { studyA, studyB, biosampleA } = await seeded();
    // The initial state: no record has the new id; study B is part of study A.
    expect(await server.count('study_set', { id: MISSING_STUDY })).toBe(0);
    expect((await server.get('study_set', studyB.id))!.part_of).toContain(studyA.id);
    // The biosample referring to study A goes, so that only the reference repaired here remains.
    await server.remove('biosample_set', [biosampleA.id]);

    // One command breaks the reference (study A's id changes) and repairs it (study B follows).
    const response = await update('study_set', [
      { q: { name: 'Study A' }, u: { $set: { id: MISSING_STUDY } } },
      { q: { name: 'Study B' }, u: { $set: { part_of: [MISSING_STUDY] } } },
    ]);
    try {
      expect(response.status).toBe(200);
      expect(response.json).toMatchObject({ n: 2, nModified: 2 });
      expect(await server.get('study_set', studyA.id)).toBeNull();
      expect((await server.get('study_set', MISSING_STUDY))!.name).toBe('Study A');
      expect((await server.get('study_set', studyB.id))!.part_of).toEqual([MISSING_STUDY]);
    } finally {
      await server.remove('study_set', [MISSING_STUDY]);
    }
  });

  it('test_endpoints_lib.py::TestSimulateUpdatesAndCheckReferences::test_it_returns_error_messages_when_breaking_incoming_references', async () => {
    const { studyA, studyB, biosampleA, biosampleB } = await seeded();
    const messages = violationMessages(
      await refusedUpdate('study_set', [{ q: { name: 'Study A' }, u: { $set: { id: MISSING_STUDY } } }]),
    );
    // Biosample A and study B both refer to study A.
    expect(messages).toHaveLength(2);
    expect(messages[0]).toContain('biosample_set');
    expect(messages[0]).toContain(biosampleA.id);
    expect(messages[1]).toContain('study_set');
    expect(messages[1]).toContain(studyB.id);
    await expectUnchanged([studyA, studyB, biosampleA, biosampleB]);
  });

  it('test_endpoints_lib.py::TestSimulateUpdatesAndCheckReferences::test_it_returns_error_messages_when_breaking_incoming_reference_from_other_collection_only', async () => {
    const { studyA, studyB, biosampleA } = await seeded();
    // The referring study goes, leaving the reference from the other collection.
    await server.remove('study_set', [studyB.id]);
    const messages = violationMessages(
      await refusedUpdate('study_set', [{ q: { name: 'Study A' }, u: { $set: { id: MISSING_STUDY } } }]),
    );
    expect(messages).toHaveLength(1);
    expect(messages[0]).toContain('biosample_set');
    expect(messages[0]).toContain(biosampleA.id);
    expect(messages[0]).toContain(`referring to the document having id='${studyA.id}'`);
    await expectUnchanged([studyA, biosampleA]);
  });

  it('test_endpoints_lib.py::TestSimulateUpdatesAndCheckReferences::test_it_returns_error_messages_when_breaking_incoming_reference_from_same_collection_only', async () => {
    const { studyA, studyB, biosampleA } = await seeded();
    // The referring biosample goes, leaving the reference from the same collection.
    await server.remove('biosample_set', [biosampleA.id]);
    const messages = violationMessages(
      await refusedUpdate('study_set', [{ q: { name: 'Study A' }, u: { $set: { id: MISSING_STUDY } } }]),
    );
    expect(messages).toHaveLength(1);
    expect(messages[0]).toContain('study_set');
    expect(messages[0]).toContain(studyB.id);
    expect(messages[0]).toContain("in its 'part_of' field");
    await expectUnchanged([studyA, studyB]);
  });

  it('test_endpoints_lib.py::TestSimulateUpdatesAndCheckReferences::test_it_returns_error_messages_when_adding_broken_outgoing_reference_to_same_collection', async () => {
    const { studyA } = await seeded();
    const messages = violationMessages(
      await refusedUpdate('study_set', [
        { q: { name: 'Study A' }, u: { $set: { part_of: [MISSING_STUDY] } } },
      ]),
    );
    expect(messages).toHaveLength(1);
    expect(messages[0]).toContain('study_set');
    expect(messages[0]).toContain(studyA.id);
    expect(messages[0]).toContain(`referring to the document having id='${MISSING_STUDY}'`);
    await expectUnchanged([studyA]);
  });

  it('test_endpoints_lib.py::TestSimulateUpdatesAndCheckReferences::test_it_returns_error_messages_when_adding_broken_outgoing_reference_to_other_collection', async () => {
    const { biosampleA } = await seeded();
    const messages = violationMessages(
      await refusedUpdate('biosample_set', [
        { q: { name: 'Biosample A' }, u: { $set: { associated_studies: [MISSING_STUDY] } } },
      ]),
    );
    expect(messages).toHaveLength(1);
    expect(messages[0]).toContain('biosample_set');
    expect(messages[0]).toContain(biosampleA.id);
    expect(messages[0]).toContain("in its 'associated_studies' field");
    await expectUnchanged([biosampleA]);
  });

  it('test_endpoints_lib.py::TestSimulateUpdatesAndCheckReferences::test_it_returns_error_messages_when_document_having_new_id_has_broken_reference', async () => {
    const { biosampleA } = await seeded();
    const newBiosampleId = 'nmdc:bsm-00-000099';
    expect(await server.count('biosample_set', { id: newBiosampleId })).toBe(0);
    expect(await server.count('study_set', { id: MISSING_STUDY })).toBe(0);
    // The record gets a broken reference and a new id in the same command: it is followed across
    // the change of id, and named by the id it had.
    const messages = violationMessages(
      await refusedUpdate('biosample_set', [
        { q: { name: 'Biosample A' }, u: { $set: { associated_studies: [MISSING_STUDY] } } },
        { q: { name: 'Biosample A' }, u: { $set: { id: newBiosampleId } } },
      ]),
    );
    expect(messages).toHaveLength(1);
    expect(messages[0]).toContain('biosample_set');
    expect(messages[0]).toContain(biosampleA.id);
    expect(await server.get('biosample_set', newBiosampleId)).toBeNull();
    await expectUnchanged([biosampleA]);
  });
});
