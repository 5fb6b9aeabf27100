import * as assert from 'node:assert/strict';
import type { AgentEvent, ConversationView } from '../../../extension/src/client/protocol';
import { ChatTranscript } from '../../../extension/src/views/models/chatModel';
import { Announcer } from '../../../extension/src/webview/announce';
import { isWebviewMessage, type ChatItem } from '../../../extension/src/webview/messages';
import { Coalescer, type Clock } from '../../../extension/src/webview/throttle';
import { compactCost, compactCount, usageLine, usageSpoken } from '../../../extension/src/webview/usageLine';

/** A clock driven by hand: `tick(ms)` runs the timers that came due. */
function manualClock(): Clock & { tick(ms: number): void } {
    let now = 0;
    let timers: { at: number; fn: () => void; id: number }[] = [];
    let next = 0;
    return {
        now: () => now,
        later: (fn, ms) => {
            timers.push({ at: now + ms, fn, id: ++next });
            return next;
        },
        cancel: h => (timers = timers.filter(t => t.id !== h)),
        tick(ms) {
            now += ms;
            const due = timers.filter(t => t.at <= now);
            timers = timers.filter(t => t.at > now);
            due.forEach(t => t.fn());
        },
    };
}

suite('chat log: streaming throttle', () => {
    test('renders at once, then at most once per interval with the newest version, never losing the last', () => {
        const clock = manualClock();
        const rendered: string[] = [];
        const c = new Coalescer<string>(100, clock, (_k, v) => rendered.push(v));
        c.push('a', 'H');
        assert.deepEqual(rendered, ['H'], 'the first chunk shows at once');
        clock.tick(10);
        c.push('a', 'He');
        clock.tick(10);
        c.push('a', 'Hel');
        assert.deepEqual(rendered, ['H']);
        clock.tick(80);
        assert.deepEqual(rendered, ['H', 'Hel'], 'one render per interval, the newest version');
        clock.tick(5);
        c.push('a', 'Hello');
        assert.deepEqual(rendered, ['H', 'Hel']);
        c.flush();
        assert.deepEqual(rendered, ['H', 'Hel', 'Hello'], 'flush shows the final chunk at once');
        clock.tick(1000);
        assert.equal(rendered.length, 3, 'nothing twice');
        c.push('a', 'x');
        c.drop();
        clock.tick(1000);
        assert.equal(rendered.length, 4, 'the interval had passed: shown at once; drop has nothing left');
    });

    test('the last chunk is rendered by its timer when nothing else comes', () => {
        const clock = manualClock();
        const rendered: string[] = [];
        const c = new Coalescer<string>(100, clock, (_k, v) => rendered.push(v));
        c.push('a', '1');
        c.push('a', '12');
        assert.equal(c.hasPending, true);
        clock.tick(100);
        assert.deepEqual(rendered, ['1', '12']);
        assert.equal(c.hasPending, false);
    });
});

suite('chat log: announcements', () => {
    const assistant = (id: string, text: string): ChatItem => ({ kind: 'assistant', id, text });
    test('a streamed message is said once, when it is finished, as plain text', () => {
        const a = new Announcer();
        assert.deepEqual(a.update(assistant('x', '## Pl')), []);
        assert.deepEqual(a.update(assistant('x', '## Plan\n\n- **one**')), []);
        const tool: ChatItem = { kind: 'tool', id: 't1', tool: 'edit_file', summary: 'edit_file a.py', status: 'running', output: '' };
        assert.deepEqual(a.update(tool), [
            { politeness: 'polite', text: 'Plan one' },
            { politeness: 'polite', text: 'edit_file a.py: running' },
        ]);
        assert.deepEqual(a.update({ ...tool, output: 'more' }), [], 'same status: nothing');
        assert.deepEqual(a.update({ ...tool, status: 'ok' }), [{ politeness: 'polite', text: 'edit_file a.py: done' }]);
        a.update(assistant('y', 'All done.'));
        assert.deepEqual(a.running(false), [{ politeness: 'polite', text: 'All done.' }]);
        assert.deepEqual(a.running(false), [], 'once');
        assert.deepEqual(a.update({ kind: 'error', id: 'e', text: 'boom' }), [{ politeness: 'assertive', text: 'Error: boom' }]);
        assert.deepEqual(a.update({ kind: 'error', id: 'e', text: 'boom' }), []);
    });

    test('a reload announces nothing it shows', () => {
        const a = new Announcer();
        const items: ChatItem[] = [assistant('x', 'old'), { kind: 'tool', id: 't1', tool: 't', summary: 't', status: 'ok', output: '' }];
        a.reset(items);
        assert.deepEqual(a.update({ kind: 'tool', id: 't1', tool: 't', summary: 't', status: 'ok', output: '' }), []);
        assert.deepEqual(a.running(false), []);
    });
});

suite('chat log: usage per turn', () => {
    test('compact numbers', () => {
        assert.equal(compactCount(850), '850');
        assert.equal(compactCount(1234), '1.23k');
        assert.equal(compactCount(12_345), '12.3k');
        assert.equal(compactCount(2_500_000), '2.5M');
        assert.equal(compactCost(0.0123), '$0.012');
        assert.equal(compactCost(0.0004), '<$0.001');
        assert.equal(compactCost(2.5), '$2.50');
        assert.equal(usageLine({ inputTokens: 200, cacheCreationInputTokens: 2000, cacheReadInputTokens: 10_100, outputTokens: 850, costUsd: 0.0121 }), '12.3k in (10.1k cached) · 850 out · $0.012');
    });

    test('a provider without prices: the line says the cost is unknown, never a number', () => {
        const base = { inputTokens: 1200, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, outputTokens: 40 };
        // A price of 0 with costUnknown (nothing known) and a partial sum (some calls priced) alike.
        for (const costUsd of [0, 0.0121, 3]) {
            const u = { ...base, costUsd, costUnknown: true };
            assert.equal(usageLine(u), '1.2k in · 40 out · cost unknown', `costUsd ${costUsd}`);
            assert.doesNotMatch(usageLine(u), /\$/);
            assert.match(usageSpoken(u), /cost unknown\.$/);
            assert.doesNotMatch(usageSpoken(u), /\$/);
            assert.equal(usageLine({ ...u, cacheReadInputTokens: 1000 }), '2.2k in (1k cached) · 40 out · cost unknown');
        }
        assert.equal(usageLine({ ...base, costUsd: 0, costUnknown: false }), '1.2k in · 40 out · $0', 'a known zero stays $0');
        assert.equal(usageLine({ ...base, costUsd: 0.5 }), '1.2k in · 40 out · $0.5', 'costUnknown absent: a known price');
    });

    test('live: the server’s turn sums end the turn; a tool call learns its checkpoint', () => {
        const t = new ChatTranscript();
        const s = { sessionId: 's1', turnId: 't1' };
        const turn = { inputTokens: 10, outputTokens: 5, cacheCreationInputTokens: 0, cacheReadInputTokens: 100, costUsd: 0.01, costUnknown: false };
        const usage = { kind: 'usage', inputTokens: 10, outputTokens: 5, cacheCreationInputTokens: 0, cacheReadInputTokens: 100, totalInputTokens: 10, totalOutputTokens: 5, totalCacheCreationInputTokens: 0, totalCacheReadInputTokens: 100, costUsd: 9, costUnknown: false, turn, ...s } satisfies AgentEvent;
        t.apply({ kind: 'turnStarted', text: 'go', ...s });
        t.apply({ kind: 'toolCallStarted', toolCallId: 'tc1', tool: 'write_file', input: { path: 'a' }, ...s });
        const cp = { id: 'cp1', kind: 'tool', toolCallId: 'tc1', parent: 'cp0' } as unknown as Extract<AgentEvent, { kind: 'checkpointCreated' }>['checkpoint'];
        assert.deepEqual(t.apply({ kind: 'checkpointCreated', checkpoint: cp, ...s }).map(i => i.kind === 'tool' && i.checkpoint), ['cp1']);
        t.apply({ kind: 'toolCallFinished', toolCallId: 'tc1', tool: 'write_file', status: 'ok', output: 'ok', durationMs: 1, changedPaths: ['a'], ...s });
        assert.equal(t.apply(usage).length, 0, 'nothing shown mid-turn');
        const done = t.apply({ kind: 'turnFinished', stopReason: 'end_turn', ...s });
        assert.deepEqual(done, [{ kind: 'usage', id: 'usage:t1', usage: turn }]);
        const tool = t.all.find(i => i.kind === 'tool');
        assert.ok(tool?.kind === 'tool' && tool.checkpoint === 'cp1', 'the finished call keeps its checkpoint');
    });

    test('reload: the usage line follows each turn’s last message; tool calls carry their checkpoints', () => {
        const u = (n: number): ConversationView['usage'] => ({ inputTokens: n, outputTokens: n, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, costUsd: n / 1000, costUnknown: false });
        const msg = (id: string, role: 'user' | 'assistant', turnId: string, content: Record<string, unknown>[]): ConversationView['messages'][number] => ({ id, role, turnId, kind: role === 'user' ? 'prompt' : 'assistant', createdAt: null, content });
        const view: ConversationView = {
            sessionId: 's1',
            head: 'm4',
            running: false,
            messagesOmitted: 0,
            usage: u(3),
            costUsd: 0.003,
            withdrawn: [],
            toolStatuses: { tu1: 'ok' },
            toolCheckpoints: { tu1: 'cp1' },
            turnUsage: { t1: u(1), t2: u(2) },
            messages: [
                msg('m1', 'user', 't1', [{ type: 'text', text: 'one' }]),
                msg('m2', 'assistant', 't1', [{ type: 'tool_use', id: 'tu1', name: 'write_file', input: { path: 'a' } }]),
                msg('m3', 'user', 't2', [{ type: 'text', text: 'two' }]),
                msg('m4', 'assistant', 't2', [{ type: 'text', text: 'ok' }]),
            ],
        };
        const t = new ChatTranscript();
        t.load(view);
        assert.deepEqual(t.all.map(i => `${i.kind}:${i.id}`), ['user:m1:0', 'tool:tu1', 'usage:usage:t1', 'user:m3:0', 'assistant:m4:0', 'usage:usage:t2']);
        const tool = t.all[1];
        assert.ok(tool?.kind === 'tool' && tool.checkpoint === 'cp1');
        t.load({ ...view, running: true });
        assert.equal(t.all.filter(i => i.kind === 'usage').length, 1, 'a running turn has no line yet');
    });

    test('the webview may ask for links, copies, diffs and checkpoints, nothing else', () => {
        assert.equal(isWebviewMessage({ type: 'openLink', href: 'https://x' }), true);
        assert.equal(isWebviewMessage({ type: 'toolDiff', toolCallId: 'a', checkpoint: 'b' }), true);
        assert.equal(isWebviewMessage({ type: 'toolDiff', toolCallId: 'a' }), false);
        assert.equal(isWebviewMessage({ type: 'openCheckpoint', checkpoint: 1 }), false);
        assert.equal(isWebviewMessage({ type: 'copy', text: 'x' }), true);
        assert.equal(isWebviewMessage({ type: 'toString' }), false);
    });
});
