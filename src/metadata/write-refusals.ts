/**
 * The refusals of an update or delete as the original service words them: the schema's messages
 * about the records as they would become, and the references a write would leave broken.
 */
import { BrokenReferences, InvalidAfterUpdate } from '../errors.ts';
import type { BrokenReference } from '../validation/incoming-references.ts';

const BROKEN_PREFIX =
  'The operation was not performed, because performing it would have left behind one or more broken references.';

/** A string as Python's `repr` quotes it. */
const pyQuoted = (s: string) =>
  s.includes("'") && !s.includes('"')
    ? `"${s.replace(/\\/g, '\\\\')}"`
    : `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** The records as they would become fail the schema: the listed messages, as the original words them. */
export function invalidAfterUpdate(collection: string, listed: string[]): InvalidAfterUpdate {
  // As the original words it: the validator's answer as Python prints a dict of lists.
  return new InvalidAfterUpdate(
    `Schema document(s) would be invalid after proposed update: {${pyQuoted(collection)}: [${listed.map(pyQuoted).join(', ')}]}`,
    { validation_errors: { [collection]: listed } },
  );
}

/** A delete that would leave references to the deleted records: the first one named, all listed. */
export function brokenByDelete(broken: BrokenReference[]): BrokenReferences {
  const first = broken[0]!;
  const holder = first.id === null ? 'a document without id' : `the document having 'id'='${first.id}'`;
  return new BrokenReferences(
    `${BROKEN_PREFIX} For example: The document having 'id'='${first.target}' in the collection ` +
      `'${first.target_collection}' is referenced by ${holder} in the collection '${first.collection}'. ` +
      'Deleting the former would leave behind a broken reference. Update or delete referring document(s) and try again.',
    { broken_references: broken },
  );
}

/** An update that would leave references broken: each one described and listed. */
export function brokenByUpdate(broken: BrokenReference[]): BrokenReferences {
  const details = broken.map(
    (b) =>
      `The document having id='${b.id ?? 'None'}' in the collection '${b.collection}' contains a reference ` +
      `(in its '${b.slot}' field, referring to the document having id='${b.target}') which would be broken.`,
  );
  return new BrokenReferences(`${BROKEN_PREFIX} Details: ${details.join(', ')}`, {
    broken_references: broken.map(({ target_collection, ...rest }) =>
      target_collection ? { ...rest, target_collection } : rest,
    ),
  });
}
