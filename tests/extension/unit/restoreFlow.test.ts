/**
 * The restore flow's pieces that need no workbench: which checkpoint a row command works on
 * (`Targets`: a node, an id, a subagent's row, another folder's row) and the questions before a
 * restore (`askBeforeRestore`: each renders the server's dry run, in a fixed order, and a cancel
 * anywhere sends nothing) and the undo's refusals answered (`undoLastRestore`). A scripted prompter answers; a fake client records requests.
 */
import * as assert from 'node:assert/strict';
import type { LanguageClient } from 'vscode-languageclient/node';
import { METHODS, Rpc, type BackgroundTaskView, type Checkpoint, type GitRestoreInfo, type RestoreResult, type RunningAgentTurn } from '../../../extension/src/client/protocol';
import { askBeforeRestore, RESTORE, type AskContext } from '../../../extension/src/commands/restoreAsk';
import { OVERWRITE_LABEL, SKIP_LABEL, type Confirmation } from '../../../extension/src/commands/restoreDecision';
import { Targets } from '../../../extension/src/commands/targets';
import { undoLastRestore } from '../../../extension/src/commands/undo';
import { setPrompter, type Prompter } from '../../../extension/src/ui';
import { AGENT_RUNNING_CODE, RESTORE_WHILE_AGENT_RUNS } from '../../../extension/src/views/models/agentModel';
import { BACKGROUND_RUNNING_CODE, RESTORE_ANYWAY, STOP_AND_RESTORE } from '../../../extension/src/views/models/backgroundModel';
import { FILES_ONLY, GIT_MOVED_CODE } from '../../../extension/src/views/models/gitModel';
import type { TimelineProvider } from '../../../extension/src/views/providers/timeline/provider';
import { checkpoint } from './fixtures';

/** An Rpc whose every request is recorded and answered with `cp`. */
function recordingRpc(cp: Checkpoint): { rpc: Rpc; sent: [string, Record<string, unknown>][] } {
    const sent: [string, Record<string, unknown>][] = [];
    const client = {
        sendRequest: (method: string, params: Record<string, unknown>) => {
            sent.push([method, params]);
            return Promise.resolve({ checkpoint: cp });
        },
    } as unknown as LanguageClient;
    return { rpc: new Rpc(client), sent };
}

suite('restore flow: the checkpoint a row command works on', () => {
    const known = checkpoint({ id: 'known' });
    const fromServer = checkpoint({ id: 'server-side' });
    const timeline = { agentFolder: '/w', checkpoint: (id: string) => (id === 'known' ? known : undefined), view: { selection: [] } } as unknown as TimelineProvider;
    const targets = new Targets(timeline);
    const node = (folder?: string, scope?: { sessionId: string; taskId: string }) => ({ kind: 'checkpoint', checkpoint: known, folder, scope });

    test('a node, an id the timeline shows, an id only the server knows', async () => {
        const { rpc, sent } = recordingRpc(fromServer);
        assert.equal((await targets.of(rpc, node())).cp, known);
        assert.equal((await targets.of(rpc, 'known')).cp, known);
        assert.deepEqual(sent, [], 'what the timeline shows is not asked again');
        assert.equal((await targets.of(rpc, 'other')).cp, fromServer);
        assert.deepEqual(sent, [[METHODS.checkpointGet, { id: 'other' }]]);
    });

    test("another folder's row: every request through its rpc names that folder", async () => {
        const { rpc, sent } = recordingRpc(fromServer);
        const target = await targets.of(rpc, node('/api'));
        assert.equal(target.folder, '/api');
        await target.rpc.request(METHODS.checkpointGet, { id: 'x' });
        assert.deepEqual(sent, [[METHODS.checkpointGet, { id: 'x', folder: '/api' }]]);
        assert.equal((await targets.of(rpc, node())).rpc, rpc, "the first folder's row: the rpc as it is");
    });

    test("a subagent's row is refused where only a workspace timeline works; another folder where only the first does", async () => {
        const { rpc } = recordingRpc(fromServer);
        const scoped = node(undefined, { sessionId: 's', taskId: 't' });
        assert.deepEqual((await targets.of(rpc, scoped)).scope, { sessionId: 's', taskId: 't' });
        await assert.rejects(targets.row(rpc, scoped), /not inside a subagent's/);
        await assert.rejects(targets.firstFolder(rpc, node('/api')), /first folder of the workspace only/);
        assert.equal(await targets.firstFolder(rpc, node('/w')), known, "the agent's folder named by its root");
        assert.equal(await targets.firstFolder(rpc, node()), known);
    });
});

/** Answers each modal from `answers` in order (undefined: cancel) and records what was asked. */
class Script implements Prompter {
    readonly asked: { message: string; detail: string; buttons: readonly string[] }[] = [];
    constructor(private readonly answers: (string | undefined)[]) {}
    modal(message: string, detail: string, buttons: readonly string[]): Promise<string | undefined> {
        this.asked.push({ message, detail, buttons });
        return Promise.resolve(this.answers.shift());
    }
    notify(): Promise<string | undefined> {
        return Promise.resolve(undefined);
    }
}

const CTX: AskContext = { mode: 'code', targetLabel: '“c1”', confirmOverwrite: true };
const PARAMS = { id: 'c1', mode: 'code' as const };
const CONFIRM: Confirmation = { kind: 'confirm', message: 'Restore code to “c1”? 1 file overwritten.', detail: 'overwrite: a.txt' };
const CONFLICT: Confirmation = { kind: 'conflict', message: '1 file with unsaved changes in the editor.', detail: 'a.txt: unsaved changes in the editor', conflicts: [], mergeable: [] };

function dryRun(over: Partial<RestoreResult> = {}): RestoreResult {
    return { outcome: { kind: 'preview' }, conversationHead: null, terminalNotes: [], backgroundTasks: [], askReason: false, undid: null, ...over } as RestoreResult;
}

const running = { command: 'npm run watch', handle: 'h1', pid: 1, sessionId: 's', startedAt: '', state: 'running', exitCode: null, stoppedBy: null } as BackgroundTaskView;
const agentTurn = { agent: 'claude-code', agentTitle: 'Claude Code', sessionId: 'x', prompt: 'fix it', since: null, lastActivityAt: null } as RunningAgentTurn;
const gitMoved: GitRestoreInfo = { headMoved: true, branchMoved: false, currentBranch: 'main', currentHead: 'bbbbbbb', targetBranch: 'main', targetHead: 'aaaaaaa', parkedBranch: null, parkedCommit: null };

async function ask(answers: (string | undefined)[], decision: Confirmation, dry: RestoreResult | undefined, ctx: AskContext = CTX): Promise<{ params: unknown; asked: Script['asked'] }> {
    const script = new Script(answers);
    const restore = setPrompter(script);
    try {
        return { params: await askBeforeRestore(ctx, dry, decision, PARAMS), asked: script.asked };
    } finally {
        restore();
    }
}

suite('restore flow: the questions before a restore', () => {
    test('each question, its answer in the parameters; a cancel sends nothing', async () => {
        const rows: [string, (string | undefined)[], Confirmation, RestoreResult | undefined, unknown, number][] = [
            ['nothing to ask', [], { kind: 'proceed' }, dryRun(), { ...PARAMS, dryRun: false }, 0],
            ['conversation only (no dry run)', [], { kind: 'proceed' }, undefined, { ...PARAMS, dryRun: false }, 0],
            ['confirmed', [RESTORE], CONFIRM, dryRun(), { ...PARAMS, dryRun: false }, 1],
            ['confirmation cancelled', [undefined], CONFIRM, dryRun(), undefined, 1],
            ['conflict: skip', [SKIP_LABEL], CONFLICT, dryRun(), { ...PARAMS, dryRun: false, skipConflicts: true }, 1],
            ['conflict: overwrite', [OVERWRITE_LABEL], CONFLICT, dryRun(), { ...PARAMS, dryRun: false, force: true }, 1],
            ['conflict cancelled', [undefined], CONFLICT, dryRun(), undefined, 1],
            ['background: stop', [STOP_AND_RESTORE], { kind: 'proceed' }, dryRun({ backgroundTasks: [running] }), { ...PARAMS, dryRun: false, backgroundTasks: 'stop' }, 1],
            ['background: keep', [RESTORE_ANYWAY], { kind: 'proceed' }, dryRun({ backgroundTasks: [running] }), { ...PARAMS, dryRun: false, backgroundTasks: 'keep' }, 1],
            ['background cancelled', [undefined], { kind: 'proceed' }, dryRun({ backgroundTasks: [running] }), undefined, 1],
            ['another agent: proceed', [RESTORE_WHILE_AGENT_RUNS], { kind: 'proceed' }, dryRun({ agentTurns: [agentTurn] }), { ...PARAMS, dryRun: false, whileAgentRuns: 'proceed' }, 1],
            ['another agent cancelled', [undefined], { kind: 'proceed' }, dryRun({ agentTurns: [agentTurn] }), undefined, 1],
            ['git moved: files only (its modal stands in for the confirmation)', [FILES_ONLY], CONFIRM, dryRun({ git: gitMoved }), { ...PARAMS, dryRun: false, gitChoice: 'filesOnly' }, 1],
            ['git moved cancelled', [undefined], CONFIRM, dryRun({ git: gitMoved }), undefined, 1],
            ['a cancel stops the questions that follow', [SKIP_LABEL, undefined], CONFLICT, dryRun({ backgroundTasks: [running], agentTurns: [agentTurn] }), undefined, 2],
        ];
        for (const [what, answers, decision, dry, params, modals] of rows) {
            const got = await ask([...answers], decision, dry);
            assert.deepEqual(got.params, params, what);
            assert.equal(got.asked.length, modals, `${what}: ${JSON.stringify(got.asked.map(q => q.message))}`);
        }
    });

    test('in order: the plan, background commands, another agent, git; git carries the confirmation words', async () => {
        const all = dryRun({ backgroundTasks: [running], agentTurns: [agentTurn], git: gitMoved });
        const { params, asked } = await ask([RESTORE_ANYWAY, RESTORE_WHILE_AGENT_RUNS, FILES_ONLY], CONFIRM, all);
        assert.deepEqual(params, { ...PARAMS, dryRun: false, backgroundTasks: 'keep', whileAgentRuns: 'proceed', gitChoice: 'filesOnly' });
        assert.deepEqual(asked.slice(0, 2).map(q => q.buttons), [[STOP_AND_RESTORE, RESTORE_ANYWAY], [RESTORE_WHILE_AGENT_RUNS]]);
        assert.ok(asked[2]?.buttons.includes(FILES_ONLY));
        assert.equal(asked.length, 3, 'no separate confirmation');
        assert.match(asked[0]?.message ?? '', /background task/);
        assert.match(asked[2]?.message ?? '', /^Git moved since “c1”/);
        assert.ok(asked[2]?.detail.startsWith(`${CONFIRM.message}\n${CONFIRM.detail}\n\n`), asked[2]?.detail);
    });

    test('an undo asks no confirmation (the user just asked for exactly this)', async () => {
        const { params, asked } = await ask([], CONFIRM, dryRun(), { ...CTX, confirmOverwrite: false });
        assert.deepEqual(params, { ...PARAMS, dryRun: false });
        assert.deepEqual(asked, []);
    });
});

/** An Rpc answering `retrace/restore/undoLast` from a script: an error (a refusal) or a result. */
function undoRpc(script: (Error | RestoreResult | null)[]): { rpc: Rpc; sent: Record<string, unknown>[] } {
    const sent: Record<string, unknown>[] = [];
    const client = {
        sendRequest: (_method: string, params: Record<string, unknown>) => {
            sent.push(params);
            const next = script.shift();
            return next instanceof Error ? Promise.reject(next) : Promise.resolve(next ?? null);
        },
    } as unknown as LanguageClient;
    return { rpc: new Rpc(client), sent };
}

function refusal(code: string): Error {
    return Object.assign(new Error(`refused: ${code}`), { data: { code } });
}

const undone = dryRun({ outcome: { kind: 'applied', mode: 'code', targetId: 's1', dryRun: false, files: [], plan: null, checkpoint: null, safetyCheckpointId: null, skipped: [] }, undid: 'Undid: Restore code to “c1”' });

suite('restore flow: undo last restore', () => {
    test("a refusal the user answers is sent again with the answer; a cancel sends nothing more; the editor's facts go first", async () => {
        const rows: [string, (Error | RestoreResult | null)[], (string | undefined)[], Record<string, unknown>[], boolean][] = [
            ['undone at once', [undone], [], [{}], true],
            ['git moved: files only', [refusal(GIT_MOVED_CODE), undone], [FILES_ONLY], [{}, { gitChoice: 'filesOnly' }], true],
            ['git moved: cancelled', [refusal(GIT_MOVED_CODE)], [undefined], [{}], false],
            ['another agent: undo anyway', [refusal(AGENT_RUNNING_CODE), undone], [RESTORE_WHILE_AGENT_RUNS], [{}, { whileAgentRuns: 'proceed' }], true],
            ['background: stop them', [refusal(BACKGROUND_RUNNING_CODE), undone], [STOP_AND_RESTORE], [{}, { backgroundTasks: 'stop' }], true],
            ['git, then another agent', [refusal(GIT_MOVED_CODE), refusal(AGENT_RUNNING_CODE), undone], [FILES_ONLY, RESTORE_WHILE_AGENT_RUNS], [{}, { gitChoice: 'filesOnly' }, { gitChoice: 'filesOnly', whileAgentRuns: 'proceed' }], true],
            ['nothing to undo', [null], [], [{}], false],
        ];
        for (const [what, script, answers, sentParams, restored] of rows) {
            const { rpc, sent } = undoRpc([...script]);
            const events: string[] = [];
            const hooks = { beforeRestore: () => Promise.resolve(void events.push('facts')), onRestored: () => void events.push('restored'), onConversationRestored: () => void events.push('conversation') };
            const restorePrompter = setPrompter(new Script([...answers]));
            try {
                const result = await undoLastRestore(rpc, hooks);
                assert.equal(result !== undefined, restored, what);
            } finally {
                restorePrompter();
            }
            assert.deepEqual(sent, sentParams, what);
            assert.deepEqual(events, restored ? ['facts', 'restored'] : ['facts'], what);
        }
    });

    test('any other failure is thrown on', async () => {
        const { rpc } = undoRpc([new Error('boom')]);
        await assert.rejects(undoLastRestore(rpc, { onRestored: () => undefined, onConversationRestored: () => undefined }), /boom/);
    });
});
