/**
 * Which passwords a user may choose, after NIST SP 800-63B (5.1.1.2): long enough (12 characters,
 * or more when PASSWORD_MIN_LENGTH says so), at most 128, any characters (counted as Unicode code
 * points after NFKC normalisation), no composition rules, and never one that attackers try first:
 * a known common or breached password, one made of the username or the service's name (with
 * digits or symbols at most), or one the zxcvbn estimator
 * finds guessable in under 10^8 attempts (score below 3). Site client secrets are generated and
 * never pass through here.
 *
 * Why 10^8: with the login limits (at most 100 attempts per account per 15 minutes from addresses
 * it has not logged in from, however many addresses guess) an online attacker needs decades for
 * 10^8 guesses, and offline against bcrypt (cost 10) it still takes hours per account on a GPU,
 * while every passphrase of a few ordinary words passes.
 * Words of zxcvbn's own dictionaries, repeats (`passwordpassword`), sequences (`abcdefghijkl`),
 * keyboard rows (`qwertyuiopas`) and the username with a few digits all score below it.
 */
import type { ZxcvbnFactory } from '@zxcvbn-ts/core';

export const PASSWORD_MIN_LENGTH = 12;
export const PASSWORD_MAX_LENGTH = 128;
/** zxcvbn score 3: an estimated 10^8 guesses or more. */
const MIN_SCORE = 3;

/** Words an attacker of this service tries along with the username. */
const SERVICE_WORDS = ['nmdc', 'runtime', 'microbiome', 'microbiomedata', 'admin', 'administrator'];

/** zxcvbn's warning keys, as the reason a password is too easy to guess. */
const WEAKNESS: Record<string, string> = {
  straightRow: 'it is a row of keys on the keyboard',
  keyPattern: 'it is a keyboard pattern',
  simpleRepeat: 'it repeats characters',
  extendedRepeat: 'it repeats a word or pattern',
  sequences: 'it is a sequence such as abc or 123',
  recentYears: 'it relies on a recent year',
  dates: 'it relies on a date',
  topTen: 'it is among the most used passwords',
  topHundred: 'it is among the most used passwords',
  common: 'it is a commonly used password',
  similarToCommon: 'it resembles a commonly used password',
  wordByItself: 'it is a single dictionary word',
  namesByThemselves: 'it is made of names',
  commonNames: 'it is made of common names',
  userInputs: "it is made of the username or the service's name",
};

export interface PasswordRules {
  /** At least 12; larger when the administrators configure it. */
  minLength?: number;
}

interface Estimator {
  zxcvbn: ZxcvbnFactory;
  common: Set<string>;
}

let estimator: Promise<Estimator> | undefined;

/** The dictionaries (about 50,000 common passwords and word lists) load once, on first use. */
function loadEstimator(): Promise<Estimator> {
  estimator ??= (async () => {
    const [{ ZxcvbnFactory }, language] = await Promise.all([
      import('@zxcvbn-ts/core'),
      import('@zxcvbn-ts/language-common'),
    ]);
    return {
      zxcvbn: new ZxcvbnFactory({ dictionary: { ...language.dictionary }, graphs: language.adjacencyGraphs }),
      common: new Set(language.dictionary['passwords-common'].map((p) => p.toLowerCase())),
    };
  })();
  return estimator;
}

/** Letters and digits only, lower-cased: `Alice.Alice-2` and `alicealice2` are the same choice. */
const skeleton = (text: string) => text.toLowerCase().replace(/[^\p{L}\p{N}]/gu, '');

/**
 * True when nothing but the username and this service's names is left, give or take digits and
 * separators (`alice.wonderland2024`, `nmdc-runtime-1`): the first guesses of a targeted attack.
 */
function madeOfNames(password: string, username: string | undefined): boolean {
  const names = [username ? skeleton(username) : '', ...SERVICE_WORDS]
    .filter((name) => name.length > 0)
    .sort((a, b) => b.length - a.length);
  let rest = skeleton(password);
  for (const name of names) rest = rest.split(name).join('');
  return /^\p{N}*$/u.test(rest);
}

/**
 * The rule a password breaks, as a sentence for the `detail` of a 422, or null when it is
 * acceptable. Never quotes the password.
 */
export async function passwordProblem(
  password: string,
  context: { username?: string } = {},
  rules: PasswordRules = {},
): Promise<string | null> {
  const minLength = Math.max(PASSWORD_MIN_LENGTH, rules.minLength ?? PASSWORD_MIN_LENGTH);
  const normalized = password.normalize('NFKC');
  const length = [...normalized].length;
  if (length < minLength) return `password must be at least ${minLength} characters long`;
  if (length > PASSWORD_MAX_LENGTH) return `password must be at most ${PASSWORD_MAX_LENGTH} characters long`;
  const { zxcvbn, common } = await loadEstimator();
  if (common.has(normalized.toLowerCase())) {
    return 'password is one of the most common passwords found in breaches; choose another';
  }
  if (madeOfNames(normalized, context.username)) {
    return "password must not be made of the username or the service's name";
  }
  const userInputs = context.username ? [context.username, ...SERVICE_WORDS] : SERVICE_WORDS;
  const estimate = zxcvbn.check(normalized, userInputs);
  if (estimate.score < MIN_SCORE) {
    const why = WEAKNESS[estimate.feedback.warning ?? ''] ?? 'it follows a predictable pattern';
    return `password is too easy to guess (${why}); a few unrelated words make a strong password`;
  }
  return null;
}
