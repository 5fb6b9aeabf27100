import * as assert from 'node:assert/strict';
import { buildTimeline, indexNodes, lookOf, type CheckpointNode, type TimelineNode } from '../../../extension/src/views/timelineModel';
import { checkpoint, file, sampleTimeline } from './fixtures';

const noExtras = { turnTitles: new Map<string, string>(), toolStatus: new Map<string, string>(), running: [] };

function checkpoints(nodes: readonly TimelineNode[]): CheckpointNode[] {
    return nodes.filter((n): n is CheckpointNode => n.kind === 'checkpoint');
}

suite('timeline model', () => {
    test('session → turns → checkpoints, untouched commit order, baseline under the session', () => {
        const roots = buildTimeline(sampleTimeline(), { ...noExtras, turnTitles: new Map([['t1', 'Create hello.txt please\nand more']]) });
        assert.equal(roots.length, 1);
        const session = roots[0];
        assert.ok(session);
        assert.equal(session.title, 'Create hello.txt please');
        assert.deepEqual(session.children.map(c => c.kind), ['checkpoint', 'turn', 'turn']);
        const [, t1, t2] = session.children;
        assert.ok(t1?.kind === 'turn' && t2?.kind === 'turn');
        assert.equal(t1.title, 'Create hello.txt please');
        assert.equal(t2.title, 'Turn 2');
        assert.deepEqual(checkpoints(t1.children).map(c => c.checkpoint.id), ['c1', 'c2', 'c3']);
        assert.deepEqual(checkpoints(t2.children).map(c => c.checkpoint.id), ['c4']);
    });

    test('ids are stable across rebuilds and every parent is indexed', () => {
        const a = indexNodes(buildTimeline(sampleTimeline(), noExtras));
        const b = indexNodes(buildTimeline(sampleTimeline(), noExtras));
        assert.deepEqual([...a.keys()], [...b.keys()]);
        for (const node of a.values()) {
            if (node.kind !== 'session') {
                assert.ok(a.has(node.parentId), `parent of ${node.id}`);
            }
        }
        assert.equal(new Set(a.keys()).size, a.size);
    });

    test('looks: tool icons, head marker, +/− description, context value', () => {
        const index = indexNodes(buildTimeline(sampleTimeline(), noExtras));
        const look = (id: string) => {
            const n = index.get(`cp:${id}`);
            assert.ok(n);
            return lookOf(n);
        };
        assert.equal(look('base').icon, 'circle-outline');
        assert.equal(look('c1').icon, 'edit');
        assert.equal(look('c1').label, 'write_file hello.txt');
        assert.equal(look('c2').label, 'edit_file');
        assert.equal(look('c3').icon, 'terminal');
        assert.equal(look('c3').description, 'generated/out.txt +1 −0');
        assert.match(look('c4').description, /^● head · hello\.txt \+1 −1$/);
        assert.equal(look('c2').contextValue, 'checkpoint');
        assert.equal(look('c2').collapsible, false);
    });

    test('restore and external checkpoints, failed tools, partial recoverability', () => {
        const data = sampleTimeline();
        data.checkpoints.push(
            checkpoint({ id: 'r1', parent: 'c4', kind: 'restore', restoredFrom: 'c2abcdef99', files: [file('hello.txt'), file('generated/out.txt', 0, 1, 'deleted')] }),
            checkpoint({ id: 'x1', parent: 'r1', kind: 'external', files: [file('notes.txt')] }),
            checkpoint({ id: 'p1', parent: 'x1', turnId: 't3', tool: 'run_command', toolCallId: 'tc9', recoverability: 'partial', unrecoverable: [{ path: 'big.bin', reason: 'over size cap' }] }),
        );
        data.head = 'p1';
        const index = indexNodes(buildTimeline(data, { ...noExtras, toolStatus: new Map([['tc2', 'error']]) }));
        const look = (id: string) => lookOf(index.get(`cp:${id}`) as TimelineNode);
        assert.equal(look('r1').icon, 'history');
        assert.equal(look('r1').label, 'Restored c2abcdef');
        assert.equal(look('r1').description, '2 files +1 −1');
        assert.equal(look('x1').icon, 'person');
        assert.equal(look('c2').icon, 'error');
        assert.equal(look('c2').iconColor, 'list.errorForeground');
        assert.match(look('c2').description, /error/);
        assert.equal(look('p1').icon, 'warning');
        assert.match(look('p1').description, /⚠ partial: big\.bin \(over size cap\)/);
        assert.doesNotMatch(look('c4').description, /head/);
    });

    test('a running tool shows a spinner under its turn until its checkpoint lands', () => {
        const roots = buildTimeline(sampleTimeline(), { ...noExtras, running: [{ sessionId: 's1', turnId: 't2', toolCallId: 'tc5', tool: 'run_command' }] });
        const index = indexNodes(roots);
        const running = index.get('running:tc5');
        assert.ok(running && running.kind === 'runningTool');
        assert.equal(running.parentId, 'turn:t2');
        assert.equal(lookOf(running).icon, 'sync~spin');
    });

    test('a listed session without checkpoints still appears', () => {
        const data = sampleTimeline();
        data.sessions.push({ id: 's2', title: 'second', createdAt: null, running: true, checkpointCount: 0 });
        const roots = buildTimeline(data, noExtras);
        assert.deepEqual(roots.map(r => r.sessionId), ['s1', 's2']);
        assert.equal(lookOf(roots[1] as TimelineNode).icon, 'sync~spin');
    });
});
