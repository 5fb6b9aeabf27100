import * as assert from 'node:assert/strict';
import type { GitRestoreInfo } from '../../../extension/src/client/protocol';
import { FILES_ONLY, PARK_FIRST, RESTORE_ANYWAY_OUTSIDE, gitAnswer, gitQuestion, isGitRefusal, parkedNote, rowMarks, sideEffectsNote } from '../../../extension/src/views/models/gitModel';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);

function info(over: Partial<GitRestoreInfo> = {}): GitRestoreInfo {
    return { targetHead: A, targetBranch: 'main', currentHead: A, currentBranch: 'main', headMoved: false, branchMoved: false, parkedBranch: null, parkedCommit: null, ...over };
}

suite('gitModel', () => {
    test('nothing moved and no side effects: no question', () => {
        assert.equal(gitQuestion({ git: info(), sideEffects: [] }, 'x'), undefined);
        assert.equal(gitQuestion({ git: null }, 'x'), undefined);
    });

    test('a branch switch asks files only / park first, naming both places and the side effects', () => {
        const q = gitQuestion({ git: info({ currentBranch: 'feature', currentHead: B, branchMoved: true, headMoved: true }), sideEffects: [{ checkpoint: 'c1', command: 'pip install requests', kinds: ['installs packages outside the workspace'] }] }, '“write_file: app.py”');
        assert.ok(q !== undefined && q.git);
        assert.match(q.message, /branch main at aaaaaaa/);
        assert.match(q.message, /branch feature at bbbbbbb/);
        assert.deepEqual(q.buttons, [FILES_ONLY, PARK_FIRST]);
        assert.match(q.detail, /not undone by this restore/);
        assert.match(q.detail, /pip install requests/);
        assert.equal(gitAnswer(q, FILES_ONLY), 'filesOnly');
        assert.equal(gitAnswer(q, PARK_FIRST), 'parkFirst');
        assert.equal(gitAnswer(q, undefined), 'cancel');
    });

    test('a detached HEAD and a moved HEAD on the same branch are moves too', () => {
        const q = gitQuestion({ git: info({ currentBranch: null, branchMoved: true }) }, 'x');
        assert.match(q?.message ?? '', /detached HEAD/);
        assert.ok(gitQuestion({ git: info({ currentHead: B, headMoved: true }) }, 'x')?.git);
    });

    test('side effects alone ask for a plain confirmation', () => {
        const q = gitQuestion({ git: info(), sideEffects: [{ checkpoint: 'c', command: 'docker run x', kinds: ['containers'] }] }, 'x');
        assert.ok(q !== undefined && !q.git);
        assert.equal(gitAnswer(q, RESTORE_ANYWAY_OUTSIDE), 'proceed');
        assert.equal(gitAnswer(q, undefined), 'cancel');
    });

    test('long lists are cut, long commands shortened', () => {
        const many = Array.from({ length: 9 }, (_, i) => ({ checkpoint: `c${i}`, command: `curl -X POST https://e.com/${'x'.repeat(100)}`, kinds: ['network write'] }));
        const note = sideEffectsNote(many);
        assert.match(note, /and 3 more/);
        assert.ok(note.split('\n').every(l => l.length < 130));
    });

    test('row marks and the refusal code', () => {
        assert.deepEqual(rowMarks({ gitChange: null, sideEffects: [] }), { badge: '', hover: [], icon: undefined });
        assert.equal(rowMarks({ gitChange: 'committed abc1234' }).icon, 'source-control');
        const m = rowMarks({ gitChange: 'switched to branch feature', sideEffects: ['installs packages outside the workspace'] });
        assert.equal(m.badge, 'git: switched to branch feature · ⚠ outside');
        assert.equal(m.icon, 'globe');
        assert.match(m.hover[1] ?? '', /not undone by this restore/);
        assert.ok(isGitRefusal({ data: { code: 'gitMoved' } }));
        assert.ok(!isGitRefusal(new Error('x')));
        assert.equal(parkedNote(info({ parkedBranch: 'retrace/parked-1' })), ' The state before it is parked on branch retrace/parked-1.');
    });
});
