/**
 * Write commands whose checked write comes just after someone else's write (`meanwhile`): the
 * window between an update's check and its write, made certain.
 */
import type { RecordWriter } from '../../search/writer.ts';
import { CollectionsReader } from '../../src/metadata/collections-reader.ts';
import { WriteCommands, type RecordWrites } from '../../src/metadata/write-commands.ts';
import { QueryPlanner } from '../../src/query/planner/planner.ts';
import { IncomingReferences } from '../../src/validation/incoming-references.ts';
import type { TestApp } from './server.ts';

export function commandsRacedBy(
  t: Pick<TestApp, 'store' | 'searchIndex' | 'edgeIndex'>,
  writer: RecordWriter,
  meanwhile: () => Promise<unknown>,
): WriteCommands {
  const racing: RecordWrites = {
    writeIfUnchanged: async (change) => {
      await meanwhile();
      return writer.writeIfUnchanged(change);
    },
  };
  return new WriteCommands(
    new CollectionsReader(new QueryPlanner(t.store, t.searchIndex)),
    t.store,
    racing,
    new IncomingReferences(t.store, t.edgeIndex),
  );
}
