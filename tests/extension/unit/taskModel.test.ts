import * as assert from 'node:assert/strict';
import type { Checkpoint, StoryRow, TaskView, TimelineTreeResult } from '../../../extension/src/client/protocol';
import { CHECKPOINT_CONTEXT, CHILD_CONTEXT, childNodeId, SUBAGENT_CONTEXT, TASK_CONTEXT, taskKey, taskOf, taskStatusText, withView, type TaskInfo } from '../../../extension/src/views/models/taskModel';
import { lookOf } from '../../../extension/src/views/models/timelineLook';
import { buildTimeline, indexNodes, type CheckpointNode, type SubagentNode, type TimelineExtras, type TimelineNode } from '../../../extension/src/views/models/timelineModel';
import { checkpoint, file } from './fixtures';

const NOW = Date.parse('2026-01-01T01:00:00Z');
const REF = { sessionId: 's1', taskId: 'task_1' };

function row(cp: Checkpoint, title: string, over: Partial<StoryRow> = {}): StoryRow {
    return { kind: 'row', checkpoint: cp, title, summary: '', toolStatus: cp.kind === 'tool' ? 'ok' : null, isHead: false, branch: false, terminal: null, ...over };
}

function taskCheckpoint(meta: Record<string, unknown>): Checkpoint {
    return checkpoint({ id: 'ct', parent: 'c1', turnId: 't1', tool: 'task', toolCallId: 'tc2', label: 'task: two notes', meta: { task: meta }, files: [file('notes/one.txt', 1, 0, 'added')] });
}

const TASK_META = { id: 'task_1', description: 'two notes', store: 'tasks/task_1', sessionId: 'child1', status: 'merged', conflicts: [] };

/** The parent's story: one turn with a write and a `task` call. */
function parentTree(meta: Record<string, unknown> = TASK_META): TimelineTreeResult {
    const c1 = checkpoint({ id: 'c1', turnId: 't1', tool: 'write_file', toolCallId: 'tc1', label: 'write_file: a.txt', files: [file('a.txt')] });
    const rows = [row(c1, 'write_file: a.txt'), row(taskCheckpoint(meta), 'task: two notes', { isHead: true })];
    return {
        head: 'ct',
        headSessionId: 's1',
        sessions: [
            {
                session: { id: 's1', title: 'delegate', createdAt: c1.createdAt, running: false, checkpointCount: 2 },
                workspace: false,
                turnCount: 1,
                rowCount: 2,
                rowsOmitted: 0,
                items: [{ kind: 'turn', turnId: 't1', number: 1, prompt: 'delegate', createdAt: c1.createdAt, abandoned: false, forkedFrom: null, rows }],
                nextBefore: null,
                outline: false,
            },
        ],
    };
}

/** The child's own timeline: its baseline (the copy it started from), then two writes. Its
 * checkpoint ids may equal ids of the parent's (they are another store's). */
function childTree(): TimelineTreeResult {
    const base = checkpoint({ id: 'k0', sessionId: 'child1', kind: 'baseline' });
    const k1 = checkpoint({ id: 'k1', sessionId: 'child1', parent: 'k0', turnId: 'kt', tool: 'write_file', label: 'write_file: notes/one.txt', files: [file('notes/one.txt', 1, 0, 'added')] });
    const k2 = checkpoint({ id: 'c1', sessionId: 'child1', parent: 'k1', turnId: 'kt', tool: 'write_file', label: 'write_file: notes/one.txt', files: [file('notes/one.txt', 1, 1)] });
    return {
        head: 'c1',
        headSessionId: 'child1',
        sessions: [
            {
                session: { id: 'child1', title: 'write two notes', createdAt: base.createdAt, running: false, checkpointCount: 3 },
                workspace: false,
                turnCount: 1,
                rowCount: 3,
                rowsOmitted: 0,
                items: [
                    row(base, 'Baseline'),
                    {
                        kind: 'turn',
                        turnId: 'kt',
                        number: 1,
                        prompt: 'write two notes',
                        createdAt: k1.createdAt,
                        abandoned: false,
                        forkedFrom: null,
                        rows: [row(k1, 'write_file: notes/one.txt'), row(k2, 'write_file: notes/one.txt', { isHead: true })],
                    },
                ],
                nextBefore: null,
                outline: false,
            },
        ],
    };
}

function view(status: TaskView['status'], conflicts: string[] = [], over: Partial<TaskView> = {}): TaskView {
    return { ...viewBase(status, conflicts), ...over };
}

function viewBase(status: TaskView['status'], conflicts: string[]): TaskView {
    return { taskId: 'task_1', toolCallId: 'tc2', description: 'two notes', status, childSessionId: 'child1', base: 'c1', turnId: 't1', merged: [], conflicts: conflicts.map(path => ({ path, reason: 'both changed' })), metrics: {}, resumable: false };
}

function nodes(extras: TimelineExtras, tree = parentTree()): Map<string, TimelineNode> {
    return indexNodes(buildTimeline(tree, extras));
}

function cpNode(index: Map<string, TimelineNode>, id: string): CheckpointNode {
    const n = index.get(id);
    assert.ok(n?.kind === 'checkpoint', `${id} is a checkpoint row`);
    return n;
}

suite('subagents in the timeline', () => {
    test('a task checkpoint names its child (the parent session + task id); other checkpoints and bad meta name none', () => {
        const info = taskOf(taskCheckpoint({ ...TASK_META, status: 'conflicts', conflicts: [{ path: 'a.txt', reason: 'x' }] }));
        assert.deepEqual(info, { ref: REF, description: 'two notes', status: 'conflicts', conflicts: ['a.txt'], resumable: false });
        const cases: [string, Checkpoint][] = [
            ['another tool', checkpoint({ id: 'x', tool: 'write_file', meta: { task: TASK_META } })],
            ['no meta', checkpoint({ id: 'x', tool: 'task' })],
            ['meta without id', taskCheckpoint({ description: 'd' })],
            ['meta not an object', checkpoint({ id: 'x', tool: 'task', meta: { task: 'task_1' } })],
            ['an external checkpoint', checkpoint({ id: 'x', kind: 'external', meta: { task: TASK_META } })],
        ];
        for (const [what, cp] of cases) {
            assert.equal(taskOf(cp), undefined, what);
        }
        assert.equal(taskOf(taskCheckpoint({ id: 'task_1', status: 'exploded' }))?.status, undefined, 'an unknown status is not shown as one');
    });

    test('what a task row says of its child, from the checkpoint or the server\'s list', () => {
        const base: TaskInfo = { ref: REF, description: 'd', status: 'merged', conflicts: [], resumable: false };
        const cases: [TaskInfo, string][] = [
            [base, 'subagent merged'],
            [{ ...base, status: 'conflicts', conflicts: ['a', 'b'] }, 'subagent: 2 conflicts'],
            [{ ...base, status: 'conflicts', conflicts: ['a'] }, 'subagent: 1 conflict'],
            [{ ...base, status: 'failed' }, 'subagent failed'],
            [{ ...base, status: 'finished' }, 'subagent finished, not applied'],
            [{ ...base, status: 'running' }, 'subagent running'],
            [{ ...base, status: 'interrupted' }, 'subagent interrupted'],
            [{ ...base, status: 'discarded' }, 'subagent discarded'],
            [{ ...base, status: undefined }, 'subagent'],
        ];
        for (const [info, text] of cases) {
            assert.equal(taskStatusText(info), text);
        }
        assert.equal(withView(base, view('discarded')).status, 'discarded', 'the list is the state now');
        assert.deepEqual(withView(base, view('conflicts', ['x.txt'])).conflicts, ['x.txt']);
        assert.equal(withView(base, undefined), base);
    });

    test('a task row is collapsible, says its state and has its own context value; other rows do not', () => {
        const index = nodes({ running: [] });
        const task = cpNode(index, 'cp:ct');
        assert.deepEqual(task.task?.ref, REF);
        assert.deepEqual(task.children, [], 'nothing nested before its timeline is loaded');
        const look = lookOf(task, NOW);
        assert.equal(look.collapsible, true);
        assert.equal(look.contextValue, TASK_CONTEXT);
        assert.equal(look.icon, 'type-hierarchy-sub');
        assert.match(look.description, /^you are here · subagent merged · /, 'the title names the child already');
        const untitled = { ...task, row: { ...task.row, title: 'task' } };
        assert.match(lookOf(untitled, NOW).description, /^you are here · two notes · subagent merged · /, 'else the description does');
        const write = lookOf(cpNode(index, 'cp:c1'), NOW);
        assert.equal(write.collapsible, false);
        assert.equal(write.contextValue, CHECKPOINT_CONTEXT);
        const discarded = lookOf(cpNode(nodes({ running: [], tasks: new Map([[taskKey(REF), view('discarded')]]) }), 'cp:ct'), NOW);
        assert.equal(discarded.collapsible, false, 'a discarded child has no timeline to open');
        assert.match(discarded.description, /subagent discarded/);
        const failed = nodes({ running: [], tasks: new Map([[taskKey(REF), view('failed', [], { resumable: true })]]) });
        assert.equal(lookOf(cpNode(failed, 'cp:ct'), NOW).contextValue, `${TASK_CONTEXT}.resumable`, 'resumable as the server says');
    });

    test('a loaded child timeline is nested under its task row: flat rows, own ids, scoped, parented', () => {
        const index = nodes({ running: [], children: new Map([[taskKey(REF), childTree()]]) });
        const task = cpNode(index, 'cp:ct');
        assert.deepEqual(
            task.children.map(c => c.id),
            ['k0', 'k1', 'c1'].map(id => childNodeId(REF, id)),
        );
        // The child's "c1" is not the parent's "c1": both rows exist, each in its own timeline.
        assert.equal(cpNode(index, 'cp:c1').scope, undefined);
        const clash = cpNode(index, childNodeId(REF, 'c1'));
        assert.deepEqual(clash.scope, REF);
        assert.equal(clash.parentId, 'cp:ct');
        assert.equal(clash.isHead, true, "the child's own head");
        assert.equal(clash.prompt, 'write two notes');
        assert.equal(clash.task, undefined);
        const look = lookOf(clash, NOW);
        assert.equal(look.contextValue, CHILD_CONTEXT);
        assert.equal(look.collapsible, false);
        assert.equal(look.label, '● write_file: one.txt'); // the child's head; verb and file name first, the folder in the description
        assert.match(look.description, /^you are here · notes · /);
        assert.equal(index.get(childNodeId(REF, 'k1'))?.kind, 'checkpoint', 'child rows are indexed (reveal, getParent)');
        const again = nodes({ running: [], children: new Map([[taskKey(REF), childTree()]]) });
        assert.deepEqual([...again.keys()], [...index.keys()], 'ids are stable across rebuilds');
        const gone = nodes({ running: [], children: new Map([[taskKey(REF), childTree()]]), tasks: new Map([[taskKey(REF), view('discarded')]]) });
        assert.deepEqual(cpNode(gone, 'cp:ct').children, [], 'a discarded child shows no rows');
    });

    test('a listed child without a row (a crash cut its call off) shows under its turn, opens like a task row', () => {
        const cut = view('interrupted', [], { taskId: 'task_2', toolCallId: 'tc3', description: 'cut off', metrics: { toolCalls: 3 } });
        const ref2 = { sessionId: 's1', taskId: 'task_2' };
        const tasks = new Map([
            [taskKey(REF), view('merged')], // has its task row: not repeated
            [taskKey(ref2), cut],
            [taskKey({ sessionId: 's1', taskId: 'task_3' }), view('running', [], { taskId: 'task_3', toolCallId: 'tc7' })], // a call running now: its row comes with its checkpoint
            [taskKey({ sessionId: 's1', taskId: 'task_4' }), view('discarded', [], { taskId: 'task_4' })],
            [taskKey({ sessionId: 's1', taskId: 'task_5' }), view('interrupted', [], { taskId: 'task_5', turnId: 'not-shown' })],
            [taskKey({ sessionId: 'other', taskId: 'task_6' }), view('interrupted', [], { taskId: 'task_6' })], // another session's
        ]);
        const index = nodes({ running: [{ sessionId: 's1', turnId: 't1', toolCallId: 'tc7', tool: 'task' }], tasks, children: new Map([[taskKey(ref2), childTree()]]) });
        const orphans = [...index.values()].filter((n): n is SubagentNode => n.kind === 'subagent');
        assert.deepEqual(orphans.map(n => n.id), ['subagent:task_2']);
        const [node] = orphans;
        assert.ok(node);
        assert.equal(node.parentId, 'turn:t1');
        assert.deepEqual(node.task.ref, ref2);
        assert.deepEqual(node.children.map(c => c.id), ['k0', 'k1', 'c1'].map(id => childNodeId(ref2, id)));
        assert.ok(node.children.every(c => c.parentId === node.id && c.scope?.taskId === 'task_2'));
        const look = lookOf(node, NOW);
        assert.equal(look.label, 'subagent: cut off');
        assert.equal(look.description, 'subagent interrupted · 3 tool calls');
        assert.equal(look.contextValue, SUBAGENT_CONTEXT);
        assert.equal(look.collapsible, true);
        const resumed = nodes({ running: [], tasks: new Map([[taskKey(ref2), { ...cut, resumable: true }]]) }).get('subagent:task_2');
        assert.ok(resumed);
        assert.equal(lookOf(resumed, NOW).contextValue, `${SUBAGENT_CONTEXT}.resumable`);
        const rerun = new Map([[taskKey(ref2), { ...cut, status: 'running' as const }]]);
        assert.equal(nodes({ running: [], tasks: rerun }).get('subagent:task_2')?.kind, 'subagent', 'a resumed child running shows');
        const asCall = nodes({ running: [{ sessionId: 's1', turnId: 't1', toolCallId: 'tc3', tool: 'task' }], tasks: rerun });
        assert.equal(asCall.get('subagent:task_2'), undefined, 'a child running as a tool call of this turn has its running row');
        const filtered = [...nodes({ running: [], tasks, orphans: false }).values()].filter(n => n.kind === 'subagent');
        assert.deepEqual(filtered, [], 'a filtered tree shows only the rows that match');
    });

    test('a running subagent says how far it is on its running row', () => {
        const index = nodes({ running: [{ sessionId: 's1', turnId: 't1', toolCallId: 'tc9', tool: 'task', detail: 'two notes · 2 tool calls · write_file' }] });
        const running = index.get('running:tc9');
        assert.ok(running);
        assert.equal(lookOf(running, NOW).description, 'running… · two notes · 2 tool calls · write_file');
        const plain = nodes({ running: [{ sessionId: 's1', turnId: 't1', toolCallId: 'tc8', tool: 'write_file' }] }).get('running:tc8');
        assert.ok(plain);
        assert.equal(lookOf(plain, NOW).description, 'running…');
    });
});
