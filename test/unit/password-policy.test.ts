/**
 * The password rules (NIST SP 800-63B): length in code points, no composition rules, and no
 * common, breached, username-made or easily guessed passwords; each refusal names its rule.
 */
import { describe, expect, it } from 'vitest';
import { passwordProblem } from '../../src/accounts/password-policy.ts';
import { hashSecret, setBcryptCost, verifySecret } from '../../src/accounts/secrets.ts';
import { generateSecret } from '../../src/accounts/secrets.ts';
import { ConfigError, loadConfig } from '../../src/config.ts';

setBcryptCost(4);

describe('password rules', () => {
  it('accepts passphrases of ordinary words, with spaces, without digits or capitals', async () => {
    for (const password of [
      'correct horse battery staple',
      'tidal marsh soil cores',
      'gone fishing by the lake',
    ]) {
      expect(await passwordProblem(password, { username: 'alice' })).toBeNull();
    }
  });

  it('refuses fewer than 12 characters, counting code points rather than UTF-16 units or bytes', async () => {
    expect(await passwordProblem('short one', { username: 'alice' })).toBe(
      'password must be at least 12 characters long',
    );
    // 11 emoji are 22 UTF-16 units and 44 bytes, but 11 characters.
    expect(await passwordProblem('🦠'.repeat(5) + '🌊🌲🍄🐙🪸🧫', { username: 'alice' })).toBe(
      'password must be at least 12 characters long',
    );
    // Any characters count: emoji, CJK, accents.
    expect(await passwordProblem('🦠🌊 湿地の土壌 échantillon', { username: 'alice' })).toBeNull();
  });

  it('refuses more than 128 characters', async () => {
    const words = 'estuary sediment core from the northern shore ';
    const long = words.repeat(3).slice(0, 129);
    expect([...long]).toHaveLength(129);
    expect(await passwordProblem(long, { username: 'alice' })).toBe(
      'password must be at most 128 characters long',
    );
    expect(await passwordProblem(long.slice(0, 128), { username: 'alice' })).toBeNull();
  });

  it('raises the minimum when configured, never below 12', async () => {
    expect(await passwordProblem('tidal marsh soil cores', {}, { minLength: 30 })).toBe(
      'password must be at least 30 characters long',
    );
    expect(await passwordProblem('twelve chars', {}, { minLength: 4 })).not.toBe(
      'password must be at least 4 characters long',
    );
    expect(await passwordProblem('eleven char', {}, { minLength: 4 })).toBe(
      'password must be at least 12 characters long',
    );
  });

  it('refuses the most common breached passwords, whatever their case', async () => {
    for (const password of ['qwerty123456', 'QWERTY123456', '1qaz2wsx3edc', 'administrator']) {
      expect(await passwordProblem(password, { username: 'alice' })).toBe(
        'password is one of the most common passwords found in breaches; choose another',
      );
    }
  });

  it("refuses a password made of the username or the service's name, give or take digits and symbols", async () => {
    for (const password of [
      'alice-wonderland',
      'Alice-Wonderland!',
      'alice.wonderland.alice.wonderland',
      'alice.wonderland2024',
      'nmdc-runtime-1',
      'NMDC admin 2025!',
    ]) {
      expect(await passwordProblem(password, { username: 'alice.wonderland' })).toBe(
        "password must not be made of the username or the service's name",
      );
    }
    expect(
      await passwordProblem('alice wonderland reads soil cores', { username: 'alice.wonderland' }),
    ).toBeNull();
  });

  it('refuses passwords guessable in under 10^8 attempts, saying why', async () => {
    const cases: Array<[string, RegExp]> = [
      ['summersummer', /repeats a word or pattern/],
      ['aaaaaaaaaaaaaaaa', /repeats characters/],
      ['abcdefghijklmnop', /sequence/],
      ['qwertyuiop[]\\', /row of keys/],
      ['dragon1234567', /commonly used password/],
    ];
    for (const [password, why] of cases) {
      const problem = await passwordProblem(password, { username: 'alice' });
      expect(problem).toMatch(/^password is too easy to guess \(/);
      expect(problem).toMatch(why);
    }
  });

  it('never quotes the password it refuses', async () => {
    for (const password of ['short', 'qwerty123456', 'passwordpassword', 'alice-alice-alice']) {
      expect(await passwordProblem(password, { username: 'alice' })).not.toContain(password);
    }
  });

  it('passes the generated passwords of the demo administrator and create-admin', async () => {
    for (let i = 0; i < 20; i++)
      expect(await passwordProblem(generateSecret(18), { username: 'admin' })).toBeNull();
  });
});

describe('password hashing for passwords longer than bcrypt reads', () => {
  it('tells apart two 128-character passwords that share their first 72 bytes', async () => {
    const prefix = 'x'.repeat(100);
    const hash = await hashSecret(`${prefix} first ending`);
    expect(await verifySecret(`${prefix} first ending`, hash)).toBe(true);
    expect(await verifySecret(`${prefix} other ending`, hash)).toBe(false);
  });

  it('matches the same characters typed in another Unicode normal form', async () => {
    const composed = 'café au lait sur la terrasse'; // é as one code point
    const decomposed = composed.normalize('NFD'); // e + combining accent
    expect(decomposed).not.toBe(composed);
    expect(await verifySecret(decomposed, await hashSecret(composed))).toBe(true);
  });
});

describe('PASSWORD_MIN_LENGTH', () => {
  it('defaults to 12 and accepts larger values', () => {
    expect(loadConfig({}).passwordMinLength).toBe(12);
    expect(loadConfig({ PASSWORD_MIN_LENGTH: '16' }).passwordMinLength).toBe(16);
  });

  it('refuses values below 12, above 128 or not integers, naming the variable', () => {
    for (const value of ['8', '129', 'twelve', '12.5']) {
      expect(() => loadConfig({ PASSWORD_MIN_LENGTH: value })).toThrow(ConfigError);
      expect(() => loadConfig({ PASSWORD_MIN_LENGTH: value })).toThrow(/PASSWORD_MIN_LENGTH/);
    }
  });
});
