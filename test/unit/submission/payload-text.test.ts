/**
 * The stored copy of a submitted payload is its `JSON.stringify`, built from the records' texts
 * already serialised for the write wherever those are the payload's own records.
 */
import { describe, expect, it } from 'vitest';
import { cleanDocs } from '../../../src/store/clean-docs.ts';
import type { Doc } from '../../../src/store/port.ts';
import {
  payloadBytes,
  payloadText,
  recordsByCollection,
  inBatches,
} from '../../../src/submission/json-submission.ts';

/** The writes as RecordWriter.prepare makes them: batches of cleaned records with their texts. */
function preparedWrites(payload: Record<string, unknown>) {
  return recordsByCollection(payload).flatMap(({ collection, docs }) =>
    inBatches(docs).map((batch) => {
      const clean = cleanDocs(batch);
      return { collection, docs: clean, texts: clean.map((d) => JSON.stringify(d)) };
    }),
  );
}

describe('payloadText', () => {
  it('is JSON.stringify of the payload, whatever its records and other members', async () => {
    const biosamples = Array.from({ length: 4500 }, (_, i) => ({
      id: `nmdc:bsm-11-${i}`,
      name: `Core "${i}" \u2028 é \\ ${'\ud800'}`,
      depth: { has_numeric_value: i / 3, has_unit: 'm' },
    }));
    const payload = JSON.parse(
      JSON.stringify({
        '@type': 'Database',
        biosample_set: biosamples,
        // A record with an _id (the store drops it) and records without ids (keyed by the store).
        study_set: [{ id: 'nmdc:sty-11-a', _id: 'x' }, { id: 'nmdc:sty-11-b' }],
        functional_annotation_agg: [{ metagenome_annotation_id: 'nmdc:wfmgan-1', count: 3 }],
        data_object_set: [],
        'key "quoted"': { nested: [1, null, true] },
      }),
    ) as Record<string, unknown>;
    const writes = preparedWrites(payload);
    expect(writes.length).toBeGreaterThan(3);
    expect(payloadText(payload, writes)).toBe(JSON.stringify(payload));
    expect(payloadText(payload, [])).toBe(JSON.stringify(payload));
    // The bytes, encoded piece by piece, are the whole text's.
    expect((await payloadBytes(payload, writes)).equals(Buffer.from(JSON.stringify(payload), 'utf8'))).toBe(
      true,
    );
    // Texts of other records (written over since) are never taken for the payload's.
    const other = writes.map((w) => ({ ...w, docs: w.docs.map((d) => ({ ...d }) as Doc) }));
    expect(payloadText(payload, other)).toBe(JSON.stringify(payload));
  });
});
