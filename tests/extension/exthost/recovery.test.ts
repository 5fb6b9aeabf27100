/**
 * Crash recovery in the real extension host against the real server: `kill -9` of the server
 * (mid-turn, while a permission prompt waits) is followed by exactly one automatic restart with a
 * visible note; the state, the status bar and the chat are derived from the new server (not stuck
 * "running"); the timeline works (the dead process's store lock is free). Concurrent restarts
 * never leave two servers. A second crash inside the crash window is reported, not looped, and
 * an explicit restart recovers.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import type { RetraceApi } from '../../../extension/src/extension';
import { COMMANDS } from '../../../extension/src/constants';
import { api, nextEvent, waitFor, workspaceRoot } from './support';

let a: RetraceApi;

function alive(pid: number): boolean {
    try {
        process.kill(pid, 0);
    } catch {
        return false;
    }
    try {
        return fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(' ')[2] !== 'Z';
    } catch {
        return false;
    }
}

/** The parent pid of a process (undefined when it is gone). */
function parentOf(pid: number): number | undefined {
    try {
        // /proc/<pid>/stat: "pid (comm) state ppid …"; comm may contain spaces, so split after ')'.
        const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    } catch {
        return undefined;
    }
}

/**
 * Live `retrace serve` processes whose working directory is this workspace. A server's own child
 * between fork and exec (a shell it starts) still shows the server's command line: not a server.
 */
function serverProcesses(): number[] {
    const all = candidateServers();
    return all.filter(pid => !all.includes(parentOf(pid) ?? -1));
}

function candidateServers(): number[] {
    const root = workspaceRoot().fsPath;
    const out: number[] = [];
    for (const entry of fs.readdirSync('/proc')) {
        if (!/^\d+$/.test(entry)) {
            continue;
        }
        try {
            const cmd = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
            if (cmd.includes('retrace') && cmd.includes('serve') && fs.readlinkSync(`/proc/${entry}/cwd`) === root && alive(Number(entry))) {
                out.push(Number(entry));
            }
        } catch {
            // gone meanwhile, or not ours to read
        }
    }
    return out;
}

async function newPid(old: number): Promise<number> {
    return waitFor(`a new server after pid ${old}`, () => {
        const s = a.ctx.serverState;
        return s.kind === 'running' && s.pid !== old ? s.pid : undefined;
    }, 60_000);
}

suite('Retrace recovers from a killed server', () => {
    suiteSetup(async function () {
        this.timeout(120_000);
        a = await api();
        await a.ctx.ready();
    });

    test('kill -9 mid-turn: one automatic restart, state/status/chat derived from the new server', async function () {
        this.timeout(180_000);
        const first = a.ctx.serverPid;
        assert.ok(first !== undefined);
        assert.deepEqual(serverProcesses(), [first]);

        // A turn that waits on the run_command permission prompt: the chat and status say running.
        const asked = waitFor('permission prompt', () => a.chat.pendingPermissionIds.length > 0, 60_000);
        await a.chat.send('Create hello.txt, annotate app.py and generate a file');
        await asked;
        await waitFor('chat running', () => a.chat.running);
        await waitFor('status running', () => a.status.text.includes('Retrace: running'));

        process.kill(first, 'SIGKILL');
        const second = await newPid(first);
        assert.equal(alive(first), false);
        assert.deepEqual(serverProcesses(), [second], 'exactly one server runs');
        assert.equal(a.ctx.serverState.kind, 'running');

        // Derived from the new server: nothing runs, Send is usable, no stale permission prompt.
        await waitFor('chat idle after the restart', () => !a.chat.running);
        await waitFor('status idle after the restart', () => a.status.text.includes('Retrace: idle') && a.status.text);
        assert.deepEqual(a.chat.pendingPermissionIds, []);
        await waitFor('the interrupted call is shown as such', () =>
            a.chat.items.some(i => i.kind === 'tool' && i.tool === 'run_command' && i.status === 'interrupted'),
        );

        // The timeline works (the dead server's store lock was released) and kept the turn.
        await a.timeline.refresh();
        assert.ok(a.timeline.timeline?.checkpoints.some(c => c.tool === 'write_file'), 'checkpoints survived the crash');

        // The chat is not stuck: a new prompt runs to its end.
        const finished = nextEvent(a, e => e.kind === 'turnFinished', 90_000);
        const answer = setInterval(() => a.chat.pendingPermissionIds.forEach(id => a.chat.answer(id, 'allow')), 200);
        try {
            await a.chat.send('Carry on');
            await finished;
        } finally {
            clearInterval(answer);
        }
        assert.ok(!a.chat.running);
    });

    test('a prompt sent while the server restarts waits for the new server and runs there', async function () {
        this.timeout(120_000);
        const old = a.ctx.serverPid;
        assert.ok(old !== undefined);
        const seen: string[] = [];
        const watch = a.ctx.onDidChangeState(s => seen.push(s.kind));
        try {
            const restarting = a.ctx.restart();
            // Sent in the same tick as the restart: it must neither reach the closing server nor be
            // dropped, and the stopping server is never reported as running meanwhile.
            const finished = nextEvent(a, e => e.kind === 'turnFinished', 90_000);
            const answer = setInterval(() => a.chat.pendingPermissionIds.forEach(id => a.chat.answer(id, 'deny')), 200);
            try {
                const result = await a.chat.send('Carry on');
                assert.ok(result.sessionId);
                await finished;
            } finally {
                clearInterval(answer);
            }
            await restarting;
            assert.notEqual(a.ctx.serverPid, old, 'the turn ran on the new server');
            assert.equal(seen[0], 'starting', `the restart is announced before the old server stops (${seen.join(' → ')})`);
            assert.ok(!seen.slice(0, seen.indexOf('running')).includes('stopped'), seen.join(' → '));
        } finally {
            watch.dispose();
        }
    });

    test('concurrent start/restart calls never leave two servers', async function () {
        this.timeout(120_000);
        await Promise.all([a.ctx.restart(), a.ctx.start(), a.ctx.restart(), vscode.commands.executeCommand(COMMANDS.restartServer)]);
        await waitFor('running', () => a.ctx.serverState.kind === 'running');
        const pid = a.ctx.serverPid;
        assert.ok(pid !== undefined);
        await waitFor('old servers gone', () => serverProcesses().length === 1 && serverProcesses(), 20_000);
        assert.deepEqual(serverProcesses(), [pid]);
        await a.timeline.refresh();
    });

    test('a second crash inside the window is reported, not looped; Restart recovers', async function () {
        this.timeout(180_000);
        const one = a.ctx.serverPid;
        assert.ok(one !== undefined);
        process.kill(one, 'SIGKILL');
        const two = await newPid(one);
        process.kill(two, 'SIGKILL');
        const reason = await waitFor('failed state', () => {
            const s = a.ctx.serverState;
            return s.kind === 'failed' ? s.reason : undefined;
        }, 60_000);
        assert.match(reason, /again within/);
        await waitFor('status says not running', () => a.status.text.includes('server not running'));
        assert.deepEqual(serverProcesses(), []);

        await vscode.commands.executeCommand(COMMANDS.restartServer);
        const three = await newPid(two);
        assert.deepEqual(serverProcesses(), [three]);
        await a.timeline.refresh();
        assert.ok((a.timeline.timeline?.checkpoints.length ?? 0) > 0);
    });
});
