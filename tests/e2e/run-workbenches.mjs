// Every workbench test in ONE pool (what CI runs): the extension-host suites
// (run-exthost-tests.mjs) and the real-browser scenarios (run-scenarios.mjs), RETRACE_E2E_JOBS at
// a time (pool.mjs). One pool instead of two in a row: the first pool's tail (one workbench left
// running while the other slot idles) is filled by the next task. Longest first, from the
// measured times (CI log of 2026-12-06: a scenario 20–70 s, an extension-host launch 10–47 s).
// Needs `npm run build:tests` (the extension-host suites) and the packaged .vsix
// (`npm run package`: the scenarios install it); neither is built here.
// Usage: node tests/e2e/run-workbenches.mjs [task ...]   (task names as the summary prints them,
// e.g. `undo exthost-serverDown`; default: all)
import { exthostTasks } from './run-exthost-tests.mjs';
import { scenarioTasks } from './run-scenarios.mjs';
import { jobsFromEnv, runPool } from './pool.mjs';

const MEASURED_S = {
  install: 70, 'chat-restore': 59, e2e: 66, 'editor-safety': 54, subagents: 60, longsession: 54, timeline: 53,
  'exthost-recovery': 47, health: 47, readable: 47, chat: 36, 'side-rewind': 36, lazy: 33, context: 33, hunks: 32,
  bookmarks: 31, untrusted: 30, 'exthost-retrace': 26, undo: 24, 'git-restore': 24, agents: 24, 'exthost-multiroot': 23,
  trust: 22, 'exthost-reach': 20, 'exthost-background': 17, 'exthost-fileHistory': 17, 'exthost-remote': 16,
  'exthost-vscodeLm': 12, 'exthost-serverDown': 10,
};

const asked = process.argv.slice(2);
const every = [...scenarioTasks(), ...exthostTasks()];
const unknown = asked.filter(n => !every.some(t => t.name === n));
if (unknown.length > 0) {
  console.error(`unknown task(s): ${unknown.join(', ')}; known: ${every.map(t => t.name).join(', ')}`);
  process.exit(2);
}
const tasks = asked.length > 0 ? every.filter(t => asked.includes(t.name)) : every;
// A task not measured yet goes first (unknown could be long); ties keep the listed order.
const order = t => -(MEASURED_S[t.name] ?? Infinity);
tasks.sort((a, b) => order(a) - order(b));
const failed = await runPool(tasks, jobsFromEnv());
if (failed.length > 0) console.error(`\nfailed: ${failed.join(', ')}`);
process.exit(failed.length === 0 ? 0 : 1);
