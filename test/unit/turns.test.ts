/** The turn-taking helpers of src/turns.ts. */
import { describe, expect, it } from 'vitest';
import { concatInTurns, mapInTurns, PacedSize } from '../../src/turns.ts';
import { turnsDuring } from '../support/event-loop-turns.ts';

describe('PacedSize', () => {
  it('scales a step toward its time, at most doubling it, within its bounds', () => {
    const size = new PacedSize(1000, 4, 100, 50_000);
    size.took(1); // four times too fast: doubled, not quadrupled
    expect(size.size).toBe(2000);
    size.took(16); // four times too slow: a quarter
    expect(size.size).toBe(500);
    size.took(1000); // far too slow: the lower bound
    expect(size.size).toBe(100);
    for (let i = 0; i < 20; i++) size.took(0);
    expect(size.size).toBe(50_000);
  });
});

describe('mapInTurns and concatInTurns', () => {
  it('answer as map and Buffer.concat, taking turns between their steps', async () => {
    const items = Array.from({ length: 1000 }, (_, i) => i);
    const mapped = await turnsDuring(() => mapInTurns(items, 100, (i) => i * 2));
    expect(mapped.result).toEqual(items.map((i) => i * 2));
    expect(mapped.turns).toBeGreaterThanOrEqual(9);

    const parts = Array.from({ length: 6 }, (_, i) => Buffer.alloc(5 * 1024 * 1024, i));
    const joined = await turnsDuring(() => concatInTurns(parts));
    expect(joined.result.equals(Buffer.concat(parts))).toBe(true);
    expect(joined.turns).toBeGreaterThanOrEqual(3);
  });
});
