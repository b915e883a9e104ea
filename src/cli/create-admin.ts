/**
 * `npm run create-admin -- --username U [--password P]`: creates a runtime administrator, or
 * makes an existing user one and sets the password. A chosen password must pass the password
 * rules (`src/accounts/password-policy.ts`); without --password a random one is generated and
 * printed once.
 */
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { loadConfig } from '../config.ts';
import { openStore } from '../store/index.ts';
import { Accounts, RUNTIME_ADMIN_SITE, generateSecret, passwordProblem } from '../accounts/index.ts';
import { asksForHelp } from './usage.ts';

export const CREATE_ADMIN_USAGE = `usage: npm run create-admin -- --username U [--password P]

Creates a runtime administrator (an administrator of the site svc-runtime-useradmin) in the
configured store (DATA_DIR, or MONGO_URL), or makes an existing user one and sets the password.
Without --password a password is generated and printed once. A chosen password must pass the
password rules (12 to 128 characters, not common or guessable; see README "Signing in").

  --username U    the account name
  --password P    the password to set (else a generated one)
  -h, --help      show this help
`;

export async function createAdmin(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const { values } = parseArgs({
    args: argv,
    options: { username: { type: 'string' }, password: { type: 'string' } },
    strict: true,
  });
  if (!values.username) throw new Error('usage: npm run create-admin -- --username U [--password P]');
  const config = loadConfig(env);
  if (values.password !== undefined) {
    const problem = await passwordProblem(
      values.password,
      { username: values.username },
      { minLength: config.passwordMinLength },
    );
    if (problem) throw new Error(`--password is refused: ${problem}`);
  }
  const store = await openStore(config, pino({ level: 'silent' }));
  try {
    const accounts = new Accounts(store, { minLength: config.passwordMinLength });
    await accounts.ensureSite(RUNTIME_ADMIN_SITE);
    const password = values.password ?? generateSecret(18);
    const existed = Boolean(await accounts.getUser(values.username));
    await accounts.setPassword(values.username, password, [RUNTIME_ADMIN_SITE]);
    const lines = [`${existed ? 'Updated' : 'Created'} administrator ${values.username}.`];
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
