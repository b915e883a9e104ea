import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { pino } from 'pino';
import type express from 'express';
import { loadConfig } from '../../src/config.ts';
import { openServices } from '../../src/services.ts';
import { buildApp } from '../../src/app.ts';
import { setBcryptCost } from '../../src/accounts/index.ts';

setBcryptCost(4);

describe('logs', () => {
  const lines: string[] = [];
  let app: express.Express;
  let close: () => Promise<void>;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-logs-'));
    const config = loadConfig({
      DATA_DIR: dataDir,
      DEMO_DATA: 'false',
      ADMIN_USERNAME: 'root',
      ADMIN_PASSWORD: 'root-password-LOGCHECK',
    });
    const logger = pino({ level: 'trace' }, { write: (line: string) => void lines.push(line) });
    const services = await openServices(config, logger);
    app = buildApp(services);
    services.start();
    close = async () => {
      await services.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    };
  });
  afterAll(async () => close());

  it('never carry a password, client secret, bcrypt hash or access token', async () => {
    const secrets: string[] = ['root-password-LOGCHECK', 'new-user-password-LOGCHECK'];
    const login = await request(app)
      .post('/token')
      .type('form')
      .send({ grant_type: 'password', username: 'root', password: 'root-password-LOGCHECK' });
    const token = login.body.access_token as string;
    secrets.push(token);
    const auth = { Authorization: `Bearer ${token}` };
    await request(app)
      .post('/token')
      .type('form')
      .send({ grant_type: 'password', username: 'root', password: 'wrong-password-LOGCHECK' });
    secrets.push('wrong-password-LOGCHECK');
    await request(app)
      .post('/users')
      .set(auth)
      .send({ username: 'someone', password: 'new-user-password-LOGCHECK' });
    await request(app).post('/sites').set(auth).send({ id: 'log-site' });
    const credentials = await request(app).post('/sites/log-site:generateCredentials').set(auth);
    secrets.push(credentials.body.client_secret);
    const clientLogin = await request(app)
      .post('/token')
      .auth(credentials.body.client_id, credentials.body.client_secret)
      .type('form')
      .send({ grant_type: 'client_credentials' });
    secrets.push(clientLogin.body.access_token);
    await request(app).get('/users/me').set(auth);
    await request(app).get('/users/me?access_token=' + token);
    await request(app).post('/logout').set(auth);

    expect(lines.length).toBeGreaterThan(5);
    const log = lines.join('\n');
    for (const secret of secrets) {
      expect(secret).toBeTruthy();
      expect(log).not.toContain(secret);
    }
    expect(log).not.toMatch(/\$2[aby]\$\d\d\$/);
  });
});
