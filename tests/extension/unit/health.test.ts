import * as assert from 'node:assert/strict';
import type { RestoreOutcome, Rpc } from '../../../extension/src/client/protocol';
import { OPEN_RETENTION, REASONS, REASON_QUESTION, RUN_GC, WHY, alertLook, askRestoreReason, reasonKey, reasonOf } from '../../../extension/src/commands/health';
import { setPrompter } from '../../../extension/src/ui';
import { checkpoint } from './fixtures';

function applied(restoreId: string | null): RestoreOutcome {
    return {
        kind: 'applied',
        targetId: 'target',
        mode: 'code',
        dryRun: false,
        files: [],
        plan: null,
        skipped: [],
        checkpoint: restoreId === null ? null : checkpoint({ id: restoreId, kind: 'restore' }),
        safetyCheckpointId: null,
    };
}

suite('restore reasons and storage alerts', () => {
    test('the action on the restore notification is one short word', () => {
        assert.equal(WHY, 'Why?');
    });

    test('the five reasons, in order, map to the protocol values', () => {
        assert.deepEqual(
            REASONS.map(r => r.reason),
            ['wrongApproach', 'brokeTests', 'unwantedChanges', 'offTrack', 'other'],
        );
        assert.equal(reasonOf('Broke tests'), 'brokeTests');
        assert.equal(reasonOf(undefined), undefined);
        assert.equal(reasonOf('Undo restore'), undefined);
    });

    test('a reason names the restore checkpoint, else the target', () => {
        assert.equal(reasonKey('target', applied('r1')), 'r1');
        assert.equal(reasonKey('target', applied(null)), 'target');
        const nothing: RestoreOutcome = { kind: 'nothingToRestore', targetId: 'target', mode: 'conversation', dryRun: false, files: [], plan: null, skipped: [], reason: '' };
        assert.equal(reasonKey('target', nothing), 'target');
    });

    test('a chosen reason is recorded; a dismissed quick pick records nothing; no notification of its own', async () => {
        const sent: unknown[] = [];
        const rpc = { request: (method: string, params: unknown) => (sent.push([method, params]), Promise.resolve({})) } as unknown as Rpc;
        const asked: string[] = [];
        const notified: string[] = [];
        let answer: string | undefined = 'Wrong approach';
        const restore = setPrompter({
            modal: () => Promise.resolve(undefined),
            notify: (_s, message) => (notified.push(message), Promise.resolve(undefined)),
            choose: (placeHolder, items) => (asked.push(placeHolder), assert.deepEqual(items, REASONS.map(r => r.label)), Promise.resolve(answer)),
        });
        try {
            await askRestoreReason(rpc, 'target', applied('r1'), 'code');
            answer = undefined;
            await askRestoreReason(rpc, 'target', applied('r2'), 'both');
        } finally {
            restore();
        }
        assert.deepEqual(asked, [REASON_QUESTION, REASON_QUESTION]);
        assert.deepEqual(notified, []);
        assert.deepEqual(sent, [['retrace/restore/reason', { checkpointId: 'r1', reason: 'wrongApproach', mode: 'code' }]]);
    });

    test('alerts: urgent is an error, warning a warning, both offer the two fixes', () => {
        const base = { usedBytes: 90, budgetBytes: 100, ratio: 0.9, message: 'full' };
        assert.deepEqual(alertLook({ ...base, level: 'urgent' }), { severity: 'error', message: 'full', buttons: [RUN_GC, OPEN_RETENTION] });
        assert.equal(alertLook({ ...base, level: 'warning' }).severity, 'warning');
    });
});
