import * as assert from 'node:assert/strict';
import type { Checkpoint, SessionStory, StoryRow, StoryTurn, TimelineTreeResult } from '../../../extension/src/client/protocol';
import { checkpointPicks } from '../../../extension/src/commands/restorePick';
import { isRetraceNote, retraceNoteText } from '../../../extension/src/views/models/chatModel';
import { abandonedBy, abandonedLabel, foldRows, groupLabel, isReadOnly, shownNodeId, type FoldRow } from '../../../extension/src/views/models/timelineFold';
import { STARTING_POINT } from '../../../extension/src/labels';
import { lookOf, rowLabel } from '../../../extension/src/views/models/timelineLook';
import { buildTimeline, indexNodes, type CheckpointNode, type GroupNode, type TimelineNode } from '../../../extension/src/views/models/timelineModel';
import { checkpoint, file } from './fixtures';

const NOW = Date.parse('2026-01-01T01:00:00Z');

const fr = (cp: Checkpoint, isHead = false): FoldRow => ({ id: `cp:${cp.id}`, checkpoint: cp, isHead, nested: false });
const edit = (id: string, path = 'src/a.py', tool = 'edit_file', parent: string | null = null): Checkpoint =>
    checkpoint({ id, tool, parent, label: `${tool}: ${path}`, files: [file(path, 1, 1)] });
const read = (id: string, tool = 'read_file'): Checkpoint => checkpoint({ id, tool, label: `${tool}: src/x.py`, files: [] });

/** foldRows over checkpoints → a compact shape: "row:id", "group:kind:ids", "restore:id+safety". */
function shape(cps: Checkpoint[]): string[] {
    return foldRows(cps.map(c => fr(c))).map(f =>
        f.kind === 'row' ? `row:${f.row.checkpoint.id}` : f.kind === 'group' ? `${f.group}:${f.rows.map(r => r.checkpoint.id).join(',')}` : `restore:${f.row.checkpoint.id}+${f.safety?.checkpoint.id ?? '-'}`,
    );
}

function row(cp: Checkpoint, title: string, summary = '', over: Partial<StoryRow> = {}): StoryRow {
    return { kind: 'row', checkpoint: cp, title, summary, toolStatus: cp.kind === 'tool' ? 'ok' : null, isHead: false, branch: cp.kind === 'restore', terminal: null, ...over };
}

function story(items: (StoryTurn | StoryRow)[]): SessionStory {
    const rowCount = items.reduce((n, i) => n + (i.kind === 'turn' ? i.rows.length : 1), 0);
    return {
        session: { id: 's1', title: 'p', createdAt: null, running: false, checkpointCount: rowCount },
        workspace: false,
        turnCount: items.filter(i => i.kind === 'turn').length,
        rowCount,
        rowsOmitted: 0,
        items,
        nextBefore: null,
        outline: false,
    };
}

suite('timeline folding (issue 28)', () => {
    test('table: which runs fold and which stay rows', () => {
        const cases: [string, Checkpoint[], string[]][] = [
            ['two edits of one file stay rows', [edit('a'), edit('b')], ['row:a', 'row:b']],
            ['three edits of one file fold', [edit('a'), edit('b'), edit('c')], ['repeat:a,b,c']],
            ['another file breaks the run', [edit('a'), edit('b'), edit('x', 'src/b.py'), edit('c'), edit('d'), edit('e')], ['row:a', 'row:b', 'row:x', 'repeat:c,d,e']],
            ['another tool on the same file breaks the run', [edit('a'), edit('b'), edit('w', 'src/a.py', 'write_file'), edit('c')], ['row:a', 'row:b', 'row:w', 'row:c']],
            ['other agents\' tools fold the same', [edit('a', 'n.txt', 'Edit'), edit('b', 'n.txt', 'Edit'), edit('c', 'n.txt', 'Edit')], ['repeat:a,b,c']],
            ['a two-file change never folds', [1, 2, 3].map(n => checkpoint({ id: `m${n}`, tool: 'edit_file', files: [file('a'), file('b')] })), ['row:m1', 'row:m2', 'row:m3']],
            ['two reads fold', [read('r1'), read('r2', 'list_files')], ['reads:r1,r2']],
            ['one read stays a row', [read('r1'), edit('a')], ['row:r1', 'row:a']],
            ['a read that changed a file is no read', [checkpoint({ id: 'r1', tool: 'read_file', files: [file('x')] }), read('r2')], ['row:r1', 'row:r2']],
            ['a run_command that changed nothing is no read', [checkpoint({ id: 'c1', tool: 'run_command' }), checkpoint({ id: 'c2', tool: 'run_command' })], ['row:c1', 'row:c2']],
            ['safety + restore → one restore', [checkpoint({ id: 's', kind: 'safety' }), checkpoint({ id: 'r', kind: 'restore', parent: 's' })], ['restore:r+s']],
            ['a restore without a safety capture', [checkpoint({ id: 'r', kind: 'restore', parent: 'x' })], ['restore:r+-']],
            ['a safety not followed by its restore stays', [checkpoint({ id: 's', kind: 'safety' }), checkpoint({ id: 'r', kind: 'restore', parent: 'other' })], ['row:s', 'restore:r+-']],
            ['empty', [], []],
        ];
        for (const [name, cps, want] of cases) {
            assert.deepEqual(shape(cps), want, name);
        }
    });

    test('task rows and subagent rows never fold', () => {
        const rows = [edit('a'), edit('b'), edit('c')].map((c, i) => ({ ...fr(c), nested: i === 1 }));
        assert.deepEqual(foldRows(rows).map(f => f.kind), ['row', 'row', 'row']);
    });

    test('read-only tools: every agent\'s names, only when nothing changed', () => {
        for (const tool of ['read_file', 'list_files', 'search_text', 'Read', 'Grep', 'Glob', 'read_many_files', 'glob', 'search_file_content']) {
            assert.ok(isReadOnly(checkpoint({ id: tool, tool })), tool);
        }
        for (const tool of ['edit_file', 'Bash', 'run_command', 'Write']) {
            assert.ok(!isReadOnly(checkpoint({ id: tool, tool })), tool);
        }
        assert.ok(!isReadOnly(checkpoint({ id: 'e', kind: 'external' })));
    });

    test('labels: verb and file name first', () => {
        assert.equal(groupLabel('repeat', [edit('a', 'src/deep/g.py'), edit('b', 'src/deep/g.py')].map(c => fr(c))), 'edit_file g.py ×2');
        assert.equal(groupLabel('reads', [read('a'), read('b'), read('c', 'list_files'), read('d', 'Grep')].map(c => fr(c))), 'read 2 files · 1 listing · 1 search');
        assert.deepEqual(abandonedLabel(['edit_file: a.py', 'edit_file: a.py', 'run_command: make', 'x']), { label: 'Abandoned: 4 steps', detail: 'edit_file: a.py ×2, run_command: make, …' });
        assert.deepEqual(abandonedLabel(['edit_file: a.py']), { label: 'Abandoned: 1 step', detail: 'edit_file: a.py' });
        const cases: [string, StoryRow['checkpoint']['kind'], string, string][] = [
            ['write_file: src/generated/g.py', 'tool', 'write_file: g.py', 'src/generated'],
            ['edit_file: scale.txt', 'tool', 'edit_file: scale.txt', ''],
            ['Write: notes/todo.md', 'tool', 'Write: todo.md', 'notes'],
            ['run_command: make test', 'tool', 'run_command: make test', ''],
            ['Restored code to ‘edit_file: src/a.py’', 'restore', 'Back to ‘a.py’', 'restored code'],
            ['Restored code to ‘search_file_content: src/components/form.tsx’', 'restore', 'Back to ‘form.tsx’', 'restored code'],
            ['Restored code to ‘Starting point’', 'restore', `Back to ‘${STARTING_POINT}’`, 'restored code'],
            ['Starting point', 'baseline', STARTING_POINT, ''],
            ['Before restore', 'safety', 'Before restore', ''],
        ];
        for (const [title, kind, label, folder] of cases) {
            assert.deepEqual(rowLabel(title, kind), { label, folder }, title);
        }
    });

    test('abandoned work: from the old head up to the restored checkpoint (or its ancestor), safety left out', () => {
        const cps = [
            checkpoint({ id: 'b', kind: 'baseline' }),
            checkpoint({ id: 'c1', parent: 'b' }),
            checkpoint({ id: 'c2', parent: 'c1' }),
            checkpoint({ id: 'c3', parent: 'c2' }),
            checkpoint({ id: 's', kind: 'safety', parent: 'c3' }),
        ];
        const byId = new Map(cps.map(c => [c.id, c]));
        assert.deepEqual(abandonedBy('s', 'c1', byId).map(c => c.id), ['c3', 'c2']);
        assert.deepEqual(abandonedBy('c3', 'c3', byId).map(c => c.id), []);
        assert.deepEqual(abandonedBy('c3', 'x-unknown', byId).map(c => c.id), ['c3', 'c2', 'c1', 'b']);
        assert.deepEqual(abandonedBy(null, 'c1', byId), []);
        const loop = new Map([['p', checkpoint({ id: 'p', parent: 'q' })], ['q', checkpoint({ id: 'q', parent: 'p' })]]);
        assert.deepEqual(abandonedBy('p', 'z', loop).map(c => c.id), ['p', 'q'], 'a cycle in damaged data ends');
    });

    test('a session with three restores reads as turns and one row per restore, abandoned work one collapsed node', () => {
        const b = checkpoint({ id: 'b', kind: 'baseline', files: [file('src/a.py')] });
        const t1 = [edit('e1', 'src/a.py', 'edit_file', 'b'), edit('e2', 'src/a.py', 'edit_file', 'e1'), edit('e3', 'src/a.py', 'edit_file', 'e2'), edit('e4', 'src/a.py', 'edit_file', 'e3')].map(c => ({ ...c, turnId: 't1' }));
        const s1 = checkpoint({ id: 's1x', kind: 'safety', parent: 'e4' });
        const r1 = checkpoint({ id: 'r1', kind: 'restore', parent: 's1x', restoredFrom: 'e1', files: [file('src/a.py')] });
        const t2 = [read('q1'), read('q2'), edit('w1', 'src/b.py', 'write_file', 'r1')].map(c => ({ ...c, turnId: 't2' }));
        const r2 = checkpoint({ id: 'r2', kind: 'restore', parent: 'w1', restoredFrom: 'r1' });
        const r3 = checkpoint({ id: 'r3', kind: 'restore', parent: 'r2', restoredFrom: 'b' });
        const tree: TimelineTreeResult = {
            head: 'r3',
            headSessionId: 's1',
            sessions: [
                story([
                    row(b, 'Starting point', '1 file'),
                    { kind: 'turn', turnId: 't1', number: 1, prompt: 'p1', createdAt: null, abandoned: false, forkedFrom: null, rows: t1.map(c => row(c, 'edit_file: src/a.py', '+1 −1')) },
                    row(s1, 'Before restore', 'src/a.py +1 −1'),
                    row(r1, 'Restored code to ‘edit_file: src/a.py’', 'back to x'),
                    { kind: 'turn', turnId: 't2', number: 2, prompt: 'p2', createdAt: null, abandoned: false, forkedFrom: null, rows: [row(t2[0] as Checkpoint, 'read_file: src/x.py'), row(t2[1] as Checkpoint, 'read_file: src/x.py'), row(t2[2] as Checkpoint, 'write_file: src/b.py')] },
                    row(r2, 'Restored code to ‘Restored code to ‘edit_file: src/a.py’’'),
                    row(r3, 'Restored code to ‘Starting point’', '', { isHead: true }),
                ]),
            ],
        };
        const [session] = buildTimeline(tree, { running: [] });
        assert.ok(session !== undefined);
        const top = session.children.map(n => `${n.kind}:${lookOf(n, NOW).label}`);
        assert.deepEqual(top, [
            `checkpoint:${STARTING_POINT}`,
            'turn:1. p1',
            'checkpoint:Back to ‘a.py’',
            'turn:2. p2',
            'checkpoint:Back to ‘Back to ‘a.py’’',
            `checkpoint:● Back to ‘${STARTING_POINT}’`,
        ]);
        const turn1 = session.children[1] as TimelineNode & { children: TimelineNode[] };
        assert.deepEqual(turn1.children.map(n => `${n.kind}:${lookOf(n, NOW).label}`), ['group:edit_file a.py ×4']);
        const restore1 = session.children[2] as CheckpointNode;
        assert.ok(lookOf(restore1, NOW).collapsible, 'the restore row opens');
        assert.deepEqual(restore1.children.map(n => n.kind === 'checkpoint' ? n.checkpoint.kind : n.label), ['safety', 'Abandoned: 3 steps']);
        const abandoned = restore1.children[1] as GroupNode;
        assert.deepEqual(abandoned.children.map(c => c.checkpoint.id), ['e2', 'e3', 'e4']);
        assert.ok(abandoned.children.every(c => c.id.startsWith('abandoned:r1:')), 'copies have ids of their own');
        const turn2 = session.children[3] as TimelineNode & { children: TimelineNode[] };
        assert.deepEqual(turn2.children.map(n => `${n.kind}:${lookOf(n, NOW).label}`), ['group:read 2 files', 'checkpoint:write_file: b.py']);
        // Every row stays reachable, once under its own id; the head is shown (not folded).
        const nodes = indexNodes([session]);
        for (const id of ['b', 'e1', 'e2', 'e3', 'e4', 's1x', 'r1', 'q1', 'q2', 'w1', 'r2', 'r3']) {
            assert.ok(nodes.has(`cp:${id}`), id);
        }
        assert.equal(shownNodeId('cp:e3', nodes), 'group:e1', 'a folded row is revealed as its group');
        assert.equal(shownNodeId('cp:r3', nodes), 'cp:r3');
        assert.equal(shownNodeId('cp:s1x', nodes), 'cp:s1x', 'a restore row is no group: its safety capture opens it');
        assert.match(lookOf(session.children[5] as CheckpointNode, NOW).description, /^you are here/);
    });

    test('a group holding the head says so in its label', () => {
        const cps = [edit('a'), edit('b'), edit('c')].map(c => ({ ...c, turnId: 't1' }));
        const tree: TimelineTreeResult = {
            head: 'c',
            headSessionId: 's1',
            sessions: [story([{ kind: 'turn', turnId: 't1', number: 1, prompt: 'p', createdAt: null, abandoned: false, forkedFrom: null, rows: cps.map(c => row(c, 'edit_file: src/a.py', '', { isHead: c.id === 'c' })) }])],
        };
        const [session] = buildTimeline(tree, { running: [] });
        const group = (session?.children[0] as TimelineNode & { children: TimelineNode[] }).children[0] as GroupNode;
        assert.equal(lookOf(group, NOW).label, '● edit_file a.py ×3');
        assert.match(lookOf(group, NOW).description, /^you are here · src/);
    });

    test('the restore quick pick names restores by their row title, never a raw id', () => {
        const r = checkpoint({ id: 'restore-0123456789', kind: 'restore', restoredFrom: 'target-0123456789', files: [file('a.py')] });
        const c = checkpoint({ id: 'tool-0123456789', tool: 'edit_file', label: 'edit_file: a.py', files: [file('a.py')] });
        const picks = checkpointPicks({ checkpoints: [c, r], head: r.id, sessions: [], bookmarks: [] }, NOW, id => (id === r.id ? 'Restored code to ‘edit_file: a.py’' : undefined));
        assert.deepEqual(picks.map(p => p.label), ['Restored code to ‘edit_file: a.py’', 'edit_file: a.py']);
        const bare = checkpointPicks({ checkpoints: [r], head: null, sessions: [], bookmarks: [] }, NOW);
        assert.equal(bare[0]?.label, 'Restored code');
        for (const p of [...picks, ...bare]) {
            assert.ok(![p.label, p.description, p.detail].some(t => /0123456789|[0-9a-z]{8}\b.*·/.test(t) && t.includes('restore-')), JSON.stringify(p));
            assert.ok(!`${p.label} ${p.description} ${p.detail}`.includes('0123'), JSON.stringify(p));
        }
        assert.match(picks[0]?.description ?? '', /you are here/);
    });

    test('a "[Retrace note…]" to the model is a system note in the chat', () => {
        assert.ok(isRetraceNote('[Retrace note: the conversation was restored to checkpoint x]'));
        assert.ok(isRetraceNote('  [Retrace note about files]'));
        assert.ok(!isRetraceNote('please add a [Retrace note] to the readme'));
        assert.equal(retraceNoteText('[Retrace note: files changed:\n- modified a.py]'), 'Retrace told the model: files changed:\n- modified a.py');
    });
});
