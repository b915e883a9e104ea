/** The turn-taking helpers of src/turns.ts. */
import express from 'express';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createServer } from '../../src/app.ts';
import {
  asBulkWork,
  concatInTurns,
  giveWayMs,
  mapInTurns,
  nextTurn,
  PacedSize,
  requestCame,
  Turns,
} from '../../src/turns.ts';
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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('bulk work', () => {
  afterEach(() => void vi.useRealTimers());

  it('gives way while other requests come: three times as long as it worked, 30 ms at most; other work does not', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'setImmediate', 'performance'] });
    /** The first whole ms of (fake) time after which `turn(worked)` has resolved (Infinity past 100). */
    const resolvedAfter = async (turn: (worked: number) => Promise<void>, worked: number) => {
      let done = false;
      void turn(worked).then(() => (done = true));
      for (let ms = 0; ms <= 100; ms++) {
        await vi.advanceTimersByTimeAsync(ms === 0 ? 0 : 1);
        if (done) return ms;
      }
      return Infinity;
    };
    /** A turn after `worked` ms of (pretended) work. */
    const plain = (worked: number) => {
      vi.advanceTimersByTime(worked);
      return nextTurn();
    };
    const bulk = (worked: number) => asBulkWork(() => plain(worked));
    // No request yet: bulk work takes its turns at once.
    expect(giveWayMs(5)).toBe(0);
    expect(await resolvedAfter(bulk, 8)).toBe(0);
    requestCame();
    expect(giveWayMs(5)).toBe(15);
    expect(giveWayMs(20)).toBe(30);
    expect(await resolvedAfter(bulk, 8)).toBe(24);
    expect(await resolvedAfter(bulk, 20)).toBe(30);
    // Work that is no bulk work takes its turns at once.
    expect(await resolvedAfter(plain, 8)).toBe(0);
    // Bulk work counts from when it last resumed, through awaits and timers; `Turns` gives way too.
    const chain = (worked: number) =>
      asBulkWork(async () => {
        await nextTurn();
        await Promise.resolve();
        requestCame();
        vi.advanceTimersByTime(worked);
        await nextTurn();
      });
    expect(await resolvedAfter(chain, 6)).toBe(18);
    const inTurns = (worked: number) =>
      asBulkWork(async () => {
        const turns = new Turns();
        vi.advanceTimersByTime(worked);
        expect(turns.due()).toBe(true);
        await turns.give();
      });
    expect(await resolvedAfter(inTurns, 11)).toBe(30);
    // 100 ms after the last request it stops giving way.
    vi.advanceTimersByTime(101);
    expect(giveWayMs(5)).toBe(0);
    expect(await resolvedAfter(bulk, 8)).toBe(0);
  });

  it("is told of the service's requests, and not of large bodies", async () => {
    const app = express();
    app.all('/x', (req, res) => {
      req.resume();
      req.on('end', () => res.json({ ok: true }));
    });
    const server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    try {
      await sleep(120);
      expect(giveWayMs(5)).toBe(0);
      // A body of 1 MiB or more is bulk work itself.
      const large = await fetch(`http://127.0.0.1:${port}/x`, {
        method: 'POST',
        body: Buffer.alloc(1024 * 1024),
      });
      expect(await large.json()).toEqual({ ok: true });
      expect(giveWayMs(5)).toBe(0);
      const small = await fetch(`http://127.0.0.1:${port}/x`);
      expect(await small.json()).toEqual({ ok: true });
      expect(giveWayMs(5)).toBe(15);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
