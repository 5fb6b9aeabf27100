/**
 * What to ask before a restore and what to say after it, decided from the server's dry-run
 * outcome. Pure (no `vscode`): the command in `restore.ts` only renders these decisions.
 *
 * Rules: nothing destructive (only creates, or a conversation-only restore) → proceed without a
 * dialog; anything overwritten, deleted or renamed → a modal with counts and files; conflicts
 * (files changed by someone other than the agent) → the conflict dialog, whose choices map to
 * `force` or per-path `resolutions`.
 */
import type { PlannedFile, RestoreOutcome, RestoreParams } from '../client/protocol';

export type RestoreMode = RestoreParams['mode'];

export type Confirmation =
    | { readonly kind: 'proceed' }
    | { readonly kind: 'confirm'; readonly message: string; readonly detail: string }
    | {
          readonly kind: 'conflict';
          readonly message: string;
          readonly detail: string;
          readonly conflicts: readonly PlannedFile[];
          /** Paths whose 3-way merge succeeded on the server. */
          readonly mergeable: readonly string[];
      }
    | { readonly kind: 'nothing'; readonly message: string }
    | { readonly kind: 'failed'; readonly message: string };

const MAX_LISTED = 12;

function listFiles(files: readonly PlannedFile[]): string {
    const lines = files.slice(0, MAX_LISTED).map(f => `${f.action === 'conflict' ? (f.intended ?? 'overwrite') : f.action}: ${f.path}`);
    if (files.length > MAX_LISTED) {
        lines.push(`… ${files.length - MAX_LISTED} more`);
    }
    return lines.join('\n');
}

function plural(n: number, word: string): string {
    return `${n} ${word}${n === 1 ? '' : 's'}`;
}

export function modeLabel(mode: RestoreMode): string {
    switch (mode) {
        case 'code':
            return 'code';
        case 'conversation':
            return 'conversation';
        case 'both':
            return 'code and conversation';
    }
}

/** Decide from a dry-run outcome. */
export function decide(outcome: RestoreOutcome, target: string): Confirmation {
    switch (outcome.kind) {
        case 'nothingToRestore':
            if (outcome.mode !== 'code') {
                return { kind: 'proceed' }; // the files match, but the conversation still moves
            }
            return { kind: 'nothing', message: `Nothing to restore: the workspace already matches ${target}${outcome.reason ? ` (${outcome.reason})` : ''}.` };
        case 'failed':
            return { kind: 'failed', message: `Restore of ${target} is not possible: ${outcome.error}` };
        case 'conflict': {
            const files = outcome.plan?.files ?? [];
            const conflicts = files.filter(f => f.action === 'conflict');
            const mergeable = conflicts.filter(f => f.conflict?.mergedText !== null && f.conflict?.mergedText !== undefined).map(f => f.path);
            const reasons = conflicts.map(f => `${f.path}: ${f.conflict?.detail ?? 'changed outside the agent'}`).slice(0, MAX_LISTED);
            return {
                kind: 'conflict',
                message: `${plural(conflicts.length, 'file')} changed outside the agent since ${target}. Restoring would overwrite that work.`,
                detail: `${reasons.join('\n')}${files.length > conflicts.length ? `\n\nAlso planned:\n${listFiles(files.filter(f => f.action !== 'conflict'))}` : ''}`,
                conflicts,
                mergeable,
            };
        }
        case 'preview':
        case 'applied': {
            const plan = outcome.plan;
            if (plan === null || outcome.mode === 'conversation') {
                return { kind: 'proceed' };
            }
            const c = plan.counts;
            const destructive = c.overwrite + c.delete + c.rename + c.chmod;
            if (destructive === 0) {
                return { kind: 'proceed' };
            }
            const parts = [
                c.overwrite > 0 ? `${plural(c.overwrite, 'file')} overwritten` : '',
                c.delete > 0 ? `${c.delete} deleted` : '',
                c.create > 0 ? `${c.create} created` : '',
                c.rename > 0 ? `${c.rename} renamed` : '',
                c.chmod > 0 ? `${c.chmod} with changed permissions` : '',
            ].filter(p => p !== '');
            return {
                kind: 'confirm',
                message: `Restore ${modeLabel(outcome.mode)} to ${target}? ${parts.join(', ')}.`,
                detail: `${listFiles(plan.files)}\n\nThe restore is itself a checkpoint: you can undo it.`,
            };
        }
    }
}

export type ConflictChoice = 'overwrite' | 'skip' | 'merge';

/** Params for the real restore after the user resolved conflicts. */
export function resolve(
    params: RestoreParams,
    choice: ConflictChoice | undefined,
    conflicts: readonly PlannedFile[],
    mergeable: readonly string[],
): RestoreParams {
    const base: RestoreParams = { ...params, dryRun: false };
    switch (choice) {
        case undefined:
            return base;
        case 'overwrite':
            return { ...base, force: true };
        case 'skip':
            return { ...base, resolutions: Object.fromEntries(conflicts.map(f => [f.path, 'skip' as const])) };
        case 'merge': {
            // Files whose merge failed on the server are skipped: never overwritten without asking.
            const ok = new Set(mergeable);
            return { ...base, resolutions: Object.fromEntries(conflicts.map(f => [f.path, ok.has(f.path) ? ('merge' as const) : ('skip' as const)])) };
        }
    }
}

export interface Report {
    readonly severity: 'info' | 'warning' | 'error';
    readonly message: string;
    /** Restoring this checkpoint undoes the restore (the previous head). */
    readonly undoTarget: string | undefined;
}

/** What to tell the user after the real restore. */
export function report(outcome: RestoreOutcome, target: string, previousHead: string | undefined, conversationMoved = false): Report {
    const counts = (status: string): number => outcome.files.filter(f => f.status === status).length;
    switch (outcome.kind) {
        case 'applied': {
            const restored = counts('restored') + counts('merged');
            const skipped = counts('skipped');
            const files = outcome.mode === 'conversation' ? '' : ` (${plural(restored, 'file')}${skipped > 0 ? `, ${skipped} skipped` : ''})`;
            return {
                severity: 'info',
                message: `Restored ${modeLabel(outcome.mode)} to ${target}${files}.`,
                undoTarget: outcome.checkpoint?.parent ?? previousHead,
            };
        }
        case 'preview':
            return { severity: 'info', message: `Preview of the restore to ${target}: nothing was changed.`, undoTarget: undefined };
        case 'nothingToRestore':
            if (conversationMoved) {
                // Files already matched; only the conversation moved.
                return { severity: 'info', message: `Restored ${modeLabel(outcome.mode)} to ${target} (files already matched).`, undoTarget: previousHead };
            }
            return { severity: 'info', message: `Nothing to restore: already at ${target}.`, undoTarget: undefined };
        case 'conflict':
            return {
                severity: 'warning',
                message: `Not restored: ${plural(outcome.files.filter(f => f.status === 'conflict').length, 'file')} changed outside the agent.`,
                undoTarget: undefined,
            };
        case 'failed':
            return {
                severity: 'error',
                message: `Restore failed: ${outcome.error}${outcome.rolledBack ? ' (the workspace is unchanged)' : ' (the workspace may be partly restored; see the log)'}`,
                undoTarget: undefined,
            };
    }
}
