import { describe, expect, it } from 'vitest';
import { hashSecret, setBcryptCost, verifySecret } from '../../src/accounts/index.ts';
import { basicCredentials, expiresOf } from '../../src/auth/token-endpoint.ts';
import { turnsDuring } from '../support/event-loop-turns.ts';

describe('secret checks', () => {
  it('spend about as long on an unknown account as on a wrong password (a bcrypt compare either way)', async () => {
    setBcryptCost(8);
    const hash = await hashSecret('the-real-password');
    await verifySecret('warm-up', undefined);
    const time = async (run: () => Promise<boolean>) => {
      const start = performance.now();
      for (let i = 0; i < 5; i++) expect(await run()).toBe(false);
      return performance.now() - start;
    };
    const wrongPassword = await time(() => verifySecret('wrong', hash));
    const unknownAccount = await time(() => verifySecret('wrong', undefined));
    expect(unknownAccount / wrongPassword).toBeGreaterThan(0.3);
    expect(await verifySecret('the-real-password', hash)).toBe(true);
  });

  it('hash and compare at the production cost on a thread of their own, so the event loop keeps turning', async () => {
    setBcryptCost(10);
    try {
      const hash = await hashSecret('the-real-password');
      expect(hash).toMatch(/^\$2[aby]\$10\$/);
      const { result, turns } = await turnsDuring(() =>
        Promise.all([
          verifySecret('the-real-password', hash),
          verifySecret('wrong', hash),
          verifySecret('wrong', undefined),
        ]),
      );
      expect(result).toEqual([true, false, false]);
      // Four bcrypt runs of tens of milliseconds each: on the event loop, bcryptjs gives it a turn
      // only every 100 ms.
      expect(turns).toBeGreaterThan(50);
    } finally {
      setBcryptCost(4);
    }
  });
});

describe('expiresOf', () => {
  it('splits a lifetime into days, hours and minutes', () => {
    expect(expiresOf(86400)).toEqual({ days: 1, hours: 0, minutes: 0 });
    expect(expiresOf(1800)).toEqual({ days: 0, hours: 0, minutes: 30 });
    expect(expiresOf(2 * 86400 + 3 * 3600 + 4 * 60 + 59)).toEqual({ days: 2, hours: 3, minutes: 4 });
  });
});

describe('basicCredentials', () => {
  const basic = (text: string) => `Basic ${Buffer.from(text).toString('base64')}`;

  it('reads client_id and secret, form-decoding each part', () => {
    expect(basicCredentials(basic('sys0abc:s3cr%3At'))).toEqual({ id: 'sys0abc', secret: 's3cr:t' });
    expect(basicCredentials(basic('sys0abc:a:b'))).toEqual({ id: 'sys0abc', secret: 'a:b' });
  });

  it('ignores other schemes and malformed values', () => {
    expect(basicCredentials(undefined)).toBeUndefined();
    expect(basicCredentials('Bearer abc')).toBeUndefined();
    expect(basicCredentials(basic('no-colon'))).toBeUndefined();
  });
});
