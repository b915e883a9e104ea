/**
 * Brute-force protection for `/token`: failed attempts are counted per account (username or
 * client_id) and all attempts per client address, each in a fixed window. Over the limit: 429
 * with `Retry-After`. Counters live in the process; each process guards its own share of traffic.
 */
import { TooManyRequests } from '../http/errors.ts';

/** Limits, adjustable by tests. */
export const loginLimits = {
  /** Failed attempts for one username or client_id per window. */
  failuresPerAccount: 10,
  /** Attempts (failed or not) from one client address per window; generous for shared NATs. */
  attemptsPerAddress: 300,
  windowSeconds: 15 * 60,
};

interface Window {
  count: number;
  resetAt: number;
}

class FixedWindowCounter {
  private readonly windows = new Map<string, Window>();

  current(key: string, now: number): Window | undefined {
    const window = this.windows.get(key);
    if (window && window.resetAt <= now) {
      this.windows.delete(key);
      return undefined;
    }
    return window;
  }

  increment(key: string, now: number): void {
    const window = this.current(key, now);
    if (window) window.count += 1;
    else this.windows.set(key, { count: 1, resetAt: now + loginLimits.windowSeconds * 1000 });
    if (this.windows.size > 100_000) this.sweep(now);
  }

  reset(key: string): void {
    this.windows.delete(key);
  }

  private sweep(now: number): void {
    for (const [key, window] of this.windows) if (window.resetAt <= now) this.windows.delete(key);
  }
}

export class LoginRateLimiter {
  private readonly perAccount = new FixedWindowCounter();
  private readonly perAddress = new FixedWindowCounter();

  /** Throws 429 when either limit is already reached; otherwise counts the attempt for the address. */
  admit(account: string | undefined, address: string): void {
    const now = Date.now();
    const byAddress = this.perAddress.current(address, now);
    if (byAddress && byAddress.count >= loginLimits.attemptsPerAddress) {
      throw new TooManyRequests(
        'Too many login attempts from this address. Try again later.',
        (byAddress.resetAt - now) / 1000,
      );
    }
    if (account !== undefined) {
      const byAccount = this.perAccount.current(account, now);
      if (byAccount && byAccount.count >= loginLimits.failuresPerAccount) {
        throw new TooManyRequests(
          'Too many failed login attempts for this account. Try again later.',
          (byAccount.resetAt - now) / 1000,
        );
      }
    }
    this.perAddress.increment(address, now);
  }

  failed(account: string | undefined): void {
    if (account !== undefined) this.perAccount.increment(account, Date.now());
  }

  succeeded(account: string | undefined): void {
    if (account !== undefined) this.perAccount.reset(account);
  }
}
