/**
 * What to ask before a restore and what to say after it, decided from the server's dry-run
 * outcome. Pure (no `vscode`): the command in `restore.ts` only renders these decisions.
 *
 * Rules: nothing destructive (only creates, or a conversation-only restore) → proceed without a
 * dialog; anything overwritten, deleted or renamed → a modal with counts and files; conflicts
 * (files changed by someone other than the agent) → the conflict dialog, whose choices map to
 * `force` or per-path `resolutions`. Every conflict is the server's: its editor-path dry run marks
 * an open buffer with unsaved changes as a conflict with reason `unsaved` (in the folder the
 * restore is for); the client adds none of its own.
 */
import * as vscode from 'vscode';
import type { ConflictInfo, PlanCounts, PlannedFile, RestoreOutcome, RestorePlan, RestoreParams as GeneratedRestoreParams } from '../client/protocol';

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

/** A conflict caused by a buffer with unsaved changes (the server's `reason: "unsaved"`). */
export function isUnsaved(f: PlannedFile): boolean {
    return f.conflict?.reason === ('unsaved' satisfies ConflictReason);
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

/** One kind of the server's outcome. */
type Outcome<K extends OutcomeKind> = Extract<RestoreOutcome, { kind: K }>;

function failedDecision(outcome: Outcome<'failed'>, target: string): Confirmation {
    return { kind: 'failed', message: vscode.l10n.t('Restore of {0} is not possible: {1}', target, outcome.error || vscode.l10n.t('unknown error')) };
}

function nothingDecision(outcome: Outcome<'nothingToRestore'>, target: string): Confirmation {
    if (outcome.mode !== 'code') {
        return { kind: 'proceed' }; // the files match, but the conversation still moves
    }
    const reason = outcome.reason;
    return {
        kind: 'nothing',
        message: reason ? vscode.l10n.t('Nothing to restore: the workspace already matches {0} ({1}).', target, reason) : vscode.l10n.t('Nothing to restore: the workspace already matches {0}.', target),
    };
}

/** "1 file overwritten, 2 deleted": the plan's counts as words (zero counts left out). */
function countWords(c: PlanCounts): string {
    return [
        c.overwrite > 0 ? vscode.l10n.t('{0} overwritten', fileCount(c.overwrite)) : '',
        c.delete > 0 ? vscode.l10n.t('{0} deleted', c.delete) : '',
        c.create > 0 ? vscode.l10n.t('{0} created', c.create) : '',
        c.rename > 0 ? vscode.l10n.t('{0} renamed', c.rename) : '',
        c.chmod > 0 ? vscode.l10n.t('{0} with changed permissions', c.chmod) : '',
    ]
        .filter(p => p !== '')
        .join(', ');
}

/** Something is overwritten, deleted, renamed or re-permissioned: ask first; only creations: go. */
function planDecision(plan: RestorePlan, mode: RestoreMode, target: string): Confirmation {
    const c = plan.counts;
    if (c.overwrite + c.delete + c.rename + c.chmod === 0) {
        return { kind: 'proceed' };
    }
    return {
        kind: 'confirm',
        message: vscode.l10n.t('Restore {0} to {1}? {2}.', modeLabel(mode), target, countWords(c)),
        detail: `${listFiles(plan.files)}\n\n${vscode.l10n.t('The restore is itself a checkpoint: you can undo it.')}`,
    };
}

/** Decide from the server's dry-run outcome (kind `preview`, or the older `applied`/`conflict`
 * dry runs), exactly as it is: its conflicts (unsaved buffers included) are the dialog's. */
export function decide(outcome: RestoreOutcome, target: string): Confirmation {
    if (outcome.kind === 'failed') {
        return failedDecision(outcome, target);
    }
    // Conflicts are counted from the plan, whatever the outcome kind: an unsaved buffer is a
    // conflict even when the files on disk would restore cleanly.
    const files = outcome.plan?.files ?? [];
    if (files.some(f => f.action === 'conflict')) {
        return conflictDecision(files, target);
    }
    if (outcome.kind === 'nothingToRestore') {
        return nothingDecision(outcome, target);
    }
    const plan = outcome.plan;
    return plan === null || outcome.mode === 'conversation' ? { kind: 'proceed' } : planDecision(plan, outcome.mode, target);
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
): RestoreParams {
    const base: RestoreParams = { ...params, dryRun: false };
    switch (choice) {
        case undefined:
            return base;
        case 'overwrite':
            return { ...base, force: true };
        case 'skip':
            // Everything else is restored; the server finds the conflicts again in its real run
            // (a buffer that became dirty after the preview included) and names what it skipped.
            return { ...base, skipConflicts: true };
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
function skippedFiles(outcome: RestoreOutcome): string[] {
    const fromFiles = outcome.files.filter(f => f.status === 'skipped').map(f => f.path);
    return [...new Set([...outcome.skipped, ...fromFiles])];
}

function skippedNote(outcome: RestoreOutcome): string {
    const skipped = skippedFiles(outcome);
    if (skipped.length === 0) {
        return '';
    }
    const why = new Map<string, string | null>(outcome.files.map(f => [f.path, f.detail]));
    const listed = skipped.slice(0, MAX_LISTED).map(p => {
        const detail = why.get(p);
        return detail ? `${shownName(p)} (${detail})` : shownName(p);
    });
    const more = skipped.length > MAX_LISTED ? `, ${vscode.l10n.t('… {0} more', skipped.length - MAX_LISTED)}` : '';
    return vscode.l10n.t(' Skipped, left as they are: {0}.', `${listed.join(', ')}${more}`);
}

function appliedReport(outcome: Outcome<'applied'>, target: string, previousHead: string | undefined): Report {
    const restored = outcome.files.filter(f => f.status === 'restored' || f.status === 'merged').length;
    const message =
        outcome.mode === 'conversation'
            ? vscode.l10n.t('Restored {0} to {1}.', modeLabel(outcome.mode), target)
            : `${vscode.l10n.t('Restored {0} to {1} ({2}).', modeLabel(outcome.mode), target, fileCount(restored))}${skippedNote(outcome)}`;
    return { severity: 'info', message, undoTarget: outcome.checkpoint?.parent ?? previousHead };
}

function nothingReport(outcome: Outcome<'nothingToRestore'>, target: string, previousHead: string | undefined, conversationMoved: boolean): Report {
    if (!conversationMoved) {
        return { severity: 'info', message: `${vscode.l10n.t('Nothing to restore: already at {0}.', target)}${skippedNote(outcome)}`, undoTarget: undefined };
    }
    // Only the conversation moved. For a conversation-only restore the files were simply not
    // looked at; they may well differ from the checkpoint.
    const files = outcome.mode === 'conversation' ? vscode.l10n.t('files were left as they are') : vscode.l10n.t('files already matched');
    return { severity: 'info', message: vscode.l10n.t('Restored {0} to {1} ({2}).', modeLabel(outcome.mode), target, files), undoTarget: previousHead };
}

function conflictReport(outcome: Outcome<'conflict'>): Report {
    const conflicting = outcome.files.filter(f => f.status === 'conflict');
    const unsaved = conflicting.filter(f => (f.detail ?? '').includes('unsaved')).length;
    const what = [
        unsaved > 0 ? vscode.l10n.t('{0} with {1}', fileCount(unsaved), UNSAVED) : '',
        conflicting.length - unsaved > 0 ? vscode.l10n.t('{0} changed outside the agent', fileCount(conflicting.length - unsaved)) : '',
    ].filter(p => p !== '');
    const names = conflicting.map(f => shownName(f.path)).slice(0, MAX_LISTED).join(', ');
    return { severity: 'warning', message: vscode.l10n.t('Not restored: {0} ({1}). Nothing was changed.', both(what) || vscode.l10n.t('conflicting files'), names), undoTarget: undefined };
}

function failedReport(outcome: Outcome<'failed'>): Report {
    const message = outcome.rolledBack
        ? vscode.l10n.t('Restore failed: {0} (the workspace is unchanged)', outcome.error)
        : vscode.l10n.t('Restore failed: {0} (the workspace may be partly restored; see the log)', outcome.error);
    return { severity: 'error', message, undoTarget: undefined };
}

/** What to tell the user after the real restore, from the server's outcome. */
export function report(outcome: RestoreOutcome, target: string, previousHead: string | undefined, conversationMoved = false): Report {
    switch (outcome.kind) {
        case 'applied':
            return appliedReport(outcome, target, previousHead);
        case 'nothingToRestore':
            return nothingReport(outcome, target, previousHead, conversationMoved);
        case 'conflict':
            return conflictReport(outcome);
        case 'failed':
            return failedReport(outcome);
        case 'preview':
            return { severity: 'info', message: vscode.l10n.t('Nothing was restored (preview of {0} only).', target), undoTarget: undefined };
    }
}
