/**
 * Start-up accounts: the runtime administrators' site always exists; the configured first
 * administrator is created or gets the configured password (which must pass the password rules,
 * or start-up stops); in demo mode without one, an `admin` with a random password written to a
 * private file (only the path is logged).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { DocumentStore } from '../store/port.ts';
import { Accounts, type CredentialsChange } from './accounts.ts';
import { RUNTIME_ADMIN_SITE } from './records.ts';
import { generateSecret } from './secrets.ts';
import { passwordProblem } from './password-policy.ts';
import { ConfigError } from '../config.ts';
import { ensurePrivateDir } from '../store/private-files.ts';

export const DEMO_ADMIN_USERNAME = 'admin';
export const DEMO_CREDENTIALS_FILE = 'admin-credentials.txt';

export async function ensureAccounts(
  deps: { config: Config; store: DocumentStore; logger: Logger },
  /** Told of every change of credentials, the start-up administrator's included. */
  onCredentialsChange?: (change: CredentialsChange) => Promise<void>,
): Promise<Accounts> {
  const { config, store, logger } = deps;
  const accounts = new Accounts(store, { minLength: config.passwordMinLength });
  if (onCredentialsChange) accounts.whenCredentialsChange(onCredentialsChange);
  await accounts.ensureSite(RUNTIME_ADMIN_SITE);

  if (config.adminUsername && config.adminPassword) {
    const problem = await passwordProblem(
      config.adminPassword,
      { username: config.adminUsername },
      { minLength: config.passwordMinLength },
    );
    if (problem) throw new ConfigError(`ADMIN_PASSWORD is refused: ${problem}`);
    await accounts.setPassword(config.adminUsername, config.adminPassword, [RUNTIME_ADMIN_SITE]);
    logger.info({ username: config.adminUsername }, 'administrator account ready');
  } else if (config.demoData && !(await accounts.getUser(DEMO_ADMIN_USERNAME))) {
    const password = generateSecret(18);
    await accounts.setPassword(DEMO_ADMIN_USERNAME, password, [RUNTIME_ADMIN_SITE]);
    ensurePrivateDir(config.dataDir);
    const file = path.join(config.dataDir, DEMO_CREDENTIALS_FILE);
    fs.writeFileSync(file, `username: ${DEMO_ADMIN_USERNAME}\npassword: ${password}\n`, { mode: 0o600 });
    fs.chmodSync(file, 0o600);
    logger.info({ file }, 'demo administrator created; its credentials are in this file');
  }
  return accounts;
}
