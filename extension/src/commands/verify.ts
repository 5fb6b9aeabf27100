/**
 * "Retrace: Verify Store": asks the server for a full check of the checkpoint store and shows the
 * report in the Retrace output channel. `verifyReportLines` is pure (unit-tested).
 */
import * as vscode from 'vscode';
import { METHODS, type Rpc, type VerifyReport } from '../client/protocol';
import { prompter } from '../ui';

/** The report as lines for the output channel: what was checked, each damage, who it affects. */
export function verifyReportLines(report: VerifyReport): string[] {
    const what = report.quick ? vscode.l10n.t('quick check (journals, blob presence)') : vscode.l10n.t('full check');
    const lines = [vscode.l10n.t('Store verification: {0} of {1} journal line(s), {2} checkpoint(s), {3} blob(s).', what, report.journalLines, report.checkpoints, report.blobs)];
    for (const d of report.damage) {
        const owner = d.checkpointId !== null ? vscode.l10n.t(' (checkpoint {0})', d.checkpointId) : '';
        lines.push(vscode.l10n.t('  damaged {0} {1}{2}: {3}', d.kind, d.where, owner, d.reason));
    }
    if (report.affected.length > 0) {
        lines.push(vscode.l10n.t('{0} checkpoint(s) cannot be fully restored:', report.affected.length));
        for (const a of report.affected) {
            lines.push(`  ${a.id}: ${a.reason}`);
        }
    }
    lines.push(report.ok ? vscode.l10n.t('No damage found.') : vscode.l10n.t("Damage found. Close VS Code and run 'retrace verify --repair' to quarantine it (nothing is deleted)."));
    return lines;
}

/** One-line summary for the notification. */
export function verifySummary(report: VerifyReport): string {
    return report.ok
        ? vscode.l10n.t('Retrace: the checkpoint store is intact ({0} checkpoint(s), {1} blob(s) checked).', report.checkpoints, report.blobs)
        : vscode.l10n.t('Retrace: the checkpoint store is damaged — {0} damaged piece(s), {1} checkpoint(s) affected. See the Retrace output.', report.damage.length, report.affected.length);
}

export async function verifyStore(rpc: Rpc, output: vscode.LogOutputChannel): Promise<VerifyReport> {
    const { report } = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: vscode.l10n.t('Retrace: verifying the checkpoint store…') },
        () => rpc.request(METHODS.storeVerify, { quick: false }),
    );
    const lines = verifyReportLines(report);
    for (const line of lines) {
        if (report.ok) {
            output.info(line);
        } else {
            output.warn(line);
        }
    }
    output.show(true);
    void prompter().notify(report.ok ? 'info' : 'warning', verifySummary(report), []);
    return report;
}
