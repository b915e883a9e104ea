/**
 * What every command-line tool does with its arguments before anything else: `-h`/`--help` prints
 * the usage on stdout and exits 0; an option it does not know prints the usage on stderr and exits 2.
 */
import { COLLECTION_NAMES, isCollectionName } from '../schema/nmdc.ts';

export const HELP_FLAGS = ['-h', '--help'];

/** True when the arguments ask for help. Arguments after `--` are not options. */
export function asksForHelp(argv: string[]): boolean {
  const end = argv.indexOf('--');
  return (end < 0 ? argv : argv.slice(0, end)).some((a) => HELP_FLAGS.includes(a));
}

/** Exits the process: 0 with the usage on stdout for help, 2 with it on stderr for an unknown option. */
export function handleUsage(argv: string[], usage: string, knownOptions: string[] = []): void {
  const text = usage.endsWith('\n') ? usage : `${usage}\n`;
  if (asksForHelp(argv)) {
    process.stdout.write(text);
    process.exit(0);
  }
  const unknown = argv.filter(
    (a) => a.startsWith('-') && a !== '--' && !knownOptions.includes(a.replace(/=.*$/, '')),
  );
  if (unknown.length > 0) {
    process.stderr.write(`unknown option: ${unknown.join(' ')}\n${text}`);
    process.exit(2);
  }
}

/** Arguments that name collections (help and options handled first); exits 2 naming any unknown one. */
export function collectionArguments(argv: string[], usage: string): string[] {
  handleUsage(argv, usage);
  const unknown = argv.filter((name) => !isCollectionName(name));
  if (unknown.length > 0) {
    process.stderr.write(
      `unknown collection: ${unknown.join(', ')}\ncollections: ${COLLECTION_NAMES.join(', ')}\n\n${usage}`,
    );
    process.exit(2);
  }
  return argv;
}
