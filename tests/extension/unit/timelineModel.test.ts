import * as assert from 'node:assert/strict';
import type { Checkpoint, SessionStory, StoryRow, StoryTurn, TimelineFilter, TimelineTreeResult } from '../../../extension/src/client/protocol';
import {
    applyChange,
    buildTimeline,
    filterDescription,
    flatTimeline,
    indexNodes,
    cursorMoved,
    mergePage,
    relativeTime,
    startsExpanded,
    type CheckpointNode,
    type TimelineNode,
} from '../../../extension/src/views/models/timelineModel';
import { checkpointLabel } from '../../../extension/src/labels';
import { lookOf } from '../../../extension/src/views/models/timelineLook';
import { checkpoint, file } from './fixtures';

const noExtras = { running: [] };
const NOW = Date.parse('2026-01-01T01:00:00Z');

function row(cp: Checkpoint, title: string, summary: string, over: Partial<StoryRow> = {}): StoryRow {
    return { kind: 'row', checkpoint: cp, title, summary, toolStatus: cp.kind === 'tool' ? 'ok' : null, isHead: false, branch: cp.kind === 'restore', terminal: null, ...over };
}

function turn(turnId: string, number: number, prompt: string, rows: StoryRow[], over: Partial<StoryTurn> = {}): StoryTurn {
    return { kind: 'turn', turnId, number, prompt, createdAt: rows[0]?.checkpoint.createdAt ?? null, abandoned: false, forkedFrom: null, rows, ...over };
}

function story(id: string, items: (StoryTurn | StoryRow)[], over: Partial<SessionStory> = {}): SessionStory {
    const rowCount = items.reduce((n, i) => n + (i.kind === 'turn' ? i.rows.length : 1), 0);
    const first = items[0];
    const createdAt = first === undefined ? null : first.kind === 'turn' ? first.createdAt : first.checkpoint.createdAt;
    return {
        session: { id, title: 'first prompt', createdAt, running: false, checkpointCount: rowCount },
        workspace: false,
        turnCount: items.filter(i => i.kind === 'turn').length,
        rowCount,
        rowsOmitted: 0,
        items,
        nextBefore: null,
        outline: false,
        ...over,
    };
}

/** Workspace story (baseline) → agent story: turn 1 (write, edit failed), turn 2 (abandoned), restore in place, turn 3 forked. */
function sampleTree(): TimelineTreeResult {
    const base = checkpoint({ id: 'base', sessionId: 'eng1', kind: 'baseline', files: [file('README.md', 9, 0, 'added')] });
    const c1 = checkpoint({ id: 'c1', parent: 'base', turnId: 't1', tool: 'write_file', toolCallId: 'tc1', label: 'write_file: hello.txt', files: [file('hello.txt', 1, 0, 'added')] });
    const c2 = checkpoint({ id: 'c2', parent: 'c1', turnId: 't1', tool: 'edit_file', toolCallId: 'tc2', label: 'edit_file: scale.txt', files: [file('scale.txt', 1, 1)] });
    const c3 = checkpoint({ id: 'c3', parent: 'c2', turnId: 't2', tool: 'run_command', toolCallId: 'tc3', label: 'run_command: make', files: [] });
    const r1 = checkpoint({ id: 'r1', parent: 'c3', kind: 'restore', restoredFrom: 'c1', files: [file('scale.txt', 1, 1)] });
    const c4 = checkpoint({ id: 'c4', parent: 'r1', turnId: 't3', tool: 'edit_file', toolCallId: 'tc4', label: 'edit_file: scale.txt', files: [file('scale.txt', 1, 1)] });
    return {
        head: 'c4',
        headSessionId: 's1',
        sessions: [
            story('eng1', [row(base, 'Baseline', '1 file')], { workspace: true }),
            story('s1', [
                turn('t1', 1, 'Create hello.txt please\nand more', [
                    row(c1, 'write_file: hello.txt', 'new file, 1 line: ‘hello’'),
                    row(c2, 'edit_file: scale.txt', '‘x = 1’ → ‘x = 2’ · +1 −1', { toolStatus: 'error' }),
                ]),
                turn('t2', 2, 'second task', [row(c3, 'run_command: make', 'no file changes')], { abandoned: true }),
                row(r1, 'Restored code to ‘write_file: hello.txt’', 'scale.txt +1 −1'),
                turn('t3', 3, 'third task', [row(c4, 'edit_file: scale.txt', '‘x = 2’ → ‘x = 3’ · +1 −1', { isHead: true })], { forkedFrom: 'c1' }),
            ]),
        ],
    };
}

function checkpoints(nodes: readonly TimelineNode[]): CheckpointNode[] {
    return nodes.filter((n): n is CheckpointNode => n.kind === 'checkpoint');
}

suite('timeline model', () => {
    test('the server story becomes session → turns (prompts) → rows, restores in place, order untouched', () => {
        const roots = buildTimeline(sampleTree(), noExtras);
        assert.deepEqual(roots.map(r => r.title), ['Workspace history', `Session of ${lookOf(roots[1] as TimelineNode, NOW).label.slice('Session of '.length)}`]);
        const session = roots[1];
        assert.ok(session);
        assert.doesNotMatch(session.title, /Create hello/, 'the session is not named after its first turn');
        assert.deepEqual(session.children.map(c => c.kind), ['turn', 'turn', 'checkpoint', 'turn']);
        const [t1, t2, restore, t3] = session.children;
        assert.ok(t1?.kind === 'turn' && t2?.kind === 'turn' && t3?.kind === 'turn' && restore?.kind === 'checkpoint');
        assert.equal(t1.title, '1. Create hello.txt please');
        assert.deepEqual(checkpoints(t1.children).map(c => c.checkpoint.id), ['c1', 'c2']);
        assert.equal(checkpoints(t1.children)[0]?.prompt, 'Create hello.txt please\nand more');
        assert.equal(restore.checkpoint.id, 'r1');
        assert.equal(t3.forkedFromTitle, 'write_file: hello.txt');
    });

    test('looks: row titles and gists from the server, relative time, head, failed status, branches', () => {
        const index = indexNodes(buildTimeline(sampleTree(), noExtras));
        const look = (id: string) => lookOf(index.get(id) as TimelineNode, NOW);
        assert.equal(look('cp:c1').icon, 'edit');
        assert.equal(look('cp:c1').label, 'write_file: hello.txt'); // verb and file name first (300 px)
        assert.equal(look('cp:c2').description, 'error · ‘x = 1’ → ‘x = 2’ · +1 −1 · 1 h ago');
        assert.equal(look('cp:c2').icon, 'error');
        assert.equal(look('cp:c2').iconColor, 'list.errorForeground');
        assert.match(look('cp:c4').description, /^you are here · ‘x = 2’ → ‘x = 3’/);
        assert.equal(look('cp:c4').label, '● edit_file: scale.txt');
        assert.equal(look('cp:r1').label, 'Back to ‘hello.txt’');
        assert.equal(look('cp:r1').collapsible, true, 'the work it left behind opens under it');
        assert.equal(look('cp:r1').icon, 'git-branch');
        assert.equal(look('turn:t2').description, 'abandoned branch · 1 step · 1 h ago');
        assert.equal(look('turn:t2').icon, 'git-branch');
        assert.equal(look('turn:t3').description, '⑂ from ‘write_file: hello.txt’ · 1 step · 1 h ago');
        assert.equal(look('session:s1').description, '3 turns · 5 steps · 1 h ago');
        assert.equal(look('session:eng1').description, '1 step · 1 h ago');
        assert.equal(look('cp:c2').contextValue, 'checkpoint');
        assert.equal(look('cp:c2').collapsible, false);
    });

    test('a long story opens as a list of prompts: only the current session\'s latest turn is expanded', () => {
        const index = indexNodes(buildTimeline(sampleTree(), noExtras));
        const expanded = (current: string | undefined) => [...index.values()].filter(n => n.kind !== 'session' && startsExpanded(n, current)).map(n => n.id);
        assert.deepEqual(expanded('s1'), ['turn:t3']);
        assert.deepEqual(expanded('other'), []);
        assert.ok(startsExpanded(index.get('session:s1') as TimelineNode, undefined));
    });

    test('ids are stable across rebuilds and every parent is indexed', () => {
        const a = indexNodes(buildTimeline(sampleTree(), noExtras));
        const b = indexNodes(buildTimeline(sampleTree(), noExtras));
        assert.deepEqual([...a.keys()], [...b.keys()]);
        for (const node of a.values()) {
            if (node.kind !== 'session') {
                assert.ok(a.has(node.parentId), `parent of ${node.id}`);
            }
        }
        assert.equal(new Set(a.keys()).size, a.size);
    });

    test('a paged story starts with "Load older… (N earlier steps)"', () => {
        const tree = sampleTree();
        const agent = tree.sessions[1];
        assert.ok(agent);
        tree.sessions[1] = { ...agent, rowsOmitted: 1234, nextBefore: 'c1' };
        const [, session] = buildTimeline(tree, noExtras);
        const more = session?.children[0];
        assert.ok(more?.kind === 'more');
        assert.equal(more.sessionId, 's1');
        assert.equal(lookOf(more).label, 'Load older… (1,234 earlier steps)');
        assert.equal(more.before, 'c1');
    });

    test('a running tool shows a spinner under its turn until its checkpoint lands', () => {
        const roots = buildTimeline(sampleTree(), { running: [{ sessionId: 's1', turnId: 't3', toolCallId: 'tc5', tool: 'run_command' }] });
        const running = indexNodes(roots).get('running:tc5');
        assert.ok(running && running.kind === 'runningTool');
        assert.equal(running.parentId, 'turn:t3');
        assert.equal(lookOf(running).icon, 'sync~spin');
    });

    test('a didChange row is inserted in its turn, moves the head, and is idempotent', () => {
        const tree = sampleTree();
        const c5 = checkpoint({ id: 'c5', parent: 'c4', turnId: 't3', tool: 'edit_file', toolCallId: 'tc5', label: 'edit_file: scale.txt' });
        const change = { head: 'c5', checkpoint: c5, row: row(c5, 'edit_file: scale.txt', '‘x = 3’ → ‘x = 4’', { isHead: true }), turnId: 't3', storyId: null, turn: null };
        const next = applyChange(tree, change);
        assert.ok(next);
        const index = indexNodes(buildTimeline(next, noExtras));
        const t3 = index.get('turn:t3');
        assert.ok(t3?.kind === 'turn');
        assert.deepEqual(checkpoints(t3.children).map(c => c.checkpoint.id), ['c4', 'c5']);
        assert.equal(next.head, 'c5');
        assert.deepEqual([...index.values()].filter(n => n.kind === 'checkpoint' && n.isHead).map(n => n.id), ['cp:c5']);
        assert.equal(next.sessions[1]?.rowCount, 6);
        const again = applyChange(next, change);
        assert.ok(again);
        assert.equal(again.sessions[1]?.rowCount, 6);
        assert.equal(tree.sessions[1]?.rowCount, 5, 'the old tree is not mutated');
    });

    test('a didChange that cannot be placed asks for a refetch', () => {
        const tree = sampleTree();
        const cp = checkpoint({ id: 'n1', parent: 'c4', turnId: 'new-turn', tool: 'edit_file' });
        assert.equal(applyChange(tree, { head: 'n1', checkpoint: cp, row: row(cp, 'x', ''), turnId: 'new-turn', storyId: null, turn: null }), undefined);
        assert.equal(applyChange(tree, { head: 'n1', checkpoint: cp, row: null, turnId: null, storyId: null, turn: null }), undefined);
        const external = checkpoint({ id: 'x1', parent: 'c4', kind: 'external' });
        const placed = applyChange(tree, { head: 'x1', checkpoint: external, row: row(external, 'External changes', ''), turnId: null, storyId: null, turn: null });
        assert.equal(placed?.sessions[1]?.items.at(-1)?.kind, 'row', 'an external change goes in place after its parent');
    });

    test('a didChange with a new turn adds the turn; into an outline story it is only counted', () => {
        const tree = sampleTree();
        const cp = checkpoint({ id: 'n1', parent: 'c4', turnId: 't4', tool: 'edit_file' });
        const header = turn('t4', 4, 'fourth task', []);
        const next = applyChange(tree, { head: 'n1', checkpoint: cp, row: row(cp, 'edit_file: a', ''), turnId: 't4', storyId: 's1', turn: header });
        const t4 = next?.sessions[1]?.items.at(-1);
        assert.ok(t4?.kind === 'turn');
        assert.deepEqual([t4.turnId, t4.number, t4.rows.map(r => r.checkpoint.id)], ['t4', 4, ['n1']]);
        assert.equal(next?.sessions[1]?.turnCount, 4);
        const outlined: TimelineTreeResult = { ...tree, sessions: tree.sessions.map(s => (s.session.id === 's1' ? { ...s, items: [], outline: true, rowsOmitted: 5 } : s)) };
        const counted = applyChange(outlined, { head: 'n1', checkpoint: cp, row: row(cp, 'edit_file: a', ''), turnId: 't4', storyId: 's1', turn: header });
        assert.deepEqual([counted?.sessions[1]?.items.length, counted?.sessions[1]?.rowCount, counted?.sessions[1]?.rowsOmitted], [0, 6, 6]);
        assert.equal(counted?.head, 'n1');
    });

    test('pages: an outline loads its newest page, an older page joins the turn it was cut in', () => {
        const tree = sampleTree();
        const full = tree.sessions[1];
        assert.ok(full);
        const outline: TimelineTreeResult = { ...tree, sessions: [tree.sessions[0] as SessionStory, { ...full, items: [], outline: true, rowsOmitted: 5 }] };
        const more = buildTimeline(outline, noExtras)[1]?.children[0];
        assert.ok(more?.kind === 'more');
        assert.deepEqual([more.before, lookOf(more).label], [null, 'Load 5 steps…']);
        assert.equal(startsExpanded(buildTimeline(outline, noExtras)[1] as TimelineNode, 's1'), false, 'an outline opens when asked');
        const [t1, t2, r1, t3] = full.items as [StoryTurn, StoryTurn, StoryRow, StoryTurn];
        const newest: SessionStory = { ...full, items: [{ ...t1, rows: t1.rows.slice(1) }, t2, r1, t3], rowsOmitted: 1, nextBefore: 'c2' };
        const loaded = mergePage(outline, newest, null);
        const older = buildTimeline(loaded, noExtras)[1]?.children[0];
        assert.ok(older?.kind === 'more');
        assert.deepEqual([older.before, lookOf(older).label], ['c2', 'Load older… (1 earlier step)']);
        const oldest: SessionStory = { ...full, items: [{ ...t1, rows: t1.rows.slice(0, 1) }], rowsOmitted: 0, nextBefore: null };
        const all = mergePage(loaded, oldest, 'c2');
        assert.deepEqual(all.sessions[1]?.items, full.items, 'the cut turn is one turn again, rows in order');
        // Late or repeated answers change nothing: the newest page again, a page for a cursor the
        // story has moved past, an older page for a story that is an outline again.
        assert.deepEqual(mergePage(loaded, newest, null), loaded, 'a second newest page is not prepended');
        assert.deepEqual(mergePage(all, oldest, 'c2'), all, 'a page for a used cursor is not merged twice');
        assert.deepEqual(mergePage(outline, oldest, 'c2'), outline, 'an older page does not replace an outline');
        // An older page answered for a tree replaced meanwhile: asked again from the cursor now.
        assert.equal(cursorMoved(loaded, 's1', 'c2'), undefined, 'the page fits: merged as is');
        const moved: TimelineTreeResult = { ...loaded, sessions: loaded.sessions.map(s => (s.session.id === 's1' ? { ...s, nextBefore: 'c3' } : s)) };
        assert.equal(cursorMoved(moved, 's1', 'c2'), 'c3');
        assert.equal(cursorMoved(outline, 's1', 'c2'), undefined, 'an outline again: nothing to ask');
        assert.equal(cursorMoved(all, 's1', 'c2'), undefined, 'nothing older left');
        assert.equal(cursorMoved(moved, 's1', null), undefined, 'a newest page is never re-asked');
        assert.equal(buildTimeline(all, noExtras)[1]?.children.some(c => c.kind === 'more'), false);
    });

    test('the active filter is described on the view', () => {
        const cases: [TimelineFilter | undefined, string][] = [
            [undefined, ''],
            [{}, ''],
            [{ tool: 'edit_file' }, 'Filter: tool edit_file'],
            [{ path: 'src/a.py', text: 'fix' }, 'Filter: path “src/a.py”, text “fix”'],
        ];
        for (const [filter, expected] of cases) {
            assert.equal(filterDescription(filter), expected);
        }
    });

    test('flat view for other features and checkpoint labels', () => {
        const flat = flatTimeline(sampleTree());
        assert.deepEqual(flat.checkpoints.map(c => c.id), ['base', 'c1', 'c2', 'c3', 'r1', 'c4']);
        assert.equal(flat.head, 'c4');
        assert.equal(checkpointLabel(checkpoint({ id: 'b', kind: 'baseline', label: 'baseline' })), 'Starting point');
        assert.equal(checkpointLabel(checkpoint({ id: 'g', kind: 'background', label: 'background: npm run dev' })), 'background: npm run dev');
        assert.equal(checkpointLabel(checkpoint({ id: 'h', kind: 'background', label: '' })), 'Background command');
        assert.equal(checkpointLabel(checkpoint({ id: 'e', kind: 'tool', tool: 'edit_file', label: 'edit_file: a.py\nmore' })), 'edit_file: a.py');
    });

    test('relative times', () => {
        const ago = (s: number) => new Date(NOW - s * 1000).toISOString();
        assert.equal(relativeTime(ago(10), NOW), 'just now');
        assert.equal(relativeTime(ago(300), NOW), '5 min ago');
        assert.equal(relativeTime(ago(3 * 3600), NOW), '3 h ago');
        assert.equal(relativeTime(ago(2 * 86400), NOW), '2 d ago');
        assert.match(relativeTime(ago(40 * 86400), NOW), /^[A-Z][a-z]{2} \d+, \d\d:\d\d$/);
        assert.equal(relativeTime(null, NOW), '');
    });
});
