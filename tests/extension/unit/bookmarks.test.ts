import * as assert from 'node:assert/strict';
import type { StoryRow, TimelineTreeResult } from '../../../extension/src/client/protocol';
import { checkpointPicks } from '../../../extension/src/commands/restorePick';
import { buildTimeline, filterDescription, flatTimeline, indexNodes, type TimelineNode } from '../../../extension/src/views/models/timelineModel';
import { lookOf } from '../../../extension/src/views/models/timelineLook';
import { checkpoint, file, sampleTimeline } from './fixtures';

const NOW = Date.parse('2026-01-01T01:00:00Z');

function row(id: string, title: string, over: Partial<StoryRow> = {}): StoryRow {
    const cp = checkpoint({ id, turnId: null, tool: 'edit_file', toolCallId: `tc-${id}`, label: title, files: [file('src/a.py', 1, 1)] });
    return { kind: 'row', checkpoint: cp, title, summary: '+1 −1', toolStatus: 'ok', isHead: false, branch: false, terminal: null, ...over };
}

function tree(rows: StoryRow[]): TimelineTreeResult {
    return {
        head: rows.at(-1)?.checkpoint.id ?? null,
        headSessionId: 'w',
        sessions: [
            {
                session: { id: 'w', title: '', createdAt: null, running: false, checkpointCount: rows.length },
                workspace: true,
                turnCount: 0,
                rowCount: rows.length,
                rowsOmitted: 0,
                items: rows,
                nextBefore: null,
                outline: false,
            },
        ],
    };
}

suite('bookmarks', () => {
    test('restore pick: the bookmarks first in the server\'s order, named, then the rest newest first', () => {
        const data = { ...sampleTimeline(), bookmarks: [{ checkpointId: 'c1', name: 'hello works' }, { checkpointId: 'base', name: 'clean start' }] };
        const picks = checkpointPicks(data, NOW, id => (id === 'c1' ? 'write_file: hello.txt' : undefined));
        assert.deepEqual(picks.map(p => p.checkpointId), ['c1', 'base', 'c4', 'c3', 'c2']);
        assert.equal(picks[0]?.label, '$(bookmark) hello works');
        assert.match(picks[0]?.description ?? '', /write_file: hello\.txt$/, 'what the row is stays readable');
        assert.equal(picks[1]?.label, '$(bookmark) clean start');
        assert.ok(!picks.slice(2).some(p => p.label.startsWith('$(bookmark)')));
    });

    test('restore pick: a bookmark that cannot be restored is left out like any row', () => {
        const data = sampleTimeline();
        const broken = checkpoint({ id: 'bad', parent: 'c4', recoverability: 'none' });
        const picks = checkpointPicks({ ...data, checkpoints: [...data.checkpoints, broken], bookmarks: [{ checkpointId: 'bad', name: 'x' }] }, NOW);
        assert.deepEqual(picks.map(p => p.checkpointId), ['c4', 'c3', 'c2', 'c1', 'base']);
    });

    test('a named row shows the bookmark icon and its name leftmost; what it is moves to the description', () => {
        const index = indexNodes(buildTimeline(tree([row('a', 'edit_file: src/a.py', { bookmark: 'tests pass' }), row('b', 'edit_file: src/a.py')]), { running: [] }));
        const named = lookOf(index.get('cp:a') as TimelineNode, NOW);
        assert.equal(named.label, 'tests pass');
        assert.equal(named.icon, 'bookmark');
        assert.match(named.description, /^edit_file: a\.py · src/);
        const plain = lookOf(index.get('cp:b') as TimelineNode, NOW);
        assert.equal(plain.label, 'edit_file: a.py');
        assert.notEqual(plain.icon, 'bookmark');
    });

    test('a bookmark is never folded into a run of repeated edits', () => {
        const rows = ['a', 'b', 'c', 'd', 'e'].map(id => row(id, 'edit_file: src/a.py', id === 'c' ? { bookmark: 'keep me' } : {}));
        const index = indexNodes(buildTimeline(tree(rows), { running: [] }));
        const story = index.get('session:w') as TimelineNode & { children: TimelineNode[] };
        const shown = story.children.map(c => (c.kind === 'checkpoint' ? c.checkpoint.id : c.kind));
        assert.ok(shown.includes('c'), `the bookmark is a row of its own: ${shown.join(',')}`);
    });

    test('the flat view and the filter name the bookmarks', () => {
        const flat = flatTimeline(tree([row('a', 'edit_file: src/a.py', { bookmark: 'older' }), row('b', 'x'), row('c', 'y', { bookmark: 'newer' })]));
        assert.deepEqual(flat.bookmarks, [{ checkpointId: 'c', name: 'newer' }, { checkpointId: 'a', name: 'older' }]);
        assert.equal(filterDescription({ bookmarks: true }), 'Filter: bookmarks');
    });
});
