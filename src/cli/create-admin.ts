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

const USAGE = 'usage: npm run create-admin -- --username U [--password P] [--reset-password]';

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
  createAdmin(process.argv.slice(2)).then(
    (message) => console.log(message),
    (err: unknown) => {
      console.error(err instanceof Error ? err.message : String(err));
      process.exit(1);
    },
  );
}
