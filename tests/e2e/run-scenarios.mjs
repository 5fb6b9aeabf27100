// The real-browser UI scenarios (npm run test:e2e packages the .vsix first), each its own
// `node tests/e2e/<name>.mjs` process with its own workbench, RETRACE_E2E_JOBS at a time (see
// pool.mjs). Usage: node tests/e2e/run-scenarios.mjs [name ...] (default: all, in the order below).
// The order puts the longest scenarios first (measured: bench/RESULTS_suitespeed.md) so the
// workbenches finish close together.
import path from 'node:path';
import { root } from './harness.mjs';
import { isMain, jobsFromEnv, nodeTask, runPool } from './pool.mjs';

export const SCENARIOS = [
  'chat-restore', 'install', 'health', 'e2e', 'editor-safety', 'subagents', 'longsession', 'timeline',
  'chat', 'context', 'readable', 'lazy', 'undo', 'untrusted', 'hunks', 'side-rewind', 'trust', 'agents',
  'bookmarks', 'git-restore',
];

/** One pool task per scenario named in `asked` (all when empty); throws on an unknown name. */
export function scenarioTasks(asked = []) {
  const unknown = asked.filter(n => !SCENARIOS.includes(n));
  if (unknown.length > 0) throw new Error(`unknown scenario(s): ${unknown.join(', ')}; known: ${SCENARIOS.join(', ')}`);
  const names = asked.length > 0 ? SCENARIOS.filter(n => asked.includes(n)) : SCENARIOS;
  return names.map(n => nodeTask(n, path.join(root, 'tests', 'e2e', `${n}.mjs`)));
}

if (isMain(import.meta.url)) {
  let tasks;
  try {
    tasks = scenarioTasks(process.argv.slice(2));
  } catch (e) {
    console.error(e.message);
    process.exit(2);
  }
  const failed = await runPool(tasks, jobsFromEnv());
  if (failed.length > 0) console.error(`\nfailed: ${failed.join(', ')}`);
  process.exit(failed.length === 0 ? 0 : 1);
}
