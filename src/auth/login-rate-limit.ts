/**
 * Brute-force protection for `/token` and the login page: attempts are counted per account
 * (username or client_id) and per client address in fixed windows, in the StateStore that every
 * server process shares, so `WORKERS=N` processes enforce one limit rather than N. Over the
 * limit: 429 with `Retry-After` (the end of the window).
 *
 * An account's attempt is counted before its credentials are checked and the count is cleared by
 * a successful login, so what accumulates is attempts that did not succeed. Counting first, with
 * one atomic increment, means concurrent guesses cannot all slip in under the limit together.
 */
import { TooManyRequests } from '../errors.ts';
import type { StateStore } from '../store/port.ts';

/** Limits, adjustable by tests. */
export const loginLimits = {
  /** Unsuccessful attempts for one username or client_id per window. */
  failuresPerAccount: 10,
  /** Attempts (successful or not) from one client address per window; generous for shared NATs. */
  attemptsPerAddress: 300,
  windowSeconds: 15 * 60,
};

const ACCOUNT_ATTEMPTS = 'login-attempts-account';
const ADDRESS_ATTEMPTS = 'login-attempts-address';

/**
 * The current window, aligned to the clock so that every process names it alike: counters are
 * keyed by the window's number and expire with it.
 */
function currentWindow(now: number): { number: number; secondsLeft: number } {
  const length = loginLimits.windowSeconds * 1000;
  const number = Math.floor(now / length);
  return { number, secondsLeft: ((number + 1) * length - now) / 1000 };
}

export class LoginRateLimiter {
  constructor(private readonly state: StateStore) {}

  /**
   * Counts the attempt for the address and then the account; throws 429 when either is over its
   * limit (an attempt refused for its address is not counted against the account).
   */
  async admit(account: string | undefined, address: string): Promise<void> {
    const window = currentWindow(Date.now());
    const byAddress = await this.state.increment(
      ADDRESS_ATTEMPTS,
      `${window.number}:${address}`,
      window.secondsLeft,
    );
    if (byAddress > loginLimits.attemptsPerAddress) {
      throw new TooManyRequests(
        'Too many login attempts from this address. Try again later.',
        window.secondsLeft,
      );
    }
    if (account === undefined) return;
    const byAccount = await this.state.increment(
      ACCOUNT_ATTEMPTS,
      `${window.number}:${account}`,
      window.secondsLeft,
    );
    if (byAccount > loginLimits.failuresPerAccount) {
      throw new TooManyRequests(
        'Too many failed login attempts for this account. Try again later.',
        window.secondsLeft,
      );
    }
  }

  /** A successful login clears the account's count of unsuccessful attempts. */
  async succeeded(account: string | undefined): Promise<void> {
    if (account === undefined) return;
    await this.state.delete(ACCOUNT_ATTEMPTS, `${currentWindow(Date.now()).number}:${account}`);
  }
}
