import * as assert from 'node:assert/strict';
import type { AgentEvent, ConversationView } from '../../../extension/src/client/protocol';
import { isRestoreMode, pointLabel } from '../../../extension/src/commands/restorePrompt';
import { isPromptRef } from '../../../extension/src/webview/restoreMessages';
import { ChatTranscript } from '../../../extension/src/views/models/chatModel';
import { isWebviewMessage } from '../../../extension/src/webview/messages';
import { isRestoreWebviewMessage } from '../../../extension/src/webview/restoreMessages';

suite('restore from the chat', () => {
    test('a live prompt and a loaded prompt carry their restore point; attachments and failed prompts do not', () => {
        const t = new ChatTranscript();
        const [live] = t.apply({ kind: 'turnStarted', sessionId: 's', turnId: 't1', text: 'make one' } as AgentEvent);
        assert.equal(live?.kind === 'user' ? live.prompt : undefined, 't1');
        const view = {
            sessionId: 's',
            head: 'a1',
            messages: [
                { id: 'p1', role: 'user', kind: 'prompt', turnId: 't1', content: [{ type: 'text', text: '[Retrace note: restored]' }, { type: 'text', text: 'make one' }] },
                { id: 'a1', role: 'assistant', kind: 'assistant', turnId: 't1', content: [{ type: 'text', text: 'done' }] },
            ],
            usage: { inputTokens: 0, outputTokens: 0, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, costUsd: 0 },
            costUsd: 0,
            running: false,
            withdrawn: [{ messageId: 'p0', turnId: 't0', text: 'failed one', reason: 'error', after: null }],
            toolStatuses: {},
            messagesOmitted: 0,
            turnUsage: {},
            toolCheckpoints: {},
        } as unknown as ConversationView;
        t.load(view);
        const users = t.all.filter(i => i.kind === 'user');
        assert.deepEqual(
            users.map(u => (u.kind === 'user' ? [u.text, u.prompt, u.failed] : [])),
            [
                ['failed one', undefined, 'error'],
                ['make one', 'p1', undefined], // the note before it is Retrace's notice, not the user's
            ],
        );
    });

    test('only well-formed restore messages pass, whatever the webview sends', () => {
        const good = [
            { type: 'restorePrompt', prompt: 'p1', text: 'make one', point: 'before', mode: 'both' },
            { type: 'restorePrompt', prompt: 't1', text: '', point: 'end', mode: 'code' },
            { type: 'editResend', prompt: 'p1', text: 'again' },
            { type: 'restoreCheckpoint', checkpoint: 'c1', mode: 'conversation' },
        ];
        for (const m of good) {
            assert.ok(isRestoreWebviewMessage(m), JSON.stringify(m));
            assert.ok(isWebviewMessage(m), JSON.stringify(m));
        }
        const bad: unknown[] = [
            null,
            'restorePrompt',
            { type: 'restorePrompt', prompt: 'p1', text: 'x', point: 'after', mode: 'both' },
            { type: 'restorePrompt', prompt: 'p1', text: 'x', point: 'before', mode: 'all' },
            { type: 'restorePrompt', prompt: '', text: 'x', point: 'before', mode: 'both' },
            { type: 'restorePrompt', prompt: 7, text: 'x', point: 'before', mode: 'both' },
            { type: 'restorePrompt', prompt: 'p'.repeat(600), text: 'x', point: 'before', mode: 'both' },
            { type: 'editResend', prompt: 'p1', text: '   ' },
            { type: 'editResend', prompt: 'p1' },
            { type: 'restoreCheckpoint', checkpoint: 'c1' },
            { type: 'restoreCheckpoint', checkpoint: { id: 'c1' }, mode: 'code' },
        ];
        for (const m of bad) {
            assert.equal(isRestoreWebviewMessage(m), false, JSON.stringify(m));
            assert.equal(isWebviewMessage(m), false, JSON.stringify(m));
        }
    });

    test('the command checks its arguments and names the point for dialogs', () => {
        const ref = { sessionId: 's', prompt: 'p1', point: 'before', text: 'fix   the\nparser' };
        assert.ok(isPromptRef(ref));
        assert.equal(isPromptRef({ ...ref, point: 'middle' }), false);
        assert.equal(isPromptRef({ ...ref, sessionId: undefined }), false);
        assert.equal(isPromptRef('p1'), false);
        assert.ok(isRestoreMode('both') && !isRestoreMode('all') && !isRestoreMode(undefined));
        assert.equal(pointLabel({ sessionId: 's', prompt: 'p1', point: 'before', text: 'fix   the\nparser' }), 'before the prompt “fix the parser”');
        assert.equal(pointLabel({ sessionId: 's', prompt: 'p1', point: 'end', text: 'x'.repeat(100) }), `the end of the turn “${'x'.repeat(47)}…”`);
    });
});
