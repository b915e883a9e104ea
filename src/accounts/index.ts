export { Accounts, type NewUser } from './accounts.ts';
export { ensureAccounts, DEMO_ADMIN_USERNAME, DEMO_CREDENTIALS_FILE } from './ensure-accounts.ts';
export * from './records.ts';
export { hashSecret, verifySecret, generateSecret, setBcryptCost } from './secrets.ts';
export { accountsRouter } from './routes.ts';
