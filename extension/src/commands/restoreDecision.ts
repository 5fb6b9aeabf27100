/**
 * What to ask before a restore and what to say after it, decided from the server's dry-run
 * outcome. Pure (no `vscode`): the command in `restore.ts` only renders these decisions.
 *
 * Rules: nothing destructive (only creates, or a conversation-only restore) → proceed without a
 * dialog; anything overwritten, deleted or renamed → a modal with counts and files; conflicts
 * (files changed by someone other than the agent) → the conflict dialog, whose choices map to
 * `force` or per-path `resolutions`.
 */
import * as vscode from 'vscode';
import type { ConflictInfo, PlannedFile, RestoreOutcome, RestoreParams as GeneratedRestoreParams } from '../client/protocol';

export type RestoreMode = GeneratedRestoreParams['mode'];

/** The restore contract, exactly the generated protocol's (`skipConflicts`, dry runs answering
 * kind `preview`, the `unsaved` conflict reason included). */
export type RestoreParams = GeneratedRestoreParams;
export type ConflictReason = ConflictInfo['reason'];
type OutcomeKind = RestoreOutcome['kind'];

/** How a buffer with unsaved changes is named everywhere (dialogs, results). */
export const UNSAVED = vscode.l10n.t('unsaved changes in the editor');
/** The safe conflict choice (the dialog's default button). */
export const SKIP_LABEL = vscode.l10n.t('Skip conflicting files');

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

/** Characters that could break, reorder or hide a dialog line: controls, format characters
 * (bidi overrides, zero-width), line and paragraph separators, lone surrogates. */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\p{Cf}\p{Cs}"\\]/u;

/**
 * A file name as a dialog may show it: unchanged when ordinary; otherwise in double quotes with
 * every unsafe character escaped (`\n`, `\t`, `\"`, `\\`, `\u202e`), the server's
 * `retrace.text.quote_name` rule, so a name with a newline can never add a line to a dialog.
 */
export function shownName(name: string): string {
    if (!UNSAFE.test(name)) {
        return name;
    }
    const named: Record<string, string> = { '\n': '\\n', '\t': '\\t', '\r': '\\r', '"': '\\"', '\\': '\\\\' };
    let out = '';
    for (const ch of name) {
        out += named[ch] ?? (UNSAFE.test(ch) ? `\\u${(ch.codePointAt(0) ?? 0).toString(16).padStart(4, '0')}` : ch);
    }
    return `"${out}"`;
}

function listFiles(files: readonly PlannedFile[]): string {
    const lines = files.slice(0, MAX_LISTED).map(f => `${f.action === 'conflict' ? (f.intended ?? 'overwrite') : f.action}: ${shownName(f.path)}`);
    if (files.length > MAX_LISTED) {
        lines.push(vscode.l10n.t('… {0} more', files.length - MAX_LISTED));
    }
    return lines.join('\n');
}

/** "1 file", "3 files". */
function fileCount(n: number): string {
    return n === 1 ? vscode.l10n.t('1 file') : vscode.l10n.t('{0} files', n);
}

/** Parts of one sentence: "a and b". */
function both(parts: readonly string[]): string {
    return parts.join(vscode.l10n.t(' and '));
}

export function modeLabel(mode: RestoreMode): string {
    switch (mode) {
        case 'code':
            return vscode.l10n.t('code');
        case 'conversation':
            return vscode.l10n.t('conversation');
        case 'both':
            return vscode.l10n.t('code and conversation');
    }
}

/** Plan entries that would clobber work that is not the agent's (typing in the editor included). */
export function planConflicts(outcome: RestoreOutcome): readonly PlannedFile[] {
    return (outcome.plan?.files ?? []).filter(f => f.action === 'conflict');
}

/** A conflict caused by a buffer with unsaved changes (the server's `reason: "unsaved"`). */
export function isUnsaved(f: PlannedFile): boolean {
    // Compared as a string: the reason is wider than some protocol versions declare.
    return String(f.conflict?.reason) === ('unsaved' satisfies ConflictReason);
}

function conflictLine(f: PlannedFile): string {
    if (isUnsaved(f)) {
        return `${shownName(f.path)}: ${UNSAVED}`;
    }
    return `${shownName(f.path)}: ${f.conflict?.detail ?? vscode.l10n.t('changed outside the agent')}`;
}

function conflictDecision(files: readonly PlannedFile[], target: string): Confirmation {
    const conflicts = files.filter(f => f.action === 'conflict');
    const mergeable = conflicts.filter(f => f.conflict?.mergedText !== null && f.conflict?.mergedText !== undefined).map(f => f.path);
    const unsaved = conflicts.filter(isUnsaved).length;
    const external = conflicts.length - unsaved;
    const what = [
        unsaved > 0 ? vscode.l10n.t('{0} with {1}', fileCount(unsaved), UNSAVED) : '',
        external > 0 ? vscode.l10n.t('{0} changed outside the agent since {1}', fileCount(external), target) : '',
    ].filter(p => p !== '');
    const others = files.filter(f => f.action !== 'conflict');
    const lines = conflicts.slice(0, MAX_LISTED).map(conflictLine);
    if (conflicts.length > MAX_LISTED) {
        lines.push(vscode.l10n.t('… {0} more', conflicts.length - MAX_LISTED));
    }
    const also = others.length > 0 ? `\n\n${vscode.l10n.t('Restored either way:')}\n${listFiles(others)}` : '';
    return {
        kind: 'conflict',
        message: vscode.l10n.t('{0}. Restoring them would overwrite that work.', both(what)),
        detail: `${lines.join('\n')}${also}\n\n${vscode.l10n.t('“{0}” restores everything else and leaves these files exactly as they are.', SKIP_LABEL)}`,
        conflicts,
        mergeable,
    };
}

/**
 * The plan's files with every file that has unsaved changes in the editor marked as an unsaved
 * conflict, whether or not the server flagged it (the editor knows its buffers best; a restore
 * must never discard typing without asking).
 */
export function withUnsaved(files: readonly PlannedFile[], dirty: ReadonlySet<string>): PlannedFile[] {
    return files.map(f => {
        if (f.action === 'conflict' || !dirty.has(f.path)) {
            return f;
        }
        return {
            ...f,
            action: 'conflict',
            intended: f.action,
            conflict: { reason: 'unsaved' as ConflictInfo['reason'], detail: UNSAVED, mergedText: null },
        };
    });
}

/** Decide from a dry-run outcome (kind `preview`, or the older `applied`/`conflict` dry runs).
 * `dirty`: workspace-relative paths whose editor buffer has unsaved changes. */
export function decide(outcome: RestoreOutcome, target: string, dirty: ReadonlySet<string> = new Set()): Confirmation {
    const kind = String(outcome.kind);
    if (kind === 'failed') {
        return { kind: 'failed', message: vscode.l10n.t('Restore of {0} is not possible: {1}', target, (outcome as { error?: string }).error ?? vscode.l10n.t('unknown error')) };
    }
    // Conflicts are counted from the plan, whatever the outcome kind: an unsaved buffer is a
    // conflict even when the files on disk would restore cleanly.
    const files = withUnsaved(outcome.plan?.files ?? [], dirty);
    if (files.some(f => f.action === 'conflict')) {
        return conflictDecision(files, target);
    }
    if (kind === 'nothingToRestore') {
        if (outcome.mode !== 'code') {
            return { kind: 'proceed' }; // the files match, but the conversation still moves
        }
        const reason = (outcome as { reason?: string }).reason;
        return { kind: 'nothing', message: reason ? vscode.l10n.t('Nothing to restore: the workspace already matches {0} ({1}).', target, reason) : vscode.l10n.t('Nothing to restore: the workspace already matches {0}.', target) };
    }
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
        c.overwrite > 0 ? vscode.l10n.t('{0} overwritten', fileCount(c.overwrite)) : '',
        c.delete > 0 ? vscode.l10n.t('{0} deleted', c.delete) : '',
        c.create > 0 ? vscode.l10n.t('{0} created', c.create) : '',
        c.rename > 0 ? vscode.l10n.t('{0} renamed', c.rename) : '',
        c.chmod > 0 ? vscode.l10n.t('{0} with changed permissions', c.chmod) : '',
    ].filter(p => p !== '');
    return {
        kind: 'confirm',
        message: vscode.l10n.t('Restore {0} to {1}? {2}.', modeLabel(outcome.mode), target, parts.join(', ')),
        detail: `${listFiles(plan.files)}\n\n${vscode.l10n.t('The restore is itself a checkpoint: you can undo it.')}`,
    };
}

export type ConflictChoice = 'overwrite' | 'skip' | 'merge';

export const MERGE_LABEL = vscode.l10n.t('Open 3-way merge');
export const OVERWRITE_LABEL = vscode.l10n.t('Overwrite');

/**
 * The conflict dialog's buttons, safest first: the first button is the dialog's default (Enter),
 * so it must never destroy work. Overwrite is last and only ever an explicit click.
 */
export function conflictButtons(mergeable: boolean): string[] {
    return mergeable ? [SKIP_LABEL, MERGE_LABEL, OVERWRITE_LABEL] : [SKIP_LABEL, OVERWRITE_LABEL];
}

/** Params for the real restore after the user resolved conflicts. */
export function resolve(
    params: RestoreParams,
    choice: ConflictChoice | undefined,
    conflicts: readonly PlannedFile[],
    mergeable: readonly string[],
    others: readonly string[] = [],
): RestoreParams {
    const base: RestoreParams = { ...params, dryRun: false };
    switch (choice) {
        case undefined:
            return base;
        case 'overwrite':
            return { ...base, force: true };
        case 'skip':
            // Everything else is restored; the server names what it skipped (the plan may not
            // list every conflict, e.g. a buffer that became dirty after the preview). When the
            // preview named the other files, the restore is limited to them, so a conflict only
            // the editor knows about (unsaved typing) is left alone too.
            return others.length > 0 && params.paths === undefined
                ? { ...base, skipConflicts: true, paths: [...others] }
                : { ...base, skipConflicts: true };
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

/** Paths the restore left alone, with why (the contract's `skipped`, else per-file statuses). */
export function skippedFiles(outcome: RestoreOutcome, alsoSkipped: readonly PlannedFile[] = []): string[] {
    const named = (outcome as { skipped?: readonly string[] }).skipped;
    const fromFiles = outcome.files.filter(f => f.status === 'skipped').map(f => f.path);
    return [...new Set([...(named ?? []), ...fromFiles, ...alsoSkipped.map(f => f.path)])];
}

function skippedNote(outcome: RestoreOutcome, alsoSkipped: readonly PlannedFile[]): string {
    const skipped = skippedFiles(outcome, alsoSkipped);
    if (skipped.length === 0) {
        return '';
    }
    const why = new Map<string, string | null>(alsoSkipped.map(f => [f.path, isUnsaved(f) ? UNSAVED : (f.conflict?.detail ?? null)]));
    for (const f of outcome.files) {
        if (f.detail !== null || !why.has(f.path)) {
            why.set(f.path, f.detail);
        }
    }
    const listed = skipped.slice(0, MAX_LISTED).map(p => {
        const detail = why.get(p);
        return detail ? `${shownName(p)} (${detail})` : shownName(p);
    });
    const more = skipped.length > MAX_LISTED ? `, ${vscode.l10n.t('… {0} more', skipped.length - MAX_LISTED)}` : '';
    return vscode.l10n.t(' Skipped, left as they are: {0}.', `${listed.join(', ')}${more}`);
}

/** What to tell the user after the real restore. `alsoSkipped`: conflicts the client kept out of
 * the restore's scope itself (so the server never saw them). */
export function report(
    outcome: RestoreOutcome,
    target: string,
    previousHead: string | undefined,
    conversationMoved = false,
    alsoSkipped: readonly PlannedFile[] = [],
): Report {
    const counts = (status: string): number => outcome.files.filter(f => f.status === status).length;
    const kind = String(outcome.kind) as OutcomeKind;
    switch (kind) {
        case 'applied': {
            const applied = outcome as Extract<RestoreOutcome, { kind: 'applied' }>;
            const restored = counts('restored') + counts('merged');
            const message =
                outcome.mode === 'conversation'
                    ? vscode.l10n.t('Restored {0} to {1}.', modeLabel(outcome.mode), target)
                    : `${vscode.l10n.t('Restored {0} to {1} ({2}).', modeLabel(outcome.mode), target, fileCount(restored))}${skippedNote(outcome, alsoSkipped)}`;
            return {
                severity: 'info',
                message,
                undoTarget: applied.checkpoint?.parent ?? previousHead,
            };
        }
        case 'nothingToRestore':
            if (conversationMoved) {
                // Only the conversation moved. For a conversation-only restore the files were
                // simply not looked at; they may well differ from the checkpoint.
                const files = outcome.mode === 'conversation' ? vscode.l10n.t('files were left as they are') : vscode.l10n.t('files already matched');
                return { severity: 'info', message: vscode.l10n.t('Restored {0} to {1} ({2}).', modeLabel(outcome.mode), target, files), undoTarget: previousHead };
            }
            return { severity: 'info', message: `${vscode.l10n.t('Nothing to restore: already at {0}.', target)}${skippedNote(outcome, alsoSkipped)}`, undoTarget: undefined };
        case 'conflict': {
            const conflicting = outcome.files.filter(f => f.status === 'conflict');
            const unsaved = conflicting.filter(f => (f.detail ?? '').includes('unsaved')).length;
            const what = [
                unsaved > 0 ? vscode.l10n.t('{0} with {1}', fileCount(unsaved), UNSAVED) : '',
                conflicting.length - unsaved > 0 ? vscode.l10n.t('{0} changed outside the agent', fileCount(conflicting.length - unsaved)) : '',
            ].filter(p => p !== '');
            return {
                severity: 'warning',
                message: vscode.l10n.t('Not restored: {0} ({1}). Nothing was changed.', both(what) || vscode.l10n.t('conflicting files'), conflicting.map(f => shownName(f.path)).slice(0, MAX_LISTED).join(', ')),
                undoTarget: undefined,
            };
        }
        case 'failed': {
            const failed = outcome as Extract<RestoreOutcome, { kind: 'failed' }>;
            return {
                severity: 'error',
                message: failed.rolledBack
                    ? vscode.l10n.t('Restore failed: {0} (the workspace is unchanged)', failed.error)
                    : vscode.l10n.t('Restore failed: {0} (the workspace may be partly restored; see the log)', failed.error),
                undoTarget: undefined,
            };
        }
        case 'preview':
            return { severity: 'info', message: vscode.l10n.t('Nothing was restored (preview of {0} only).', target), undoTarget: undefined };
    }
}
