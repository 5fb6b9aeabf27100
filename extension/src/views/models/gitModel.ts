/**
 * Git-aware restores and side effects a restore does not undo, as the extension words them.
 * Pure (of `vscode` only `l10n`; unit-tested). The server decides: its dry run says where git was at
 * the target and is now (`RestoreResult.git`) and which commands after the target touched the
 * world outside the workspace (`RestoreResult.sideEffects`); a code restore when git moved is
 * refused (`gitMoved`) unless `gitChoice` says "filesOnly" or "parkFirst". Rows carry
 * `StoryRow.gitChange` ("switched to branch x") and `StoryRow.sideEffects`.
 */
import * as vscode from 'vscode';
import type { GitRestoreInfo, RestoreResult, SideEffectView, StoryRow } from '../../client/protocol';

export const GIT_MOVED_CODE = 'gitMoved';
export const FILES_ONLY = vscode.l10n.t('Restore Files Only');
export const PARK_FIRST = vscode.l10n.t('Park Current State on a Branch, Then Restore');
export const RESTORE_ANYWAY_OUTSIDE = vscode.l10n.t('Restore');
export const NOT_UNDONE = vscode.l10n.t('not undone by this restore');

export type GitChoice = 'filesOnly' | 'parkFirst';

export interface GitQuestion {
    readonly message: string;
    readonly detail: string;
    readonly buttons: readonly string[];
    /** Whether the answer is a git choice (else the only button confirms the restore). */
    readonly git: boolean;
}

function short(oid: string | null | undefined): string {
    return oid ? oid.slice(0, 7) : vscode.l10n.t('no commit');
}

function where(branch: string | null | undefined, head: string | null | undefined): string {
    return branch ? vscode.l10n.t('branch {0} at {1}', branch, short(head)) : vscode.l10n.t('a detached HEAD at {0}', short(head));
}

export function gitMoved(git: GitRestoreInfo | null | undefined): git is GitRestoreInfo {
    return git !== null && git !== undefined && (git.headMoved || git.branchMoved);
}

/** "Not undone by this restore:" and one line per command (at most `limit`). */
export function sideEffectsNote(effects: readonly SideEffectView[], limit = 6): string {
    if (effects.length === 0) {
        return '';
    }
    const lines = effects.slice(0, limit).map(e => `• ${e.command.length > 80 ? `${e.command.slice(0, 79)}…` : e.command} (${e.kinds.join(', ')})`);
    const more = effects.length > limit ? [vscode.l10n.t('…and {0} more', effects.length - limit)] : [];
    return [vscode.l10n.t('Effects outside the workspace {0}:', NOT_UNDONE), ...lines, ...more].join('\n');
}

/** The one modal a restore's dry run calls for (undefined: nothing to ask). */
/** `targetLabel`: how the target is named in dialogs, quotes included (“write_file: a.py”). */
export function gitQuestion(dry: Pick<RestoreResult, 'git' | 'sideEffects'>, targetLabel: string): GitQuestion | undefined {
    const note = sideEffectsNote(dry.sideEffects ?? []);
    const git = dry.git ?? null;
    if (gitMoved(git)) {
        const message = vscode.l10n.t('Git moved since {0}: it was made on {1}; the repository is now on {2}.', targetLabel, where(git.targetBranch, git.targetHead), where(git.currentBranch, git.currentHead));
        const detail = [vscode.l10n.t('A restore puts files back, not git. Restore the files only (git stays as it is), or first commit the current state on a new branch retrace/parked-… so nothing is lost.'), note]
            .filter(Boolean)
            .join('\n\n');
        return { message, detail, buttons: [FILES_ONLY, PARK_FIRST], git: true };
    }
    if (note !== '') {
        return { message: vscode.l10n.t('Restore to {0}? Some commands since then changed things outside the workspace.', targetLabel), detail: note, buttons: [RESTORE_ANYWAY_OUTSIDE], git: false };
    }
    return undefined;
}

/** The modal's answer as the restore's `gitChoice` ('cancel': the user closed it). */
export function gitAnswer(q: GitQuestion, pick: string | undefined): GitChoice | 'proceed' | 'cancel' {
    if (!q.git) {
        return pick === RESTORE_ANYWAY_OUTSIDE ? 'proceed' : 'cancel';
    }
    return pick === FILES_ONLY ? 'filesOnly' : pick === PARK_FIRST ? 'parkFirst' : 'cancel';
}

export function isGitRefusal(err: unknown): boolean {
    const data = typeof err === 'object' && err !== null ? (err as { data?: unknown }).data : undefined;
    return typeof data === 'object' && data !== null && (data as { code?: unknown }).code === GIT_MOVED_CODE;
}

/** What a row adds to its description and hover: git's move and the side effects. */
export function rowMarks(row: Pick<StoryRow, 'gitChange' | 'sideEffects'>): { badge: string; hover: string[]; icon: string | undefined } {
    const parts: string[] = [];
    const hover: string[] = [];
    if (row.gitChange) {
        parts.push(`git: ${row.gitChange}`);
        hover.push(`Git: ${row.gitChange}`);
    }
    const effects = row.sideEffects ?? [];
    if (effects.length > 0) {
        parts.push('⚠ outside');
        hover.push(vscode.l10n.t('Outside the workspace ({0}): {1}', NOT_UNDONE, effects.join(', ')));
    }
    // The icon shows at any sidebar width (the description is cut first at 300 px).
    const icon = effects.length > 0 ? 'globe' : row.gitChange ? 'source-control' : undefined;
    return { badge: parts.join(' · '), hover, icon };
}

/** A parked branch's words for the restore's report. */
export function parkedNote(git: GitRestoreInfo | null | undefined): string {
    return git?.parkedBranch ? vscode.l10n.t(' The state before it is parked on branch {0}.', git.parkedBranch) : '';
}
