/**
 * A record read as JSON text (`getTextById`, which answers by id splice unparsed) is exactly
 * `JSON.stringify` of the record `getById` reads, whichever way it was written: one by one, in a
 * transaction with the caller's texts, or by the bulk load; records with escapes, astral and lone
 * surrogate characters, numbers JSON writes differently from how they may be typed, integer-like
 * keys and a `__proto__` key included.
 */
import { describe, expect, it } from 'vitest';
import { withTemporaryStore } from '../support/temporary-store.ts';
import { SqliteBulkLoad } from '../../src/store/sqlite/bulk-load.ts';
import type { Doc } from '../../src/store/port.ts';

function records(prefix: string): Doc[] {
  const protoKey = JSON.parse('{"__proto__": {"x": 1}}') as Record<string, unknown>;
  return [
    {
      id: `${prefix}-1`,
      type: 'nmdc:Biosample',
      name: 'Quote " backslash \\ slash / tab \t newline \n nul \u0000 del \u007f',
      description: 'é ü 中文 😀 lone \ud800 surrogate \udc00 end, line sep \u2028 para \u2029',
      numbers: [0, -0, 1e21, 1e-7, 0.1 + 0.2, 123456789012345680000, -1.5e300, 5e-324],
      nested: { 10: 'ten', 2: 'two', b: [true, false, null], a: { deep: [[[]]] } },
    },
    { id: `${prefix}-2`, type: 'nmdc:Biosample', ...protoKey, '': 'empty key', 'a.b': { $c: 1 } },
    { id: `${prefix}-3`, type: 'nmdc:Biosample' },
  ];
}

async function expectTexts(
  store: {
    getById(c: string, id: string): Promise<Doc | null>;
    getTextById(c: string, id: string): Promise<string | null>;
  },
  docs: Doc[],
): Promise<void> {
  for (const doc of docs) {
    const text = await store.getTextById('biosample_set', doc.id);
    expect(text, doc.id).toBe(JSON.stringify(await store.getById('biosample_set', doc.id)));
    expect(text, doc.id).toBe(JSON.stringify(doc));
  }
  expect(await store.getTextById('biosample_set', 'nmdc:bsm-11-none')).toBeNull();
  expect(await store.getTextById('study_set', docs[0]!.id)).toBeNull();
}

describe('records read as JSON text', () => {
  it('are JSON.stringify of the records read, written one by one, atomically with texts, or in bulk', async () => {
    await withTemporaryStore(async (store) => {
      const single = records('nmdc:bsm-11-one');
      await store.upsertMany('biosample_set', single);
      await expectTexts(store, single);

      const atomic = records('nmdc:bsm-11-atomic');
      await store.upsertAtomically([
        { collection: 'biosample_set', docs: atomic, texts: atomic.map((d) => JSON.stringify(d)) },
      ]);
      await expectTexts(store, atomic);

      const bulk = records('nmdc:bsm-11-bulk');
      const load = new SqliteBulkLoad(store);
      load.write('biosample_set', bulk);
      await load.finish(async () => {});
      await expectTexts(store, bulk);

      // A record replaced is read as its new text.
      const replaced = { ...single[2]!, name: 'replaced' };
      await store.upsertMany('biosample_set', [replaced]);
      await expectTexts(store, [replaced]);
    });
  });
});
