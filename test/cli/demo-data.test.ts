import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { openStore } from '../../src/store/index.ts';
import { openSearchIndex } from '../../search/index.ts';
import { DEMO_DATA_SET, prepareData } from '../../src/startup.ts';
import { plannedCounts } from '../../src/data/generator.ts';

describe('prepareData', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });

  async function open(env: Record<string, string>) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-demo-'));
    dirs.push(dir);
    const config = loadConfig({ DATA_DIR: dir, LOG_LEVEL: 'silent', ...env });
    const logger = pino({ level: 'silent' });
    const store = await openStore(config, logger);
    const searchIndex = await openSearchIndex(config, store, logger);
    return {
      config,
      logger,
      store,
      searchIndex,
      close: async () => (await searchIndex.close(), await store.close()),
    };
  }

  it('loads the demo set into an empty store, with records matching the documentation examples', async () => {
    const deps = await open({ DEMO_DATA: 'true' });
    try {
      await prepareData(deps);
      const counts = plannedCounts(DEMO_DATA_SET);
      for (const [collection, n] of Object.entries(counts))
        expect(await deps.store.count(collection, {})).toBe(n);
      expect(await deps.store.count('biosample_set', { ecosystem_category: 'Plants' })).toBeGreaterThan(0);
      expect(
        await deps.store.count('biosample_set', {
          'lat_lon.latitude': { $gt: 45.0 },
          ecosystem_category: 'Plants',
        }),
      ).toBeGreaterThan(0);
      expect(
        await deps.store.count('study_set', { name: { $regex: 'soil', $options: 'i' } }),
      ).toBeGreaterThan(0);

      // A second start finds data and loads nothing more.
      await deps.store.deleteMany('data_object_set', {}, 10);
      await prepareData(deps);
      expect(await deps.store.count('data_object_set', {})).toBe(counts.data_object_set - 10);
    } finally {
      await deps.close();
    }
  });

  it('leaves the store empty when demo data is off, and ignores non-metadata collections', async () => {
    const off = await open({ DEMO_DATA: 'false' });
    try {
      await prepareData(off);
      expect(await off.store.nonEmptyCollections()).toEqual([]);
    } finally {
      await off.close();
    }
    const on = await open({ DEMO_DATA: 'true' });
    try {
      await on.store.upsertMany('users', [{ id: 'admin' }]);
      await prepareData(on);
      expect(await on.store.count('study_set', {})).toBe(DEMO_DATA_SET.studies);
    } finally {
      await on.close();
    }
  });
});
