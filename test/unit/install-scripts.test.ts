/**
 * npm 11 runs a dependency's install scripts only when `allowScripts` in package.json says so
 * (and warns about the others on every install): every installed package with one is decided,
 * those the service needs are allowed, and telemetry is not.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  allowScripts?: Record<string, boolean>;
};

/** Installed packages (by name) with a preinstall, install or postinstall script. */
function packagesWithInstallScripts(): string[] {
  const found = new Set<string>();
  const visit = (dir: string) => {
    if (!fs.existsSync(dir)) return;
    for (const entry of fs.readdirSync(dir)) {
      if (entry.startsWith('.')) continue;
      const full = path.join(dir, entry);
      if (entry.startsWith('@')) {
        visit(full);
        continue;
      }
      const file = path.join(full, 'package.json');
      if (fs.existsSync(file)) {
        const pkg = JSON.parse(fs.readFileSync(file, 'utf8')) as {
          name: string;
          scripts?: Record<string, string>;
        };
        if (['preinstall', 'install', 'postinstall'].some((s) => pkg.scripts?.[s])) found.add(pkg.name);
      }
      visit(path.join(full, 'node_modules'));
    }
  };
  visit(path.join(ROOT, 'node_modules'));
  return [...found].sort();
}

describe('allowScripts', () => {
  it('decides every installed package that has an install script', () => {
    const decided = Object.keys(manifest.allowScripts ?? {}).map((key) => key.replace(/(.)@.*$/, '$1'));
    expect(packagesWithInstallScripts().filter((name) => !decided.includes(name))).toEqual([]);
  });

  it('allows the native SQLite build and esbuild, and denies the telemetry of @scarf/scarf', () => {
    expect(manifest.allowScripts).toEqual({ 'better-sqlite3': true, esbuild: true, '@scarf/scarf': false });
  });
});
