import * as assert from 'node:assert/strict';
import type { ConversationView } from '../../../extension/src/client/protocol';
import { ChatTranscript, retraceNoteText } from '../../../extension/src/views/models/chatModel';

suite('restore notes in the chat', () => {
    test('a note told to the model before a prompt is a notice, not the user\'s words', () => {
        const note = '[Retrace note: the workspace files were restored to checkpoint abc; the conversation was not. ...\n- modified a.txt]';
        const view: ConversationView = {
            sessionId: 's1',
            head: 'm1',
            running: false,
            messagesOmitted: 0,
            usage: { inputTokens: 0, outputTokens: 0, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, costUsd: 0, costUnknown: false },
            costUsd: 0,
            withdrawn: [],
            toolCheckpoints: {},
            turnUsage: {},
            toolStatuses: {},
            messages: [
                {
                    id: 'm1',
                    kind: 'prompt',
                    role: 'user',
                    turnId: 't1',
                    createdAt: null,
                    content: [
                        { type: 'text', text: note },
                        { type: 'text', text: '[Retrace note: typed by the user]' },
                    ],
                },
            ],
        };
        const t = new ChatTranscript();
        t.load(view);
        assert.deepEqual(
            t.all.map(i => `${i.kind}:${'text' in i ? i.text : ''}`),
            [`notice:${retraceNoteText(note)}`, 'user:[Retrace note: typed by the user]'],
        );
    });
});
