import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';

describe('WORKERS', () => {
  it('defaults to one process, takes a count or auto (one per core)', () => {
    expect(loadConfig({}).workers).toBe(1);
    expect(loadConfig({ WORKERS: '3' }).workers).toBe(3);
    expect(loadConfig({ WORKERS: 'auto' }).workers).toBe(os.availableParallelism());
  });

  it('refuses anything else, naming the variable', () => {
    for (const bad of ['0', '-1', '2.5', 'many', '65'])
      expect(() => loadConfig({ WORKERS: bad })).toThrow(
        new ConfigError(`WORKERS must be an integer between 1 and 64, got "${bad}"`),
      );
  });
});
