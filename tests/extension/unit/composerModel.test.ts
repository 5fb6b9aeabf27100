import * as assert from 'node:assert/strict';
import type { ConversationView } from '../../../extension/src/client/protocol';
import { ChatTranscript } from '../../../extension/src/views/models/chatModel';
import {
    attachedLine,
    contextChips,
    editorChipLabel,
    failedPromptRef,
    insertMention,
    isAttachmentText,
    listKey,
    mentionQuery,
    parseMentions,
    removeMention,
    type EditorSnapshot,
} from '../../../extension/src/webview/composerModel';

const editor = (over: Partial<EditorSnapshot> = {}): EditorSnapshot => ({ path: 'src/app.py', language: 'python', selections: [], openEditors: [], ...over });

suite('composer model (chat input context)', () => {
    test('the editor chip names the file and what of it is attached', () => {
        const table: [EditorSnapshot, string][] = [
            [editor({ selections: [{ start: 12, end: 20 }] }), 'app.py:12-20 (selection)'],
            [editor({ selections: [{ start: 3, end: 3 }] }), 'app.py:3 (selection)'],
            [editor({ selections: [{ start: 1, end: 2 }, { start: 5, end: 6 }] }), 'app.py (2 selections)'],
            [editor({ visible: { start: 1, end: 40 } }), 'app.py (visible 1-40)'],
            [editor(), 'app.py (active file)'],
        ];
        for (const [snap, label] of table) {
            assert.equal(editorChipLabel(snap), label);
        }
    });

    test('chips: the editor (when on), then each mention once', () => {
        const snap = editor({ selections: [{ start: 12, end: 20 }] });
        assert.deepEqual(
            contextChips(snap, true, 'look at @utils.py and @src/a.ts, again @utils.py.').map(c => c.label),
            ['app.py:12-20 (selection)', '@utils.py', '@src/a.ts'],
        );
        assert.deepEqual(contextChips(snap, false, 'no mentions').map(c => c.label), []);
        assert.deepEqual(contextChips(undefined, true, 'mail me@example.com or @someone').map(c => c.label), []);
    });

    test('mentions: path-like @tokens only, trailing punctuation dropped', () => {
        const table: [string, string[]][] = [
            ['@a.py', ['a.py']],
            ['see @src/x.ts, then @b.md.', ['src/x.ts', 'b.md']],
            ['@team please', []],
            ['email a@b.c', []],
            ['(@dir/file)', []],
            ['@dir/file)', ['dir/file']],
        ];
        for (const [text, expected] of table) {
            assert.deepEqual(parseMentions(text), expected, text);
        }
    });

    test('the @query under the caret, and inserting a chosen file', () => {
        assert.deepEqual(mentionQuery('fix @ut', 7), { start: 4, query: 'ut' });
        assert.deepEqual(mentionQuery('@', 1), { start: 0, query: '' });
        assert.equal(mentionQuery('fix ut', 6), undefined);
        assert.equal(mentionQuery('a@b', 3), undefined);
        assert.deepEqual(insertMention('fix @ut now', 4, 7, 'src/utils.py'), { text: 'fix @src/utils.py now', caret: 18 });
        assert.deepEqual(insertMention('@', 0, 1, 'a.py'), { text: '@a.py ', caret: 6 });
    });

    test('removing a mention chip takes its token out of the prompt', () => {
        assert.equal(removeMention('explain @a.py and @b.py', 'a.py'), 'explain and @b.py');
        assert.equal(removeMention('@a.py, please', 'a.py'), ', please');
        assert.equal(removeMention('@a.pyc stays', 'a.py'), '@a.pyc stays');
    });

    test('a retry names the failed prompt by turn (live) or message (after a reload)', () => {
        assert.equal(failedPromptRef('turn:turn_1'), 'turn_1');
        assert.equal(failedPromptRef('withdrawn:msg_9'), 'msg_9');
        assert.equal(failedPromptRef('m1:0'), undefined);
        assert.equal(failedPromptRef(undefined), undefined);
    });

    test('the attached line and the attachment block', () => {
        assert.equal(attachedLine(['app.py:12-20 (selection)', '@utils.py']), 'attached: app.py:12-20 (selection), @utils.py');
        assert.equal(attachedLine([]), '');
        assert.equal(attachedLine(undefined), '');
        assert.ok(isAttachmentText('<editor-context>\nActive file: a\n</editor-context>'));
        assert.ok(isAttachmentText('<file path="a.py">\nx\n</file>'));
        assert.ok(!isAttachmentText('please look at <file path="a.py">'));
    });

    test('the transcript shows a prompt with its attachments, live and after a reload', () => {
        const t = new ChatTranscript();
        t.apply({ kind: 'turnStarted', sessionId: 's', turnId: 't1', text: 'explain', attachments: ['app.py:1-2 (selection)'] });
        assert.deepEqual(t.all[0], { kind: 'user', id: 'turn:t1', text: 'explain', attachments: ['app.py:1-2 (selection)'], prompt: 't1' });

        const view: ConversationView = {
            sessionId: 's',
            head: 'm2',
            messages: [
                {
                    id: 'm1',
                    kind: 'prompt',
                    role: 'user',
                    turnId: 't1',
                    createdAt: null,
                    attachments: ['app.py:1-2 (selection)', '@README.md'],
                    content: [
                        { type: 'text', text: '<editor-context>\nActive file: app.py\n</editor-context>\n<file path="README.md">\n# x\n</file>' },
                        { type: 'text', text: 'explain' },
                    ],
                },
                { id: 'm2', kind: 'assistant', role: 'assistant', turnId: 't1', createdAt: null, content: [{ type: 'text', text: 'It does x.' }] },
            ],
            usage: { inputTokens: 0, outputTokens: 0, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, costUsd: 0 },
            costUsd: 0,
            running: false,
            withdrawn: [],
            toolStatuses: {},
            turnUsage: {},
            toolCheckpoints: {},
            messagesOmitted: 0,
        } as unknown as ConversationView;
        t.load(view);
        assert.deepEqual(
            t.all.map(i => (i.kind === 'user' ? [i.kind, i.text, i.attachments] : [i.kind])),
            [['user', 'explain', ['app.py:1-2 (selection)', '@README.md']], ['assistant']],
        );
    });
});

suite('composer model: keys in the @ completion list', () => {
    const cases: [string, number, number, ReturnType<typeof listKey>][] = [
        ['ArrowDown', 0, 3, { kind: 'move', active: 1 }],
        ['ArrowDown', 2, 3, { kind: 'move', active: 0 }],
        ['ArrowUp', 0, 3, { kind: 'move', active: 2 }],
        ['ArrowUp', 1, 3, { kind: 'move', active: 0 }],
        ['Enter', 1, 3, { kind: 'choose' }],
        ['Tab', 0, 1, { kind: 'choose' }],
        ['Escape', 0, 2, { kind: 'close' }],
        ['a', 0, 3, undefined],
        ['toString', 0, 3, undefined],
        ['ArrowDown', 0, 0, undefined],
        ['Enter', 0, 0, undefined],
    ];
    for (const [key, active, count, expected] of cases) {
        test(`${key} at ${active} of ${count}`, () => {
            assert.deepEqual(listKey(key, active, count), expected);
        });
    }
});
