/**
 * Page tokens of listings (`max_page_size`, `page_token`): a token continues exactly the listing
 * it came from, and asking for the same page again (a site client polling `GET /jobs`) answers the
 * same token without writing it again while it has at least half its lifetime left.
 */
import { describe, expect, it } from 'vitest';
import type { Doc, Filter, StateStore } from '../../src/store/port.ts';
import { tokenPage } from '../../src/metadata/token-pages.ts';
import { CONTINUATION_TTL_SECONDS, saveContinuationOnce } from '../../src/metadata/paging-state.ts';

/** A state store in memory that counts its writes. */
function countingState(): StateStore & { puts: number } {
  const values = new Map<string, unknown>();
  const state = {
    puts: 0,
    async put(kind: string, key: string, value: unknown) {
      state.puts++;
      values.set(`${kind}/${key}`, structuredClone(value));
    },
    async get<T>(kind: string, key: string) {
      return values.get(`${kind}/${key}`) as T | undefined;
    },
  };
  return state as unknown as StateStore & { puts: number };
}

const records: Doc[] = Array.from({ length: 7 }, (_, i) => ({ id: `job-${i}`, n: i }));
const source = async (filter: Filter, page: { afterId?: string; limit?: number }) =>
  records
    .filter((r) => (filter.even ? (r.n as number) % 2 === 0 : true))
    .filter((r) => page.afterId === undefined || r.id > page.afterId)
    .slice(0, page.limit ?? Infinity);

describe('tokenPage', () => {
  it('answers the same token for the same page without writing it twice, and continues from it', async () => {
    const state = countingState();
    const ask = (filter: Filter, page_token?: string) =>
      tokenPage(state, 'jobs', { filter: () => filter, max_page_size: 3, page_token }, source);
    const first = await ask({});
    const again = await ask({});
    expect(first.resources.map((r) => r.id)).toEqual(['job-0', 'job-1', 'job-2']);
    expect(again.next_page_token).toBe(first.next_page_token);
    expect(state.puts).toBe(1);
    const second = await ask({}, first.next_page_token);
    expect(second.resources.map((r) => r.id)).toEqual(['job-3', 'job-4', 'job-5']);
    const evens = await ask({ even: true });
    expect(evens.resources.map((r) => r.id)).toEqual(['job-0', 'job-2', 'job-4']);
    expect(evens.next_page_token).not.toBe(first.next_page_token);
    expect((await ask({ even: true }, evens.next_page_token)).resources.map((r) => r.id)).toEqual(['job-6']);
    expect(state.puts).toBe(3);
  });

  it('writes a reused token again once half its lifetime has passed, so it never expires while handed out', async () => {
    const state = countingState();
    const value = { scope: 'jobs', filter: {}, projection: null, lastId: 'job-9' };
    const t0 = 1_000_000;
    const key = await saveContinuationOnce(state, 'page-token', value, t0);
    const halfLife = (CONTINUATION_TTL_SECONDS['page-token'] * 1000) / 2;
    expect(await saveContinuationOnce(state, 'page-token', value, t0 + halfLife - 1)).toBe(key);
    expect(state.puts).toBe(1);
    expect(await saveContinuationOnce(state, 'page-token', value, t0 + halfLife)).toBe(key);
    expect(state.puts).toBe(2);
    expect(key).toMatch(/^[\w-]{24}$/);
  });

  it('writes the token into every state store it is handed out from', async () => {
    const value = { scope: 'jobs', filter: {}, projection: null, lastId: 'job-3' };
    const [one, other] = [countingState(), countingState()];
    const key = await saveContinuationOnce(one, 'page-token', value);
    expect(await saveContinuationOnce(other, 'page-token', value)).toBe(key);
    expect([one.puts, other.puts]).toEqual([1, 1]);
    expect(await other.get('page-token', key)).toEqual(value);
  });
});
