export { Accounts, type CredentialsChange, type NewUser, type UserChanges } from './accounts.ts';
export { ensureAccounts, DEMO_ADMIN_USERNAME, DEMO_CREDENTIALS_FILE } from './ensure-accounts.ts';
export * from './records.ts';
export { hashSecret, verifySecret, generateSecret, setBcryptCost } from './secrets.ts';
export type { Principal } from './principal.ts';
export {
  ALLOWANCES,
  ALLOWANCE_ACTIONS,
  Allowances,
  allowanceId,
  isAllowanceAction,
  type Allowance,
  type AllowanceAction,
} from './allowances.ts';
export {
  passwordProblem,
  PASSWORD_MIN_LENGTH,
  PASSWORD_MAX_LENGTH,
  type PasswordRules,
} from './password-policy.ts';
