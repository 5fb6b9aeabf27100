// Every workbench test in ONE pool (what CI runs): the extension-host suites
// (run-exthost-tests.mjs) and the real-browser scenarios (run-scenarios.mjs), RETRACE_E2E_JOBS at
// a time (pool.mjs). One pool instead of two in a row: the first pool's tail (one workbench left
// running while the other slot idles) is filled by the next task. Longest first, from the
// measured times (a full pool run of 2026-12-07: a scenario 20–70 s, an extension-host launch 10–50 s).
// Needs `npm run build:tests` (the extension-host suites) and the packaged .vsix
// (`npm run package`: the scenarios install it); neither is built here.
// Usage: node tests/e2e/run-workbenches.mjs [task ...]   (task names as the summary prints them,
// e.g. `undo exthost-serverDown`; default: all)
import { exthostTasks } from './run-exthost-tests.mjs';
import { scenarioTasks } from './run-scenarios.mjs';
import { jobsFromEnv, runPool } from './pool.mjs';
import { startServerForks } from './harness.mjs';

const MEASURED_S = {
  install: 70, health: 51, longsession: 50, 'exthost-recovery': 50, timeline: 42, e2e: 40, 'editor-safety': 37,
  context: 36, subagents: 35, chat: 34, readable: 33, 'chat-restore': 32, lazy: 32, undo: 30, untrusted: 29, hunks: 26,
  'exthost-retrace': 26, 'git-restore': 26, agents: 24, bookmarks: 23, 'exthost-fileHistory': 23, 'exthost-multiroot': 23,
  trust: 22, 'exthost-background': 20, 'side-rewind': 20, 'exthost-reach': 19, 'exthost-vscodeLm': 15, 'exthost-remote': 15,
  'exthost-serverDown': 10,
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
// The workbenches' Retrace servers fork from one process that imported the server once
// (tests/e2e/server_forks.py: ~3 CPU-seconds saved per server); RETRACE_E2E_FORK_SERVERS=0 starts
// them cold.
const forks = process.env.RETRACE_E2E_FORK_SERVERS === '0' ? undefined : await startServerForks();
let failed;
try {
  failed = await runPool(tasks, jobsFromEnv());
} finally {
  forks?.stop();
}
if (failed.length > 0) console.error(`\nfailed: ${failed.join(', ')}`);
process.exit(failed.length === 0 ? 0 : 1);
