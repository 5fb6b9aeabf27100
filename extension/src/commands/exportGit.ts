/**
 * "Retrace: Export Checkpoint to Git Branch…": asks for a branch name (prefilled
 * `retrace/<short id>`), asks the server (`retrace/export/git`) and reports the commit with a
 * "Copy Commit" button. The server does everything (plumbing, a temporary index, refusing an
 * existing branch); its error message is shown as it said it. Wording is pure (unit-tested).
 */
import * as vscode from 'vscode';
import { METHODS, type Checkpoint, type GitExportResult, type Rpc } from '../client/protocol';
import { prompter } from '../ui';

export const COPY_COMMIT = vscode.l10n.t('Copy Commit');

/** The branch name offered for a checkpoint: `retrace/` and the id's first 8 characters. */
export function defaultBranchName(checkpointId: string): string {
    return `retrace/${checkpointId.slice(0, 8)}`;
}

/** The notification after a successful export. */
export function exportSummary(result: GitExportResult): string {
    const files = result.files === 1 ? vscode.l10n.t('1 file') : vscode.l10n.t('{0} files', result.files);
    const base = result.base === null ? vscode.l10n.t('a new root commit') : vscode.l10n.t('on {0}', result.base.slice(0, 8));
    return vscode.l10n.t(
        'Retrace: branch {0} created at {1} ({2}, {3}). Your working tree, index and current branch were not touched.',
        result.branch,
        result.commit.slice(0, 8),
        files,
        base,
    );
}

export async function exportToGit(rpc: Rpc, cp: Checkpoint): Promise<GitExportResult | undefined> {
    const branch = await vscode.window.showInputBox({
        title: vscode.l10n.t('Export checkpoint to a new git branch'),
        prompt: vscode.l10n.t('Name of the new branch (an existing branch is never moved)'),
        value: defaultBranchName(cp.id),
    });
    if (branch === undefined || branch.trim() === '') {
        return undefined;
    }
    const result = await rpc.request(METHODS.exportGit, { checkpointId: cp.id, branch: branch.trim() });
    const choice = await prompter().notify('info', exportSummary(result), [COPY_COMMIT]);
    if (choice === COPY_COMMIT) {
        await vscode.env.clipboard.writeText(result.commit);
    }
    return result;
}
