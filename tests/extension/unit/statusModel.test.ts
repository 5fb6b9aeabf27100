import * as assert from 'node:assert/strict';
import type { AgentEvent } from '../../../extension/src/client/protocol';
import { AgentActivityModel, statusLook, type AgentActivity } from '../../../extension/src/views/models/statusModel';

const started = (sessionId: string, agent?: string): AgentEvent => ({ kind: 'turnStarted', sessionId, text: 'go', turnId: null, ...(agent === undefined ? {} : { agent }) });
const finished = (sessionId: string, stopReason: 'end_turn' | 'error' = 'end_turn', agent?: string): AgentEvent => ({
    kind: 'turnFinished',
    sessionId,
    stopReason,
    turnId: null,
    ...(agent === undefined ? {} : { agent }),
});
const error = (message: string, retrying = false): AgentEvent => ({ kind: 'error', sessionId: 's1', message, retrying, detail: null, turnId: null });
const delta: AgentEvent = { kind: 'textDelta', sessionId: 's1', text: 'hi', turnId: null };

suite('status bar model: the agent activity', () => {
    const cases: [string, AgentEvent[], AgentActivity, boolean, string][] = [
        ['nothing happened', [], 'idle', false, ''],
        ['a turn runs', [started('s1')], 'running', true, ''],
        ['a turn ended', [started('s1'), finished('s1')], 'idle', false, ''],
        ['one of two turns ended', [started('s1'), started('s2'), finished('s1')], 'running', true, ''],
        ['a turn ended in error', [started('s1'), finished('s1', 'error')], 'error', false, ''],
        ['an error, not retried', [started('s1'), error('rate limited')], 'error', true, 'rate limited'],
        ['an error being retried changes nothing', [started('s1'), error('busy', true)], 'running', true, ''],
        ["another agent's turn is not Retrace's", [started('c1', 'claude-code')], 'idle', false, ''],
        ["another agent's turn end is not Retrace's", [started('s1'), finished('s1', 'end_turn', 'gemini-cli')], 'running', true, ''],
        ['stream events change nothing', [delta], 'idle', false, ''],
    ];
    for (const [name, events, activity, anyRunning, lastError] of cases) {
        test(name, () => {
            const m = new AgentActivityModel();
            events.forEach(e => m.apply(e));
            assert.equal(m.activity, activity);
            assert.equal(m.anyRunning, anyRunning);
            assert.equal(m.lastError, lastError);
        });
    }

    test('apply says which events may change what the item shows', () => {
        const m = new AgentActivityModel();
        assert.deepEqual(
            [started('s1'), error('x', true), error('y'), finished('s1'), delta, started('c', 'claude-code'), finished('c', 'end_turn', 'claude-code')].map(e => m.apply(e)),
            [true, true, true, true, false, false, false],
        );
    });

    test("the server's session list is corrected by events that came while it was asked", () => {
        const m = new AgentActivityModel();
        m.apply(started('old'));
        m.beginSync();
        m.apply(started('s2')); // newer than the answer, which does not list it yet
        m.apply(finished('s3')); // ended while the answer still says running
        m.endSync(['s1', 's3']);
        assert.equal(m.activity, 'running');
        m.apply(finished('s1'));
        m.apply(finished('s2'));
        assert.equal(m.activity, 'idle', 'old was dropped by the list; s1, s2 ended; s3 ended before');
        assert.equal(m.anyRunning, false);
    });

    test('a reset forgets running turns (a restarted server runs none)', () => {
        const m = new AgentActivityModel();
        m.apply(started('s1'));
        m.reset();
        assert.equal(m.activity, 'idle');
        assert.equal(m.anyRunning, false);
    });
});

suite('status bar model: the look for a server state', () => {
    const cases: [Parameters<typeof statusLook>, string, string, string | undefined][] = [
        [['failed', true, 'running'], '$(error)', 'server not running', 'statusBarItem.errorBackground'],
        [['stopped', false, 'idle'], '$(history)', 'not started', undefined],
        [['stopped', true, 'idle'], '$(loading~spin)', 'starting', undefined],
        [['starting', true, 'idle'], '$(loading~spin)', 'starting', undefined],
        [['running', true, 'idle'], '$(history)', 'idle', undefined],
        [['running', true, 'running'], '$(sync~spin)', 'running', undefined],
        [['running', true, 'error'], '$(warning)', 'error', 'statusBarItem.warningBackground'],
    ];
    for (const [args, icon, label, background] of cases) {
        test(`${args.join(' / ')} → ${label}`, () => {
            assert.deepEqual(statusLook(...args), { icon, label, background });
        });
    }
});
