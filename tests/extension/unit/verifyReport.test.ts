import * as assert from 'node:assert/strict';
import type { VerifyReport } from '../../../extension/src/client/protocol';
import { verifyReportLines, verifySummary } from '../../../extension/src/commands/verify';

function report(over: Partial<VerifyReport>): VerifyReport {
    return { ok: true, quick: false, journalLines: 12, checkpoints: 4, blobs: 9, remoteBlobs: 0, damage: [], affected: [], repaired: [], quarantine: null, ...over };
}

suite('verify store report', () => {
    test('a clean store says so', () => {
        const r = report({});
        assert.deepEqual(verifyReportLines(r), ['Store verification: full check of 12 journal line(s), 4 checkpoint(s), 9 blob(s).', 'No damage found.']);
        assert.match(verifySummary(r), /intact/);
    });

    test('damage and affected checkpoints are listed, with the way out', () => {
        const r = report({
            ok: false,
            damage: [{ kind: 'blob', where: 'ab12', reason: 'its content does not match its hash', checkpointId: null }],
            affected: [{ id: 'c2', reason: 'stored content of 1 file(s) is damaged: a.txt', paths: ['a.txt'] }],
        });
        const lines = verifyReportLines(r);
        assert.ok(lines.includes('  damaged blob ab12: its content does not match its hash'));
        assert.ok(lines.includes('  c2: stored content of 1 file(s) is damaged: a.txt'));
        assert.match(lines[lines.length - 1] ?? '', /retrace verify --repair/);
        assert.match(verifySummary(r), /1 damaged piece\(s\), 1 checkpoint\(s\) affected/);
    });
});
