import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { RunningAgentTurn, SessionStory, StoryRow, StoryTurn, TimelineTreeResult } from '../../../extension/src/client/protocol';
import { MODE_PICKS, modePicks } from '../../../extension/src/commands/restorePick';
import { CODE_ONLY_CONTEXT, RESTORE_WHILE_AGENT_RUNS, agentTurnQuestion, codeOnlyReason, isAgentRefusal } from '../../../extension/src/views/models/agentModel';
import { isBackgroundRefusal } from '../../../extension/src/views/models/backgroundModel';
import { lookOf } from '../../../extension/src/views/models/timelineLook';
import { buildTimeline, indexNodes, type TimelineNode } from '../../../extension/src/views/models/timelineModel';
import { checkpoint, file } from './fixtures';

const NOW = Date.parse('2026-01-01T01:00:00Z');
const REASON = 'Claude Code keeps its own conversation; Retrace restores only the code';
const CODE_ONLY = { available: false, reason: REASON };

function row(id: string, title: string, over: Partial<StoryRow> = {}): StoryRow {
    const cp = checkpoint({ id, sessionId: 'claude-code-s1', turnId: 'ct1', tool: 'Write', toolCallId: `toolu_${id}`, label: 'notes.txt', meta: { agent: 'claude-code' }, files: [file('notes.txt', 1, 0, 'added')] });
    return { kind: 'row', checkpoint: cp, title, summary: 'notes.txt +1 −0', toolStatus: null, isHead: false, branch: false, terminal: null, conversationRestore: CODE_ONLY, ...over };
}

function turn(turnId: string, number: number, prompt: string, rows: StoryRow[], state: 'running' | 'ended' | 'interrupted' | null): StoryTurn {
    return { kind: 'turn', turnId, number, prompt, createdAt: rows[0]?.checkpoint.createdAt ?? '2026-01-01T00:59:00Z', abandoned: false, forkedFrom: null, rows, state };
}

function agentStory(items: StoryTurn[], running: boolean): SessionStory {
    const rowCount = items.reduce((n, t) => n + t.rows.length, 0);
    return {
        session: { id: 'claude-code-s1', title: 'write the notes', createdAt: '2026-01-01T00:30:00Z', running, checkpointCount: rowCount, agent: 'claude-code', agentTitle: 'Claude Code', lastActivityAt: '2026-01-01T00:59:00Z' },
        workspace: false,
        turnCount: items.length,
        rowCount,
        rowsOmitted: 0,
        items,
        nextBefore: null,
        outline: false,
    };
}

function tree(story: SessionStory): TimelineTreeResult {
    return { head: null, headSessionId: null, sessions: [story] };
}

function nodes(t: TimelineTreeResult): TimelineNode[] {
    return [...indexNodes(buildTimeline(t, { running: [] })).values()];
}

const TURN: RunningAgentTurn = { agent: 'claude-code', agentTitle: 'Claude Code', sessionId: 'claude-code-s1', turnId: 'ct1', prompt: 'write the notes', since: '2026-01-01T00:30:00Z', lastActivityAt: null };

suite('other agents in the timeline', () => {
    test('an agent session is labelled with its agent (title and icon), running or not', () => {
        const story = agentStory([turn('ct1', 1, 'write the notes', [row('w1', 'Write: notes.txt')], 'ended')], false);
        const session = nodes(tree(story)).find(n => n.kind === 'session');
        assert.ok(session !== undefined);
        const look = lookOf(session, NOW);
        assert.match(look.label, /^Claude Code: session of /);
        assert.equal(look.icon, 'hubot');
        assert.equal(look.contextValue, 'session.agent');
        const running = nodes(tree({ ...story, session: { ...story.session, running: true } })).find(n => n.kind === 'session');
        assert.ok(running !== undefined);
        assert.equal(lookOf(running, NOW).icon, 'sync~spin');
        assert.match(lookOf(running, NOW).description, /running/);
    });

    test('turns say running / interrupted as the server stamps them; ended ones say nothing more', () => {
        const story = agentStory(
            [
                turn('ct1', 1, 'first', [row('w1', 'Write: notes.txt')], 'interrupted'),
                turn('ct2', 2, 'second', [row('w2', 'Write: notes.txt')], 'ended'),
                turn('ct3', 3, 'third', [row('w3', 'Bash: rm old.txt')], 'running'),
            ],
            true,
        );
        const looks = nodes(tree(story))
            .filter(n => n.kind === 'turn')
            .map(n => lookOf(n, NOW));
        assert.deepEqual(
            looks.map(l => [l.label, l.icon, l.description.split(' · ')[0]]),
            [
                ['1. first', 'debug-disconnect', 'interrupted'],
                ['2. second', 'comment', '1 step'],
                ['3. third', 'sync~spin', 'running'],
            ],
        );
    });

    test('a row the server marks code-only gets its own context value (no conversation menu) and keeps its reason', () => {
        const story = agentStory([turn('ct1', 1, 'p', [row('w1', 'Write: notes.txt'), row('own', 'write_file: a.txt', { conversationRestore: null })], 'ended')], false);
        const rows = nodes(tree(story)).filter(n => n.kind === 'checkpoint');
        assert.deepEqual(
            rows.map(n => lookOf(n, NOW).contextValue),
            [CODE_ONLY_CONTEXT, 'checkpoint'],
        );
        assert.equal(lookOf(rows[0] as TimelineNode, NOW).icon, 'edit'); // Claude Code's Write
        const [first, second] = rows;
        assert.ok(first?.kind === 'checkpoint' && second?.kind === 'checkpoint');
        assert.equal(codeOnlyReason(first.row), REASON);
        assert.equal(codeOnlyReason(second.row), undefined);
        assert.equal(codeOnlyReason({ ...first.row, conversationRestore: { available: true, reason: null } }), undefined);
        const { conversationRestore: _omitted, ...older } = first.row;
        assert.equal(codeOnlyReason(older), undefined); // an older server sends no field
        // The row menus as the manifest declares them: code restore and views, never a conversation mode.
        const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '../../../package.json'), 'utf8')) as {
            contributes: { menus: Record<string, { command: string; when?: string; group?: string }[]> };
        };
        const offered = new Set<string>();
        for (const item of pkg.contributes.menus['view/item/context'] ?? []) {
            const match = /view == retrace\.timeline && viewItem =~ \/(.+?)\/(?: |$)/.exec(item.when ?? '');
            if (match?.[1] !== undefined && new RegExp(match[1]).test(CODE_ONLY_CONTEXT)) {
                offered.add(item.command);
            }
        }
        for (const command of ['retrace.checkpoint.restoreCode', 'retrace.checkpoint.openDiff', 'retrace.checkpoint.showChangesSince', 'retrace.checkpoint.copyId']) {
            assert.ok(offered.has(command), command);
        }
        for (const command of ['retrace.checkpoint.restoreConversation', 'retrace.checkpoint.restoreBoth', 'retrace.checkpoint.fork', 'retrace.checkpoint.summarizeFrom']) {
            assert.ok(!offered.has(command), command);
        }
    });

    test('the running-agent question names agent, session, since when and the prompt; one button', () => {
        const q = agentTurnQuestion([TURN]);
        assert.match(q.message, /^Claude Code is running a turn/);
        assert.match(q.detail, /Claude Code — session claude-code-s1, since \d\d:\d\d: “write the notes”/);
        assert.deepEqual(q.buttons, [RESTORE_WHILE_AGENT_RUNS]);
        const two = agentTurnQuestion([TURN, { ...TURN, agent: 'gemini-cli', agentTitle: 'Gemini CLI', sessionId: 'gemini-cli-x', prompt: '', since: null }]);
        assert.match(two.message, /^2 agents are running/);
        assert.match(two.detail, /Gemini CLI — session gemini-cli-x, since an unknown time\n/);
    });

    test('the restore quick pick offers code only where the server says so, with its reason', () => {
        assert.equal(modePicks(undefined), MODE_PICKS);
        const picks = modePicks(REASON);
        assert.deepEqual(picks.map(p => p.mode), ['code']);
        assert.match(picks[0]?.detail ?? '', /Claude Code keeps its own conversation/);
    });

    test('the refusal is told apart by its error code', () => {
        assert.equal(isAgentRefusal({ message: 'x', data: { code: 'agentTurnRunning' } }), true);
        assert.equal(isAgentRefusal({ message: 'x', data: { code: 'backgroundTasksRunning' } }), false);
        assert.equal(isBackgroundRefusal({ message: 'x', data: { code: 'agentTurnRunning' } }), false);
        assert.equal(isAgentRefusal(new Error('agentTurnRunning')), false);
        assert.equal(isAgentRefusal(undefined), false);
    });
});
