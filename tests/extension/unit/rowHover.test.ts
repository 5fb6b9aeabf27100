import * as assert from 'node:assert/strict';
import type { StoryRow } from '../../../extension/src/client/protocol';
import { escapeMd, rowHoverText } from '../../../extension/src/views/models/rowHover';
import type { CheckpointNode } from '../../../extension/src/views/models/timelineModel';
import { checkpoint, file } from './fixtures';

const WHEN = '1/1/2026, 1:00:00 AM';

function node(over: Partial<CheckpointNode> = {}, row: Partial<StoryRow> = {}): CheckpointNode {
    const cp = checkpoint({ id: 'c0123456789abcdef', parent: 'p', tool: 'edit_file', toolCallId: 'tc', label: 'x', files: [file('src/a.py')] });
    return {
        kind: 'checkpoint',
        id: 'cp:c0',
        parentId: 'turn:t',
        checkpoint: cp,
        row: { kind: 'row', checkpoint: cp, title: 'edit_file: src/a.py', summary: '', toolStatus: 'ok', isHead: false, branch: false, terminal: null, ...row },
        isHead: false,
        toolStatus: undefined,
        prompt: undefined,
        scope: undefined,
        task: undefined,
        children: [],
        ...over,
    };
}

function hover(n: CheckpointNode): string {
    return rowHoverText({ node: n, icon: 'edit', when: WHEN });
}

const HEAD = '$(edit) **edit\\_file: src/a\\.py**\n\ntool · edit\\_file · 1/1/2026, 1:00:00 AM · `c0123456789a`\n\n';

suite('timeline row hover (words before the diff)', () => {
    const cases: [string, CheckpointNode, string][] = [
        ['a plain row: title, kind, tool, time and short id only', node(), HEAD],
        ['the head says so', node({ isHead: true }), HEAD.replace('**\n\n', '** — you are here\n\n')],
        ['a failed call names its status', node({ toolStatus: 'denied' }), `${HEAD}Tool call: **denied**\n\n`],
        ["a turn's prompt, first line, escaped", node({ prompt: 'fix *all*\nthe rest' }), `${HEAD}Prompt: _fix \\*all\\*_\n\n`],
        ["a subagent's row: its copy and its brief", node({ prompt: 'look', scope: { sessionId: 's', taskId: 't-1' } }), `${HEAD}In the subagent's own copy (\`t\\-1\`)\n\nBrief: _look_\n\n`],
        ['the gist and the terminal, as the server words them', node({}, { summary: '+1 −1', terminal: 'cwd: /w' }), `${HEAD}\\+1 −1\n\ncwd: /w\n\n`],
        ['an empty terminal says nothing', node({}, { terminal: '' }), HEAD],
        ['no conversation restore: the reason', node({}, { conversationRestore: { available: false, reason: 'another agent' } }), `${HEAD}Conversation restore not offered: another agent\n\n`],
        ['a conversation restore offered: nothing', node({}, { conversationRestore: { available: true, reason: null } }), HEAD],
    ];
    for (const [name, n, expected] of cases) {
        test(name, () => {
            assert.equal(hover(n), expected);
        });
    }

    test('a row not fully recoverable ends with the warning, bold', () => {
        const cp = checkpoint({ id: 'c0123456789abcdef', tool: 'edit_file', recoverability: 'none', files: [file('a')] });
        const text = hover(node({ checkpoint: cp }));
        assert.match(text, /\*\*✖ not recoverable\*\*\n\n$/);
    });

    test('Markdown in the server words is shown as text', () => {
        assert.equal(escapeMd('a_b *c* [d](e) `f` <g> #h'), 'a\\_b \\*c\\* \\[d\\]\\(e\\) \\`f\\` \\<g\\> \\#h');
    });
});
