/**
 * "Retrace: Verify Store": asks the server for a full check of the checkpoint store and shows the
 * report in the Retrace output channel. `verifyReportLines` is pure (unit-tested).
 */
import * as vscode from 'vscode';
import { METHODS, type Rpc, type VerifyReport } from '../client/protocol';
import { prompter } from '../ui';

/** The report as lines for the output channel: what was checked, each damage, who it affects. */
export function verifyReportLines(report: VerifyReport): string[] {
    const what = report.quick ? 'quick check (journals, blob presence)' : 'full check';
    const lines = [`Store verification: ${what} of ${report.journalLines} journal line(s), ${report.checkpoints} checkpoint(s), ${report.blobs} blob(s).`];
    for (const d of report.damage) {
        const owner = d.checkpointId !== null ? ` (checkpoint ${d.checkpointId})` : '';
        lines.push(`  damaged ${d.kind} ${d.where}${owner}: ${d.reason}`);
    }
    if (report.affected.length > 0) {
        lines.push(`${report.affected.length} checkpoint(s) cannot be fully restored:`);
        for (const a of report.affected) {
            lines.push(`  ${a.id}: ${a.reason}`);
        }
    }
    lines.push(report.ok ? 'No damage found.' : "Damage found. Close VS Code and run 'retrace verify --repair' to quarantine it (nothing is deleted).");
    return lines;
}

/** One-line summary for the notification. */
export function verifySummary(report: VerifyReport): string {
    return report.ok
        ? `Retrace: the checkpoint store is intact (${report.checkpoints} checkpoint(s), ${report.blobs} blob(s) checked).`
        : `Retrace: the checkpoint store is damaged — ${report.damage.length} damaged piece(s), ${report.affected.length} checkpoint(s) affected. See the Retrace output.`;
}

export async function verifyStore(rpc: Rpc, output: vscode.LogOutputChannel): Promise<VerifyReport> {
    const { report } = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: 'Retrace: verifying the checkpoint store…' },
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
