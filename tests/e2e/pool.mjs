// A small work pool for the workbench tests: `jobs` tasks at a time, each task's output kept in a
// buffer and printed in one block when it ends (interleaved lines of two workbenches are unreadable),
// every task run even after a failure, a summary with each task's wall time at the end.
// The number of workbenches at a time: RETRACE_E2E_JOBS (default 2, the CI machine's cores; 1 runs
// them one after another as before). Each scenario owns its corner of .e2e/, its code-server on a
// free loopback port, its own Chromium and Retrace server, so two never share state.
import { spawn } from 'node:child_process';
import os from 'node:os';
import { pathToFileURL } from 'node:url';

/** Whether the module at `url` (its `import.meta.url`) is the script node was started with. */
export function isMain(url) {
  return process.argv[1] !== undefined && url === pathToFileURL(process.argv[1]).href;
}

export function jobsFromEnv() {
  const raw = process.env.RETRACE_E2E_JOBS;
  if (raw === undefined || raw === '') return Math.max(1, Math.min(2, os.cpus().length));
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`RETRACE_E2E_JOBS must be a whole number ≥ 1, not "${raw}"`);
  return n;
}

/**
 * Run `tasks` ({ name, run(write) → Promise<boolean> }: `write(text)` buffers output, the promise
 * says passed) `jobs` at a time, in order. Resolves to the names of the failed tasks.
 */
export async function runPool(tasks, jobs) {
  const t0 = Date.now();
  const queue = [...tasks];
  const results = [];
  const stamp = () => `[${((Date.now() - t0) / 1000).toFixed(1)}s]`;
  async function worker() {
    for (let task = queue.shift(); task; task = queue.shift()) {
      const started = Date.now();
      console.log(`${stamp()} ▶ ${task.name}`);
      let out = '';
      let passed = false;
      try {
        passed = await task.run(text => { out += text; });
      } catch (e) {
        out += `\n${e?.stack ?? e}\n`;
      }
      const seconds = (Date.now() - started) / 1000;
      results.push({ name: task.name, passed, seconds });
      console.log(`${stamp()} ${passed ? '✔' : '✘'} ${task.name} (${seconds.toFixed(1)}s)\n${indent(out)}`);
    }
  }
  await Promise.all(Array.from({ length: Math.min(jobs, tasks.length) }, worker));
  console.log(`\n${stamp()} ${tasks.length} task(s), ${jobs} at a time:`);
  for (const r of results) console.log(`  ${r.passed ? 'PASS' : 'FAIL'} ${r.name.padEnd(24)} ${r.seconds.toFixed(1)}s`);
  return results.filter(r => !r.passed).map(r => r.name);
}

function indent(text) {
  return text.trimEnd().split('\n').map(line => `  │ ${line}`).join('\n');
}

/** A task that runs `node <script> [...args]`, its stdout and stderr buffered; passed = exit 0. */
export function nodeTask(name, script, args = [], env = process.env) {
  return {
    name,
    run: write => new Promise(resolve => {
      const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
      child.stdout.on('data', d => write(d.toString()));
      child.stderr.on('data', d => write(d.toString()));
      child.on('error', e => { write(`${e.stack}\n`); resolve(false); });
      child.on('close', code => resolve(code === 0));
    }),
  };
}
