/**
 * The import rules `npm run lint` checks (.dependency-cruiser.cjs): run on a small project laid out
 * like ours, they name each import that breaks the layout (a circle, domain code importing Express
 * or src/http, the service importing its tests) and leave the allowed ones (routes files, the
 * HTTP layer) alone.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { cruise, type IConfiguration, type IReporterOutput } from 'dependency-cruiser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../support/project-imports.ts';

const config = createRequire(import.meta.url)(path.join(ROOT, '.dependency-cruiser.cjs')) as IConfiguration;

const FILES: Record<string, string> = {
  // A circle of two domain modules.
  'src/orders/orders.ts': "import { total } from './totals.ts';\nexport const order = total;\n",
  'src/orders/totals.ts':
    "import type { order } from './orders.ts';\nexport const total = 1 as unknown as typeof order;\n",
  // Domain code speaking HTTP.
  'src/orders/refunds.ts':
    "import type { Request } from 'express';\nimport { guard } from '../http/guards.ts';\nexport const refund = (r: Request) => guard(r);\n",
  // Allowed: the HTTP layer, the app and routes files.
  'src/http/guards.ts':
    "import type { Request } from 'express';\nexport const guard = (r: Request) => r.path;\n",
  'src/orders/routes.ts':
    "import express from 'express';\nimport { guard } from '../http/guards.ts';\nimport { order } from './orders.ts';\nexport const routes = () => express.Router().get('/', guard, () => order);\n",
  'src/orders/refund-routes.ts':
    "import express from 'express';\nexport const refundRoutes = () => express.Router();\n",
  'src/app.ts':
    "import express from 'express';\nimport { routes } from './orders/routes.ts';\nexport const app = express().use(routes());\n",
  // The service importing its tests.
  'src/seed.ts': "import { fixture } from '../test/fixture.ts';\nexport const seed = fixture;\n",
  'test/fixture.ts': "import { order } from '../src/orders/orders.ts';\nexport const fixture = order;\n",
};

let dir: string;
let violations: string[];

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'import-rules-'));
  for (const [file, text] of Object.entries(FILES)) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), text);
  }
  // Express resolves from the project's own packages.
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  const { tsConfig: _tsConfig, ...options } = config.options ?? {};
  const cwd = process.cwd();
  process.chdir(dir);
  let result: IReporterOutput;
  try {
    result = await cruise(['src', 'test'], {
      ...options,
      validate: true,
      ruleSet: { forbidden: config.forbidden },
      // Keep the linked node_modules inside the project, as an installed one would be.
      preserveSymlinks: true,
    });
  } finally {
    process.chdir(cwd);
  }
  const output = result.output as Exclude<IReporterOutput['output'], string>;
  violations = output.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`).sort();
}, 60_000);

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('the import rules', () => {
  it('name a circle, domain code importing Express or src/http, and src importing test', () => {
    expect(violations).toEqual([
      'domain-imports-http: src/orders/refunds.ts -> node_modules/express/index.js',
      'domain-imports-http: src/orders/refunds.ts -> src/http/guards.ts',
      'no-circular: src/orders/orders.ts -> src/orders/totals.ts',
      'src-imports-tests-or-benchmarks: src/seed.ts -> test/fixture.ts',
    ]);
  });
});
