import * as assert from 'node:assert/strict';
import type { PlannedFile, RestoreOutcome, RestorePlan } from '../../../extension/src/client/protocol';
import * as decisions from '../../../extension/src/commands/restoreDecision';
import { SKIP_LABEL, conflictButtons, decide, report, resolve, shownName } from '../../../extension/src/commands/restoreDecision';
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
    test('a hostile file name cannot add or hide a line of the confirmation dialog', () => {
        const hostile = ['evil\ndelete: you-were-tricked.txt', 'cr\rx', 'bidi\u202etxt.exe', 'esc\u001b[2K', 'q"uote', 'zw\u200bsp', 'sep\u2028x'];
        const d = decide(dry([planned('ok.txt', 'overwrite'), ...hostile.map(h => planned(h, 'delete'))]), 'X');
        assert.ok(d.kind === 'confirm');
        const lines = d.detail.split('\n');
        // One line per file, then the blank line and the undo note: nothing forged.
        assert.equal(lines.filter(l => /^(overwrite|delete): /.test(l)).length, hostile.length + 1);
        assert.ok(!lines.some(l => l.startsWith('delete: you-were-tricked')));
        assert.ok(!/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u200b\u202e]/u.test(d.detail));
        assert.equal(shownName('src/app.py'), 'src/app.py');
        assert.equal(shownName('naïve/日本.md'), 'naïve/日本.md');
        assert.equal(shownName('a\nb'), '"a\\nb"');
        assert.equal(shownName('\u202egnp'), '"\\u202egnp"');
    });


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
        assert.match(d.detail, /Restored either way:\noverwrite: hello\.txt/);
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
        assert.equal(resolve(base, 'skip', conflicts, []).skipConflicts, true, 'skip restores everything else');
        assert.equal(resolve(base, 'skip', [], []).skipConflicts, true, 'even when the preview listed no conflict');
        assert.equal(resolve(base, 'skip', conflicts, []).force, undefined);
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
        assert.equal(r.message, 'Restored code to “c1” (1 file). Skipped, left as they are: b.');
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

/** A file the server's editor-path dry run found open with unsaved changes (`reason: 'unsaved'`). */
function unsavedConflict(path: string, mergedText: string | null = null): PlannedFile {
    return {
        ...planned(path, 'conflict'),
        conflict: { reason: 'unsaved', detail: 'unsaved changes in the editor', mergedText },
    };
}

suite('restore decisions: unsaved editor buffers', () => {
    test('a preview whose plan has an unsaved buffer is a conflict named as such (not "0 files")', () => {
        const p = plan([unsavedConflict('hello.txt'), planned('src/app.py', 'overwrite')]);
        const preview = { kind: 'preview', targetId: 'c1', mode: 'code', dryRun: true, files: [], plan: p } as unknown as RestoreOutcome;
        const d = decide(preview, '“write_file hello.txt”');
        assert.ok(d.kind === 'conflict', JSON.stringify(d));
        assert.equal(d.message, '1 file with unsaved changes in the editor. Restoring them would overwrite that work.');
        assert.match(d.detail, /^hello\.txt: unsaved changes in the editor/);
        assert.match(d.detail, /Restored either way:\noverwrite: src\/app\.py/);
        assert.deepEqual(d.conflicts.map(f => f.path), ['hello.txt']);
    });

    test('an "applied" dry run that lists a conflict in its plan still asks (counts come from the plan)', () => {
        const p = plan([unsavedConflict('hello.txt')]);
        const applied = { kind: 'applied', targetId: 'c1', mode: 'code', dryRun: true, files: [], plan: p, checkpoint: null, safetyCheckpointId: null, skipped: [] } as RestoreOutcome;
        assert.equal(decide(applied, 'X').kind, 'conflict');
    });

    test('mixed: unsaved and external conflicts are both counted', () => {
        const d = decide(dry([unsavedConflict('a.txt'), planned('b.txt', 'conflict'), planned('c.txt', 'conflict')]), 'X');
        assert.ok(d.kind === 'conflict');
        assert.match(d.message, /^1 file with unsaved changes in the editor and 2 files changed outside the agent since X\./);
    });

    test("the dialogs render the server's dry run only: its unsaved conflict (with its merge) is asked about, skip is the server's", () => {
        // The editor-path dry run (server) marks an open buffer with unsaved changes as a conflict
        // with reason `unsaved`, and merges the buffer with the target when it can.
        const outcome = dry([unsavedConflict('src/app.py', 'merged buffer'), planned('hello.txt', 'delete'), planned('generated/out.txt', 'delete')]);
        const d = decide(outcome, '“baseline”');
        assert.ok(d.kind === 'conflict', JSON.stringify(d));
        assert.equal(d.message, '1 file with unsaved changes in the editor. Restoring them would overwrite that work.');
        assert.deepEqual(d.conflicts.map(f => [f.path, f.intended]), [['src/app.py', 'overwrite']]);
        assert.deepEqual(d.mergeable, ['src/app.py'], "the server's merge of the buffer is offered");
        // Skip: the server's real run finds the unsaved buffer again and leaves it; the client
        // neither narrows the restore nor marks files itself.
        assert.deepEqual(resolve({ id: 'c1', mode: 'code' }, 'skip', d.conflicts, d.mergeable), { id: 'c1', mode: 'code', dryRun: false, skipConflicts: true });
        assert.equal(resolve({ id: 'c1', mode: 'code' }, 'overwrite', d.conflicts, []).force, true);
        assert.deepEqual(resolve({ id: 'c1', mode: 'code' }, 'merge', d.conflicts, d.mergeable).resolutions, { 'src/app.py': 'merge' });
        // The result names what the server skipped, with its reason.
        const applied = { kind: 'applied', targetId: 'c1', mode: 'code', dryRun: false, plan: null, checkpoint: null, safetyCheckpointId: null, skipped: ['src/app.py'], files: [
            { path: 'hello.txt', action: 'delete', status: 'restored', detail: null },
            { path: 'generated/out.txt', action: 'delete', status: 'restored', detail: null },
            // The server's words for a file it skipped (engine/restore: SKIPPED_DETAIL and the conflict's detail).
            { path: 'src/app.py', action: 'conflict', status: 'skipped', detail: 'kept the current file (unsaved changes in the editor)' },
        ] } as RestoreOutcome;
        assert.equal(report(applied, '“baseline”', 'c4').message, 'Restored code to “baseline” (2 files). Skipped, left as they are: src/app.py (kept the current file (unsaved changes in the editor)).');
    });

    test('a plan the server did not mark is confirmed as planned: the client adds no conflict of its own', () => {
        const outcome = dry([planned('src/app.py', 'overwrite'), planned('hello.txt', 'delete')]);
        assert.equal(decide(outcome, 'X').kind, 'confirm');
        // No client-side rule that turns files into conflicts (the editor's buffers are the server's to judge).
        assert.equal((decisions as Record<string, unknown>)['withUnsaved'], undefined);
        assert.equal(decide.length, 2, 'decide takes the outcome and the target only');
    });

    test('the safe choice is the default button; Overwrite is never first', () => {
        for (const mergeable of [true, false]) {
            const buttons = conflictButtons(mergeable);
            assert.equal(buttons[0], SKIP_LABEL);
            assert.equal(buttons[buttons.length - 1], 'Overwrite');
            assert.equal(buttons.includes('Open 3-way merge'), mergeable);
        }
    });

    test('the result names exactly what was skipped (contract field and per-file statuses)', () => {
        const applied = {
            kind: 'applied',
            targetId: 'c1',
            mode: 'code',
            dryRun: false,
            plan: null,
            checkpoint: null,
            safetyCheckpointId: 's1',
            skipped: ['hello.txt'],
            files: [
                { path: 'src/app.py', action: 'overwrite', status: 'restored', detail: null },
                { path: 'hello.txt', action: 'conflict', status: 'skipped', detail: 'unsaved changes in the editor' },
            ],
        } as RestoreOutcome;
        const r = report(applied, '“c1”', 'c4');
        assert.equal(r.message, 'Restored code to “c1” (1 file). Skipped, left as they are: hello.txt (unsaved changes in the editor).');
    });

    test('a conversation-only restore never claims the files matched', () => {
        const nothing = { kind: 'nothingToRestore', targetId: 'c1', mode: 'conversation', dryRun: false, files: [], plan: null, reason: '', skipped: [] } as RestoreOutcome;
        const r = report(nothing, 'X', 'c4', true);
        assert.doesNotMatch(r.message, /already matched/);
        assert.match(r.message, /files were left as they are/);
        assert.match(report({ ...nothing, mode: 'both' }, 'X', 'c4', true).message, /files already matched/);
    });
});
