import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { loadConfig } from '../../src/config.ts';
import { openStore } from '../../src/store/index.ts';
import { Accounts, ensureAccounts, setBcryptCost } from '../../src/accounts/index.ts';
import { createAdmin } from '../../src/cli/create-admin.ts';
import { freePort, getJson, passwordToken, startAuthServer } from './auth-server.ts';

setBcryptCost(4);

const folders: string[] = [];
function dataDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-accounts-'));
  folders.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of folders.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** A logger that records every line, to check what start-up writes. */
function recordingLogger() {
  const lines: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
  return { logger, lines };
}

async function withAccounts<T>(
  dir: string,
  env: Record<string, string>,
  run: (accounts: Accounts, lines: string[]) => Promise<T>,
) {
  const config = loadConfig({ DATA_DIR: dir, LOG_LEVEL: 'silent', ...env });
  const { logger, lines } = recordingLogger();
  const store = await openStore(config, pino({ level: 'silent' }));
  try {
    const accounts = await ensureAccounts({ config, store, logger });
    return await run(accounts, lines);
  } finally {
    await store.close();
  }
}

describe('start-up accounts', () => {
  it('creates the site nmdc-runtime-useradmin and the configured administrator', async () => {
    await withAccounts(
      dataDir(),
      { ADMIN_USERNAME: 'chief', ADMIN_PASSWORD: 'chief of the sampling crew', DEMO_DATA: 'false' },
      async (accounts) => {
        expect(await accounts.getSite('nmdc-runtime-useradmin')).toMatchObject({
          id: 'nmdc-runtime-useradmin',
          capability_ids: [],
        });
        const chief = await accounts.verifyPassword('chief', 'chief of the sampling crew');
        expect(chief?.site_admin).toEqual(['nmdc-runtime-useradmin']);
      },
    );
  });

  it('updates the configured administrator password at the next start', async () => {
    const dir = dataDir();
    await withAccounts(
      dir,
      { ADMIN_USERNAME: 'chief', ADMIN_PASSWORD: 'first light over the marsh', DEMO_DATA: 'false' },
      async () => {},
    );
    await withAccounts(
      dir,
      { ADMIN_USERNAME: 'chief', ADMIN_PASSWORD: 'second tide at the estuary', DEMO_DATA: 'false' },
      async (accounts) => {
        expect(await accounts.verifyPassword('chief', 'first light over the marsh')).toBeNull();
        expect(await accounts.verifyPassword('chief', 'second tide at the estuary')).not.toBeNull();
      },
    );
  });

  it("ends the administrator's tokens when ADMIN_PASSWORD changes between starts, and keeps them when it does not", async () => {
    const dir = dataDir();
    // One port throughout: the token issuer is the server's URL.
    const port = await freePort();
    const start = (password: string) =>
      startAuthServer({ ADMIN_USERNAME: 'chief', ADMIN_PASSWORD: password }, { dataDir: dir, port });
    const first = await start('first light over the marsh');
    const token = await passwordToken(first.url, 'chief', 'first light over the marsh');
    await first.close({ removeData: false });
    const same = await start('first light over the marsh');
    expect((await getJson(`${same.url}/users/me`, token)).status).toBe(200);
    await same.close({ removeData: false });
    const changed = await start('second tide at the estuary');
    try {
      expect((await getJson(`${changed.url}/users/me`, token)).body).toEqual({
        detail: 'Access token has been invalidated. Please log in again.',
      });
    } finally {
      await changed.close({ removeData: false });
    }
  });

  it('in demo mode without a configured administrator writes admin credentials to a mode-600 file and logs only its path', async () => {
    const dir = dataDir();
    await withAccounts(dir, { DEMO_DATA: 'true' }, async (accounts, lines) => {
      const file = path.join(dir, 'admin-credentials.txt');
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      const password = /password: (\S+)/.exec(fs.readFileSync(file, 'utf8'))![1]!;
      expect((await accounts.verifyPassword('admin', password))?.site_admin).toEqual([
        'nmdc-runtime-useradmin',
      ]);
      const log = lines.join('\n');
      expect(log).toContain(file);
      expect(log).not.toContain(password);
    });
  });

  it('refuses to start with an ADMIN_PASSWORD that breaks the password rules, saying which', async () => {
    await expect(
      withAccounts(
        dataDir(),
        { ADMIN_USERNAME: 'chief', ADMIN_PASSWORD: 'chief-pw', DEMO_DATA: 'false' },
        async () => {},
      ),
    ).rejects.toThrow('ADMIN_PASSWORD is refused: password must be at least 12 characters long');
    await expect(
      withAccounts(
        dataDir(),
        {
          ADMIN_USERNAME: 'chief',
          ADMIN_PASSWORD: 'chief of the sampling crew',
          PASSWORD_MIN_LENGTH: '30',
          DEMO_DATA: 'false',
        },
        async () => {},
      ),
    ).rejects.toThrow('ADMIN_PASSWORD is refused: password must be at least 30 characters long');
  });

  it('does not create a demo administrator outside demo mode', async () => {
    await withAccounts(dataDir(), { DEMO_DATA: 'false' }, async (accounts) => {
      expect(await accounts.getUser('admin')).toBeNull();
    });
  });
});

describe('create-admin command', () => {
  it('creates an administrator with a generated password printed once', async () => {
    const dir = dataDir();
    const message = await createAdmin(['--username', 'ops'], { DATA_DIR: dir, DEMO_DATA: 'false' });
    const password = /Generated password \(shown once\): (\S+)/.exec(message)![1]!;
    await withAccounts(dir, { DEMO_DATA: 'false' }, async (accounts) => {
      expect((await accounts.verifyPassword('ops', password))?.site_admin).toEqual([
        'nmdc-runtime-useradmin',
      ]);
    });
  });

  it('refuses an existing user without --reset-password, changing nothing', async () => {
    const dir = dataDir();
    await withAccounts(dir, { DEMO_DATA: 'false' }, async (accounts) => {
      await accounts.createUser({
        username: 'lead',
        password: 'old map of the watershed',
        site_admin: ['lab-1'],
      });
    });
    await expect(
      createAdmin(['--username', 'lead', '--password', 'new compass for the lead'], {
        DATA_DIR: dir,
        DEMO_DATA: 'false',
      }),
    ).rejects.toThrow(
      'User lead already exists; nothing was changed. To give them a new password (ending their current tokens) and make them a runtime administrator, run again with --reset-password.',
    );
    await withAccounts(dir, { DEMO_DATA: 'false' }, async (accounts) => {
      expect((await accounts.verifyPassword('lead', 'old map of the watershed'))?.site_admin).toEqual([
        'lab-1',
      ]);
      expect(await accounts.verifyPassword('lead', 'new compass for the lead')).toBeNull();
    });
  });

  it('with --reset-password sets the password of an existing user, makes them an administrator and ends their tokens', async () => {
    const dir = dataDir();
    await createAdmin(['--username', 'lead', '--password', 'old map of the watershed'], {
      DATA_DIR: dir,
      DEMO_DATA: 'false',
    });
    const server = await startAuthServer({}, { dataDir: dir });
    try {
      const before = await passwordToken(server.url, 'lead', 'old map of the watershed');
      expect((await getJson(`${server.url}/users/me`, before)).status).toBe(200);
      const message = await createAdmin(
        ['--username', 'lead', '--password', 'new compass for the lead', '--reset-password'],
        { DATA_DIR: dir, DEMO_DATA: 'false' },
      );
      expect(message).toBe('Reset the password of administrator lead; tokens issued before no longer work.');
      expect((await getJson(`${server.url}/users/me`, before)).body).toEqual({
        detail: 'Access token has been invalidated. Please log in again.',
      });
      const after = await passwordToken(server.url, 'lead', 'new compass for the lead');
      expect((await getJson(`${server.url}/users/me`, after)).body).toEqual({
        username: 'lead',
        site_admin: ['nmdc-runtime-useradmin'],
        disabled: false,
      });
      // A reset with a generated password prints it once and ends the tokens again.
      const generated = await createAdmin(['--username', 'lead', '--reset-password'], {
        DATA_DIR: dir,
        DEMO_DATA: 'false',
      });
      const password = /Generated password \(shown once\): (\S+)/.exec(generated)![1]!;
      expect((await getJson(`${server.url}/users/me`, after)).status).toBe(401);
      expect(
        (await getJson(`${server.url}/users/me`, await passwordToken(server.url, 'lead', password))).status,
      ).toBe(200);
    } finally {
      await server.close({ removeData: false });
    }
  });

  it('refuses a --password that breaks the password rules, saying which, and creates nobody', async () => {
    const dir = dataDir();
    await expect(
      createAdmin(['--username', 'ops', '--password', 'qwerty123456'], { DATA_DIR: dir, DEMO_DATA: 'false' }),
    ).rejects.toThrow(
      '--password is refused: password is one of the most common passwords found in breaches; choose another',
    );
    await withAccounts(dir, { DEMO_DATA: 'false' }, async (accounts) => {
      expect(await accounts.getUser('ops')).toBeNull();
    });
  });

  it('refuses to run without --username', async () => {
    await expect(createAdmin([], { DATA_DIR: dataDir() })).rejects.toThrow(/--username/);
  });
});
