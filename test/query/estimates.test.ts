import { afterEach, describe, expect, it, vi } from 'vitest';
import { SelectivityEstimator } from '../../src/query/planner/estimates.ts';
import type { DocumentStore } from '../../src/store/port.ts';

/** A store whose sample is 100 records, one in four of them `Soil`; counts the draws. */
function sampledStore() {
  const texts = Array.from({ length: 100 }, (_, i) =>
    JSON.stringify({ id: `nmdc:bsm-11-${i}`, name: i % 4 === 0 ? `Soil ${i}` : `Water ${i}` }),
  );
  const store = { texts, draws: 0, sampleTexts: async () => (store.draws++, [...store.texts]) };
  return store;
}

describe('SelectivityEstimator', () => {
  afterEach(() => vi.restoreAllMocks());
  const soil = { name: { $regex: '^Soil' } };

  it('scales a kept tally to the collection as it grows, and tallies again only with a new sample', async () => {
    const store = sampledStore();
    const estimator = new SelectivityEstimator(store as unknown as DocumentStore, 100);
    const tally = vi.spyOn(SelectivityEstimator.prototype as unknown as { tally: () => unknown }, 'tally');
    const first = await estimator.estimate('biosample_set', soil, true, 10_000);
    expect(first).toMatchObject({ matches: 2500, selectivity: 0.25, sampled: 100, hits: 25, exact: false });
    // Each insert changes the size: the same sample's tally is scaled, not taken again.
    const grown = await estimator.estimate('biosample_set', soil, true, 10_400);
    expect(grown).toMatchObject({ matches: 2600, selectivity: 0.25, hits: 25 });
    expect(tally).toHaveBeenCalledTimes(1);
    expect(store.draws).toBe(1);
    // Another filter is tallied on its own.
    const water = await estimator.estimate('biosample_set', { name: { $regex: '^Water' } }, true, 10_400);
    expect(water).toMatchObject({ matches: 7800, hits: 75 });
    expect(tally).toHaveBeenCalledTimes(2);
    // Grown by more than a tenth: a new sample is drawn (the old one answers meanwhile), then tallied.
    await estimator.estimate('biosample_set', soil, true, 20_000);
    await vi.waitFor(() => expect(store.draws).toBe(2));
    const redrawn = await estimator.estimate('biosample_set', soil, true, 20_000);
    expect(redrawn).toMatchObject({ matches: 5000, hits: 25 });
    expect(tally.mock.calls.length).toBeGreaterThanOrEqual(3);
    const calls = tally.mock.calls.length;
    await estimator.estimate('biosample_set', soil, true, 20_001);
    expect(tally).toHaveBeenCalledTimes(calls);
  });

  it('keeps a whole-collection sample exact: a new size draws it again', async () => {
    const store = sampledStore();
    const estimator = new SelectivityEstimator(store as unknown as DocumentStore, 1000);
    expect(await estimator.estimate('biosample_set', soil, true, 100)).toMatchObject({
      matches: 25,
      exact: true,
    });
    store.texts.push(JSON.stringify({ id: 'nmdc:bsm-11-100', name: 'Soil 100' }));
    expect(await estimator.estimate('biosample_set', soil, true, 101)).toMatchObject({
      matches: 26,
      exact: true,
    });
    expect(store.draws).toBe(2);
  });
});
