import * as assert from 'node:assert/strict';
import type { PlannedFile, RestoreOutcome, RestorePlan } from '../../../extension/src/client/protocol';
import { decide, report, resolve } from '../../../extension/src/commands/restoreDecision';
import { checkpoint } from './fixtures';

const entry = { kind: 'file' as const, hash: 'h', size: 3, executable: false, target: null, unstored: null };

function planned(path: string, action: PlannedFile['action'], merged: string | null = null): PlannedFile {
    return {
        path,
        action,
        fromPath: null,
        current: entry,
        target: action === 'delete' ? null : entry,
        conflict: action === 'conflict' ? { reason: 'external', detail: `${path} edited by the user`, mergedText: merged } : null,
        intended: action === 'conflict' ? 'overwrite' : null,
    };
}

function plan(files: PlannedFile[]): RestorePlan {
    const counts = { create: 0, overwrite: 0, delete: 0, rename: 0, chmod: 0, conflict: 0 };
    for (const f of files) {
        counts[f.action]++;
    }
    return { targetId: 'c1', headId: 'c4', mode: 'code', files, counts, unrecoverable: [], kept: [] };
}

function dry(files: PlannedFile[]): RestoreOutcome {
    const p = plan(files);
    return p.counts.conflict > 0
        ? { kind: 'conflict', targetId: 'c1', mode: 'code', dryRun: true, files: [], plan: p, skipped: [] }
        : { kind: 'preview', targetId: 'c1', mode: 'code', dryRun: true, files: [], plan: p, skipped: [] };
}

suite('restore decisions', () => {
    test('only creations: proceed without a dialog', () => {
        assert.deepEqual(decide(dry([planned('a.txt', 'create')]), 'X'), { kind: 'proceed' });
    });

    test('overwrite or delete: a confirmation with counts and files', () => {
        const d = decide(dry([planned('hello.txt', 'overwrite'), planned('generated/out.txt', 'delete'), planned('new.txt', 'create')]), '“c1”');
        assert.equal(d.kind, 'confirm');
        assert.ok(d.kind === 'confirm');
        assert.match(d.message, /Restore code to “c1”\? 1 file overwritten, 1 deleted, 1 created\./);
        assert.match(d.detail, /overwrite: hello\.txt/);
        assert.match(d.detail, /delete: generated\/out\.txt/);
    });

    test('conflicts: names the files and which ones merged', () => {
        const d = decide(dry([planned('src/app.py', 'conflict', 'merged text'), planned('notes.txt', 'conflict'), planned('hello.txt', 'overwrite')]), 'X');
        assert.ok(d.kind === 'conflict');
        assert.match(d.message, /^2 files changed outside the agent/);
        assert.deepEqual(d.mergeable, ['src/app.py']);
        assert.match(d.detail, /src\/app\.py edited by the user/);
        assert.match(d.detail, /Also planned:\noverwrite: hello\.txt/);
    });

    test('conversation-only and nothing-to-restore and failures', () => {
        const conv: RestoreOutcome = { kind: 'preview', targetId: 'c1', mode: 'conversation', dryRun: true, files: [], plan: null, skipped: [] };
        assert.deepEqual(decide(conv, 'X'), { kind: 'proceed' });
        const nothing: RestoreOutcome = { kind: 'nothingToRestore', targetId: 'c1', mode: 'code', dryRun: true, files: [], plan: null, reason: 'no changes', skipped: [] };
        assert.equal(decide(nothing, 'X').kind, 'nothing');
        assert.deepEqual(decide({ ...nothing, mode: 'both' }, 'X'), { kind: 'proceed' }, 'the conversation part of "both" still runs');
        const failed: RestoreOutcome = { kind: 'failed', targetId: 'c1', mode: 'code', dryRun: true, files: [], plan: null, error: 'unknown checkpoint', rolledBack: true, skipped: [] };
        const f = decide(failed, 'X');
        assert.ok(f.kind === 'failed');
        assert.match(f.message, /unknown checkpoint/);
    });

    test('conflict choices map to force or per-path resolutions; merge never overwrites an unmergeable file', () => {
        const conflicts = [planned('src/app.py', 'conflict', 'm'), planned('notes.txt', 'conflict')];
        const base = { id: 'c1', mode: 'code' as const, dryRun: true };
        assert.deepEqual(resolve(base, 'overwrite', conflicts, []), { id: 'c1', mode: 'code', dryRun: false, force: true });
        assert.deepEqual(resolve(base, 'skip', conflicts, []).resolutions, { 'src/app.py': 'skip', 'notes.txt': 'skip' });
        assert.deepEqual(resolve(base, 'merge', conflicts, ['src/app.py']).resolutions, { 'src/app.py': 'merge', 'notes.txt': 'skip' });
        assert.equal(resolve(base, undefined, [], []).dryRun, false);
    });

    test('report: applied offers undo to the restore checkpoint parent', () => {
        const restoreCp = checkpoint({ id: 'r1', parent: 'safety1', kind: 'restore' });
        const applied: RestoreOutcome = {
            kind: 'applied',
            targetId: 'c1',
            mode: 'code',
            dryRun: false,
            plan: null,
            checkpoint: restoreCp,
            safetyCheckpointId: 'safety1',
            skipped: ['b'],
            files: [
                { path: 'a', action: 'overwrite', status: 'restored', detail: null },
                { path: 'b', action: 'conflict', status: 'skipped', detail: null },
            ],
        };
        const r = report(applied, '“c1”', 'c4');
        assert.equal(r.severity, 'info');
        assert.equal(r.message, 'Restored code to “c1” (1 file, 1 skipped).');
        assert.equal(r.undoTarget, 'safety1');
        const noCp = report({ ...applied, checkpoint: null, mode: 'conversation' }, 'X', 'c4');
        assert.equal(noCp.undoTarget, 'c4');
        assert.equal(noCp.message, 'Restored conversation to X.');
        const failed = report({ kind: 'failed', targetId: 'c1', mode: 'code', dryRun: false, files: [], plan: null, error: 'boom', rolledBack: false, skipped: [] }, 'X', 'c4');
        assert.equal(failed.severity, 'error');
        assert.match(failed.message, /may be partly restored/);
        assert.equal(failed.undoTarget, undefined);
    });
});
