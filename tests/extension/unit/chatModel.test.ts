import * as assert from 'node:assert/strict';
import type { AgentEvent, ConversationView } from '../../../extension/src/client/protocol';
import { ChatTranscript, toolSummary } from '../../../extension/src/views/models/chatModel';

const s = { sessionId: 's1', turnId: 't1' };

suite('chat transcript', () => {
    test('streams text, collapses tool calls with status, ends the turn', () => {
        const t = new ChatTranscript();
        const events: AgentEvent[] = [
            { kind: 'turnStarted', text: 'make hello', ...s },
            { kind: 'textDelta', text: 'I will ', ...s },
            { kind: 'textDelta', text: 'write it.', ...s },
            { kind: 'toolCallStarted', toolCallId: 'tc1', tool: 'write_file', input: { path: 'hello.txt', content: 'x' }, ...s },
            { kind: 'toolCallFinished', toolCallId: 'tc1', tool: 'write_file', status: 'ok', output: 'wrote 2 bytes', durationMs: 3, changedPaths: ['hello.txt'], ...s },
            { kind: 'toolCallStarted', toolCallId: 'tc2', tool: 'run_command', input: { command: 'make\nother' }, ...s },
        ];
        for (const e of events) {
            t.apply(e);
        }
        assert.equal(t.isRunning, true);
        assert.deepEqual(t.all.map(i => i.kind), ['user', 'assistant', 'tool', 'tool']);
        const [, assistant, tool1, tool2] = t.all;
        assert.ok(assistant?.kind === 'assistant' && tool1?.kind === 'tool' && tool2?.kind === 'tool');
        assert.equal(assistant.text, 'I will write it.');
        assert.equal(tool1.summary, 'write_file hello.txt');
        assert.equal(tool1.status, 'ok');
        assert.equal(tool2.summary, 'run_command: make … (+1 more line)');
        const changed = t.apply({ kind: 'turnFinished', stopReason: 'cancelled', ...s });
        assert.equal(t.isRunning, false);
        assert.deepEqual(changed.map(i => i.kind), ['tool', 'user', 'notice'], 'the stopped call and the prompt (now retryable) are re-posted');
        assert.equal(t.all.find(i => i.id === 'tc2' && i.kind === 'tool')?.kind, 'tool');
        const stopped = t.all.find(i => i.id === 'tc2');
        assert.ok(stopped?.kind === 'tool');
        assert.equal(stopped.status, 'cancelled');
    });

    test('a "[Retrace note…]" Retrace added to a prompt shows as a system note, the prompt as the user\'s', () => {
        const t = new ChatTranscript();
        const note = '[Retrace note: the conversation was restored to checkpoint c1, but the workspace files were not.\n- modified a.py (+1 -1)]';
        t.load({
            sessionId: 's1', head: 'm1', running: false, messagesOmitted: 0,
            usage: { inputTokens: 0, outputTokens: 0, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, costUsd: 0, costUnknown: false },
            costUsd: 0, withdrawn: [], toolCheckpoints: {}, turnUsage: {}, toolStatuses: {},
            messages: [{ id: 'm1', kind: 'prompt', role: 'user', turnId: 't2', createdAt: null, content: [{ type: 'text', text: note }, { type: 'text', text: 'go on' }] }],
        });
        assert.deepEqual(t.all.map(i => [i.kind, 'text' in i ? i.text.split('\n')[0] : '']), [
            ['notice', 'Retrace told the model: the conversation was restored to checkpoint c1, but the workspace files were not.'],
            ['user', 'go on'],
        ]);
    });

    test('loads a conversation: tool results pair with their calls', () => {
        const view: ConversationView = {
            sessionId: 's1',
            head: 'm4',
            running: false,
            messagesOmitted: 0,
            usage: { inputTokens: 10, outputTokens: 5, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, costUsd: 0, costUnknown: false },
            costUsd: 0,
            withdrawn: [],
            toolCheckpoints: {},
            turnUsage: {},
            toolStatuses: {},
            messages: [
                { id: 'm1', kind: 'prompt', role: 'user', turnId: 't1', createdAt: null, content: [{ type: 'text', text: 'make hello' }] },
                {
                    id: 'm2',
                    kind: 'assistant',
                    role: 'assistant',
                    turnId: 't1',
                    createdAt: null,
                    content: [
                        { type: 'text', text: 'Sure.' },
                        { type: 'tool_use', id: 'tu1', name: 'edit_file', input: { path: 'src/app.py' } },
                        { type: 'tool_use', id: 'tu2', name: 'run_command', input: { command: 'ls' } },
                    ],
                },
                {
                    id: 'm3',
                    kind: 'toolResults',
                    role: 'user',
                    turnId: 't1',
                    createdAt: null,
                    content: [
                        { type: 'tool_result', tool_use_id: 'tu1', content: 'ok' },
                        { type: 'tool_result', tool_use_id: 'tu2', content: [{ type: 'text', text: 'exit 1' }], is_error: true },
                    ],
                },
                { id: 'm4', kind: 'assistant', role: 'assistant', turnId: 't1', createdAt: null, content: [{ type: 'text', text: 'Done.' }] },
            ],
        };
        const t = new ChatTranscript();
        t.load(view);
        assert.deepEqual(
            t.all.map(i => `${i.kind}:${i.kind === 'tool' ? `${i.summary}=${i.status}` : 'text' in i ? i.text : ''}`),
            ['user:make hello', 'assistant:Sure.', 'tool:edit_file src/app.py=ok', 'tool:run_command: ls=error', 'assistant:Done.'],
        );
        const failed = t.all[3];
        assert.ok(failed?.kind === 'tool');
        assert.equal(failed.output, 'exit 1');
    });

    test('an automatic compaction is told in the chat, once per checkpoint', () => {
        const t = new ChatTranscript();
        t.apply({ kind: 'turnStarted', text: 'go on', ...s });
        const e: AgentEvent = { kind: 'contextCompacted', checkpointId: 'cp9', summarizedMessages: 12, keptMessages: 6, tokensBefore: 170000, contextWindow: 200000, ...s };
        const [notice] = t.apply(e);
        assert.ok(notice?.kind === 'notice');
        assert.match(notice.text, /^Context compacted: .*~170,000 of 200,000 tokens.*12 messages were summarized.*newest 6 messages.*restoring a checkpoint from before/);
        t.apply(e);
        assert.equal(t.all.filter(i => i.kind === 'notice').length, 1);
        assert.equal(t.isRunning, true, 'the turn goes on');
    });

    test('a failed turn keeps its prompt visible with a retry; retries are notices, not errors', () => {
        const t = new ChatTranscript();
        t.apply({ kind: 'turnStarted', text: 'run the slow thing', ...s });
        const retry = t.apply({ kind: 'error', message: '529 Overloaded; retrying in 1s (1/3)', detail: null, retrying: true, ...s });
        assert.equal(retry[0]?.kind, 'notice');
        const fatal = t.apply({ kind: 'error', message: 'the model call failed', detail: null, retrying: false, ...s });
        assert.equal(fatal[0]?.kind, 'error');
        const changed = t.apply({ kind: 'turnFinished', stopReason: 'error', ...s });
        const prompt = changed.find(i => i.kind === 'user');
        assert.ok(prompt?.kind === 'user');
        assert.equal(prompt.failed, 'error');
        assert.equal(t.isRunning, false);
        // A finished turn is not marked.
        const ok = new ChatTranscript();
        ok.apply({ kind: 'turnStarted', text: 'fine', ...s });
        ok.apply({ kind: 'turnFinished', stopReason: 'end_turn', ...s });
        assert.ok(ok.all.every(i => i.kind !== 'user' || i.failed === undefined));
    });

    test('loading after a reconnect: withdrawn prompts sit where they were, running comes from the server', () => {
        const t = new ChatTranscript();
        t.apply({ kind: 'turnStarted', text: 'stuck', ...s });
        assert.equal(t.isRunning, true);
        const view: ConversationView = {
            sessionId: 's1',
            head: 'm2',
            running: false,
            messagesOmitted: 0,
            usage: { inputTokens: 0, outputTokens: 0, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, costUsd: 0, costUnknown: false },
            costUsd: 0,
            toolCheckpoints: {},
            turnUsage: {},
            toolStatuses: {},
            messages: [
                { id: 'm1', kind: 'prompt', role: 'user', turnId: 't1', createdAt: null, content: [{ type: 'text', text: 'first' }] },
                { id: 'm2', kind: 'assistant', role: 'assistant', turnId: 't1', createdAt: null, content: [{ type: 'text', text: 'answer' }] },
            ],
            withdrawn: [
                { messageId: 'w0', turnId: 't0', text: 'before everything', reason: 'error', after: null },
                { messageId: 'w1', turnId: 't2', text: 'stuck', reason: 'interrupted', after: 'm2' },
            ],
        };
        t.load(view);
        assert.equal(t.isRunning, false);
        assert.deepEqual(
            t.all.map(i => (i.kind === 'user' ? `${i.text}${i.failed ? ` [${i.failed}]` : ''}` : i.kind)),
            ['before everything [error]', 'first', 'assistant', 'stuck [interrupted]'],
        );
    });

    test('loading after a crash: a tool call keeps the status the server journaled (interrupted, denied), not one guessed from its result', () => {
        const t = new ChatTranscript();
        const call = (id: string, name: string): Record<string, unknown> => ({ type: 'tool_use', id, name, input: {} });
        const result = (id: string, isError: boolean): Record<string, unknown> => ({ type: 'tool_result', tool_use_id: id, is_error: isError, content: 'x' });
        t.load({
            sessionId: 's1',
            head: 'm3',
            running: false,
            messagesOmitted: 0,
            usage: { inputTokens: 0, outputTokens: 0, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, costUsd: 0, costUnknown: false },
            costUsd: 0,
            messages: [
                { id: 'm1', kind: 'prompt', role: 'user', turnId: 't1', createdAt: null, content: [{ type: 'text', text: 'go' }] },
                { id: 'm2', kind: 'assistant', role: 'assistant', turnId: 't1', createdAt: null, content: [call('a', 'run_command'), call('b', 'write_file'), call('c', 'read_file'), call('d', 'list_files')] },
                { id: 'm3', kind: 'toolResults', role: 'user', turnId: 't1', createdAt: null, content: [result('a', true), result('b', true), result('c', false)] },
            ],
            withdrawn: [],
            toolCheckpoints: {},
            turnUsage: {},
            toolStatuses: { a: 'interrupted', b: 'denied' },
        });
        assert.deepEqual(
            t.all.flatMap(i => (i.kind === 'tool' ? [`${i.id}:${i.status}`] : [])),
            ['a:interrupted', 'b:denied', 'c:ok', 'd:interrupted'],
        );
    });

    test('a long conversation is shown as its newest items; earlier ones are counted, and an update finds its item', () => {
        const t = new ChatTranscript();
        for (let n = 0; n < 1000; n++) {
            t.apply({ kind: 'toolCallStarted', toolCallId: `c${n}`, tool: 'read_file', input: { path: `f${n}` }, ...s });
        }
        const w = t.window(200);
        assert.equal(w.earlier, 800);
        assert.deepEqual([w.items[0]?.id, w.items.at(-1)?.id], ['c800', 'c999']);
        assert.deepEqual(t.window(5000), { items: t.all, earlier: 0 });
        assert.deepEqual(t.window(0).items, []);
        const [updated] = t.apply({ kind: 'toolCallFinished', toolCallId: 'c3', tool: 'read_file', status: 'ok', output: 'x', durationMs: 1, changedPaths: [], ...s });
        assert.ok(updated !== undefined);
        assert.equal(t.indexOf(updated), 3, 'an old item is updated in place, not appended');
        assert.equal(t.all.length, 1000);
        assert.equal(t.indexOf({ kind: 'tool', id: 'nope' }), -1);
    });

    test('an event kind this client does not know (a newer server) changes nothing', () => {
        const t = new ChatTranscript();
        t.apply({ kind: 'turnStarted', text: 'go', ...s });
        const unknown = { kind: 'somethingNew', ...s } as unknown as AgentEvent;
        assert.deepEqual(t.apply(unknown), []);
        assert.equal(t.all.length, 1);
        assert.equal(t.isRunning, true);
    });

    test('tool summaries', () => {
        assert.equal(toolSummary('search_text', { pattern: 'TODO' }), 'search_text TODO');
        assert.equal(toolSummary('list_files', {}), 'list_files');
    });
});
