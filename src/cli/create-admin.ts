/**
 * `npm run create-admin -- --username U [--password P]`: creates a runtime administrator. An
 * existing user is left alone unless `--reset-password` is given: then the user gets the password
 * (the given one, or a generated one), becomes a runtime administrator, and every token and
 * sign-in issued to them before stops working. A chosen password must pass the password rules
 * (`src/accounts/password-policy.ts`); a generated one is printed once.
 */
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { loadConfig } from '../config.ts';
import { openStore } from '../store/index.ts';
import { Accounts, RUNTIME_ADMIN_SITE, generateSecret, passwordProblem } from '../accounts/index.ts';
import { endSignInsOf } from '../auth/state-adapter.ts';
import { asksForHelp } from './usage.ts';

const USAGE = 'usage: npm run create-admin -- --username U [--password P] [--reset-password]';

export const CREATE_ADMIN_USAGE = `${USAGE}

Creates a runtime administrator (an administrator of the site ${RUNTIME_ADMIN_SITE}) in the
configured store (DATA_DIR, or MONGO_URL). An existing user is left alone unless --reset-password
is given: then the user gets the password, becomes a runtime administrator, and every token and
sign-in issued to them before stops working. Without --password a password is generated and
printed once. A chosen password must pass the password rules (12 to 128 characters, not common or
guessable; see README "Signing in").

  --username U        the account name
  --password P        the password to set (else a generated one)
  --reset-password    change an existing user's password (ending their tokens)
  -h, --help          show this help
`;

export async function createAdmin(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const { values } = parseArgs({
    args: argv,
    options: {
      username: { type: 'string' },
      password: { type: 'string' },
      'reset-password': { type: 'boolean' },
    },
    strict: true,
  });
  if (!values.username) throw new Error(USAGE);
  const username = values.username;
  const reset = values['reset-password'] === true;
  const config = loadConfig(env);
  if (values.password !== undefined) {
    const problem = await passwordProblem(
      values.password,
      { username },
      { minLength: config.passwordMinLength },
    );
    if (problem) throw new Error(`--password is refused: ${problem}`);
  }
  const store = await openStore(config, pino({ level: 'silent' }));
  try {
    const accounts = new Accounts(store, { minLength: config.passwordMinLength });
    // A reset also ends the user's sign-ins at the service's OpenID provider (docs page).
    accounts.whenCredentialsChange(async (change) => {
      if (change.kind === 'user') await endSignInsOf(store.state, change.id);
    });
    await accounts.ensureSite(RUNTIME_ADMIN_SITE);
    const existed = Boolean(await accounts.getUser(username));
    if (existed && !reset) {
      throw new Error(
        `User ${username} already exists; nothing was changed. To give them a new password (ending ` +
          `their current tokens) and make them a runtime administrator, run again with --reset-password.`,
      );
    }
    const password = values.password ?? generateSecret(18);
    await accounts.setPassword(username, password, [RUNTIME_ADMIN_SITE], { reset: true });
    const lines = [
      existed
        ? `Reset the password of administrator ${username}; tokens issued before no longer work.`
        : `Created administrator ${username}.`,
    ];
    if (!values.password) lines.push(`Generated password (shown once): ${password}`);
    return lines.join('\n');
  } finally {
    await store.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (asksForHelp(process.argv.slice(2))) {
    process.stdout.write(CREATE_ADMIN_USAGE);
    process.exit(0);
  }
  createAdmin(process.argv.slice(2)).then(
    (message) => console.log(message),
    (err: unknown) => {
      console.error(err instanceof Error ? err.message : String(err));
      process.exit(1);
    },
  );
}
