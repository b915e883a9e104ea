/**
 * Persistent identifiers (`/pids`): minting typed NMDC ids for site clients, resolving, binding
 * metadata to and deleting them.
 */
export * from './minter.ts';
export { BLADE_ALPHABET, isWellFormedBlade, randomBlade, type BladeSource } from './blade.ts';
export { idPatternOfClass, typecodeOfClass, type TypecodeOfClass } from './schema-classes.ts';
