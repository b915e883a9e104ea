/**
 * A vitest reporter that ends the run with the slowest test files (time importing them plus time
 * in their tests and hooks) and every test that took more than a third of its timeout: the
 * suite's budget is a few minutes on two cores, and a test near its timeout fails on a busy machine.
 */
import type { Reporter, TestModule } from 'vitest/node';

const SHOWN = 12;

export default class SlowestReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const files = testModules.map((module) => {
      const { collectDuration, duration } = module.diagnostic();
      return {
        file: module.moduleId.replace(`${process.cwd()}/`, ''),
        seconds: (collectDuration + duration) / 1000,
      };
    });
    files.sort((a, b) => b.seconds - a.seconds);
    const lines = ['', `Slowest test files (of ${files.length}):`];
    for (const { file, seconds } of files.slice(0, SHOWN))
      lines.push(`  ${seconds.toFixed(1).padStart(7)} s  ${file}`);

    const nearTimeout: string[] = [];
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const timeout = test.options.timeout;
        const duration = test.diagnostic()?.duration;
        if (timeout && duration !== undefined && duration > timeout / 3) {
          nearTimeout.push(
            `  ${(duration / 1000).toFixed(1).padStart(7)} s of ${timeout / 1000} s  ${test.fullName}`,
          );
        }
      }
    }
    if (nearTimeout.length > 0) lines.push('', 'Tests over a third of their timeout:', ...nearTimeout);
    process.stdout.write(`${lines.join('\n')}\n`);
  }
}
