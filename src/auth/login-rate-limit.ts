/**
 * Brute-force protection for `/token`, the login page and password changes, built so that a
 * stranger cannot turn it against an account's owner (NIST SP 800-63B 5.2.2; OWASP's
 * authentication guidance: a lockout must not hand attackers a denial of service):
 *
 * - failed attempts are counted per account (username or client_id) and client address together,
 *   so a guesser is held back at their own address while the owner, elsewhere, still logs in;
 * - every attempt from one address counts against a ceiling for that address, so one address
 *   cannot guess at many accounts;
 * - attempts on one account from addresses it has never logged in from count against a ceiling
 *   for the account (NIST's 100), so guessing spread over many addresses is held back too, while
 *   the addresses the account logged in from recently (30 days) are never held back by it.
 *
 * IPv6 addresses count by their /64 network, which one client usually holds whole. Counters live
 * in the StateStore every server process shares, so `WORKERS=N` processes enforce one limit, in
 * fixed windows aligned to the clock. An attempt is counted before the credentials are checked,
 * with one atomic increment, so concurrent guesses cannot all slip in under a limit together; a
 * successful login clears its account-and-address count and marks the address as known. Over a
 * limit: 429 with `Retry-After` (the end of the window).
 */
import { createHash } from 'node:crypto';
import net from 'node:net';
import { LoginRateLimited } from '../errors.ts';
import type { StateStore } from '../store/port.ts';

/** Limits, adjustable by tests. */
export const loginLimits = {
  /** Unsuccessful attempts on one account from one client address per window. */
  failuresPerAccountAndAddress: 10,
  /** Attempts (successful or not) from one client address per window; generous for shared NATs. */
  attemptsPerAddress: 300,
  /** Attempts on one account per window from addresses it has not logged in from. */
  attemptsPerAccountFromNewAddresses: 100,
  /** How long an address the account logged in from stays known, in days. */
  knownAddressDays: 30,
  windowSeconds: 15 * 60,
};

export const TOO_MANY_FOR_ACCOUNT_AND_ADDRESS =
  'Too many failed login attempts for this account from this address. Try again later.';
export const TOO_MANY_FROM_ADDRESS = 'Too many login attempts from this address. Try again later.';
export const TOO_MANY_FROM_NEW_ADDRESSES =
  'Too many login attempts for this account from addresses it has not logged in from. Try again later, or from an address you have logged in from before.';

const PAIR_FAILURES = 'login-failures-account-address';
const ADDRESS_ATTEMPTS = 'login-attempts-address';
const NEW_ADDRESS_ATTEMPTS = 'login-attempts-account-new-address';
const KNOWN_ADDRESSES = 'login-known-address';

/** Names chosen by callers are keyed by a fixed-size digest. */
const digest = (text: string) => createHash('sha256').update(text).digest('base64url');
const accountKey = digest;

/**
 * The current window, aligned to the clock so that every process names it alike: counters are
 * keyed by the window's number and expire with it.
 */
function currentWindow(now: number): { number: number; secondsLeft: number } {
  const length = loginLimits.windowSeconds * 1000;
  const number = Math.floor(now / length);
  return { number, secondsLeft: ((number + 1) * length - now) / 1000 };
}

/** The eight 16-bit groups of an IPv6 address, as numbers. */
function ipv6Groups(address: string): number[] {
  const [head, tail] = address.includes('::') ? address.split('::') : [address, undefined];
  const parse = (part: string | undefined) => (part ? part.split(':') : []);
  const headGroups = parse(head);
  const tailGroups = parse(tail);
  // An embedded IPv4 tail (`::1.2.3.4`) stands for two groups.
  const expand = (groups: string[]) =>
    groups.flatMap((g) => {
      if (!g.includes('.')) return [parseInt(g, 16)];
      const [a, b, c, d] = g.split('.').map(Number) as [number, number, number, number];
      return [(a << 8) | b, (c << 8) | d];
    });
  const first = expand(headGroups);
  const last = expand(tailGroups);
  const zeros = tail === undefined ? [] : new Array<number>(8 - first.length - last.length).fill(0);
  return [...first, ...zeros, ...last];
}

/**
 * What attempts from `address` are counted under: an IPv4 address (IPv4-mapped IPv6 included) as
 * it is, an IPv6 address by its /64 network.
 */
export function addressKey(address: string): string {
  const mapped = address.slice('::ffff:'.length);
  if (address.toLowerCase().startsWith('::ffff:') && net.isIPv4(mapped)) return mapped;
  if (net.isIPv4(address)) return address;
  const unzoned = address.split('%')[0]!;
  if (net.isIPv6(unzoned)) {
    const network = ipv6Groups(unzoned).slice(0, 4);
    return `${network.map((g) => g.toString(16)).join(':')}::/64`;
  }
  // Not an address (a proxy passed on something else): counted under a digest of what it is.
  return `other:${digest(address)}`;
}

export class LoginRateLimiter {
  constructor(private readonly state: StateStore) {}

  /**
   * Counts the attempt on `account` from `address`; throws 429 when a limit is over (an attempt
   * refused for its address is not counted against the account).
   */
  async admit(account: string | undefined, address: string): Promise<void> {
    const window = currentWindow(Date.now());
    const from = addressKey(address);
    const count = (kind: string, key: string) =>
      this.state.increment(kind, `${window.number}:${key}`, window.secondsLeft);
    if ((await count(ADDRESS_ATTEMPTS, from)) > loginLimits.attemptsPerAddress) {
      throw new LoginRateLimited(TOO_MANY_FROM_ADDRESS, window.secondsLeft);
    }
    if (account === undefined) return;
    const who = accountKey(account);
    if ((await count(PAIR_FAILURES, `${who}:${from}`)) > loginLimits.failuresPerAccountAndAddress) {
      throw new LoginRateLimited(TOO_MANY_FOR_ACCOUNT_AND_ADDRESS, window.secondsLeft);
    }
    if ((await this.state.get(KNOWN_ADDRESSES, `${who}:${from}`)) !== undefined) return;
    if ((await count(NEW_ADDRESS_ATTEMPTS, who)) > loginLimits.attemptsPerAccountFromNewAddresses) {
      throw new LoginRateLimited(TOO_MANY_FROM_NEW_ADDRESSES, window.secondsLeft);
    }
  }

  /**
   * A successful login clears the count of unsuccessful attempts on the account from this address,
   * and makes the address one the account logs in from.
   */
  async succeeded(account: string | undefined, address: string): Promise<void> {
    if (account === undefined) return;
    const who = accountKey(account);
    const from = addressKey(address);
    await this.state.delete(PAIR_FAILURES, `${currentWindow(Date.now()).number}:${who}:${from}`);
    await this.state.put(
      KNOWN_ADDRESSES,
      `${who}:${from}`,
      { since: new Date().toISOString() },
      loginLimits.knownAddressDays * 86400,
    );
  }
}
