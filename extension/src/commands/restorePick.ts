/**
 * "Retrace: Restore to Checkpoint…": the quick pick of checkpoints (bookmarks first, in the order
 * the server gives them, then the rest newest first: label, time, +/- line stats from the timeline
 * data), then the restore mode. The restore itself is the
 * existing flow (dry run, confirmation, report with undo). Pure builders here; the command wires
 * them to `showQuickPick` (commands/index.ts).
 */
import * as vscode from 'vscode';
import type { Bookmark, Checkpoint, TimelineGetResult } from '../client/protocol';
import { checkpointLabel } from '../labels';
import { relativeTime } from '../views/models/timelineModel';
import type { RestoreMode } from './restoreDecision';

export interface CheckpointPickItem {
    readonly label: string;
    readonly description: string;
    readonly detail: string;
    readonly checkpointId: string;
}

export interface ModePickItem {
    readonly label: string;
    readonly detail: string;
    readonly mode: RestoreMode;
}

/** "+12 −3 · 2 files" (binary files counted, lines not); "no file changes" when none. */
export function lineStats(cp: Checkpoint): string {
    if (cp.files.length === 0) {
        return vscode.l10n.t('no file changes');
    }
    const added = cp.files.reduce((n, f) => n + f.additions, 0);
    const removed = cp.files.reduce((n, f) => n + f.deletions, 0);
    const approx = cp.files.some(f => f.approximate) ? '~' : '';
    const files = cp.files.length === 1 ? vscode.l10n.t('1 file') : vscode.l10n.t('{0} files', cp.files.length);
    if (cp.files.some(f => f.counted === false)) {
        return vscode.l10n.t('{0} · lines not counted yet', files);
    }
    return `${approx}+${added} −${removed} · ${files}`;
}

/**
 * Bookmarks first (named, `$(bookmark)`, in the server's order), then the rest newest first; the
 * head is marked "you are here", checkpoints that cannot be restored are left out. Each is named by its timeline row's title (`titleOf`: the server's words, "Restored code to
 * ‘edit_file: a.py’"), else by its label, never by a raw id.
 */
export function checkpointPicks(timeline: TimelineGetResult, now: number, titleOf: (id: string) => string | undefined = () => undefined): CheckpointPickItem[] {
    const byId = new Map(timeline.checkpoints.map(cp => [cp.id, cp]));
    // Bookmarks first, in the server's order (none from a server that does not send them); then
    // every other checkpoint, newest first.
    const bookmarks = (timeline.bookmarks as readonly Bookmark[] | undefined) ?? [];
    const named = new Map(bookmarks.map(b => [b.checkpointId, b.name]));
    const marked = bookmarks.flatMap(b => byId.get(b.checkpointId) ?? []);
    const rest = [...timeline.checkpoints].reverse().filter(cp => !named.has(cp.id));
    return [...marked, ...rest]
        .filter(cp => cp.recoverability !== 'none')
        .map(cp => {
            const when = relativeTime(cp.createdAt, now);
            const current = cp.id === timeline.head ? vscode.l10n.t(' · ● you are here') : '';
            const title = titleOf(cp.id) ?? checkpointLabel(cp);
            const name = named.get(cp.id);
            return {
                label: name === undefined ? title : `$(bookmark) ${name}`,
                description: name === undefined || name === title ? `${when}${current}` : `${when}${current} · ${title}`,
                detail: lineStats(cp),
                checkpointId: cp.id,
            };
        });
}

export const MODE_PICKS: readonly ModePickItem[] = [
    { label: vscode.l10n.t('Restore code'), detail: vscode.l10n.t('Files go back to this checkpoint; the conversation stays.'), mode: 'code' },
    { label: vscode.l10n.t('Restore conversation'), detail: vscode.l10n.t('The conversation goes back; files stay as they are.'), mode: 'conversation' },
    { label: vscode.l10n.t('Restore both'), detail: vscode.l10n.t('Files and conversation go back to this checkpoint.'), mode: 'both' },
];

/**
 * The modes to pick from: every mode, or — when the server says the checkpoint's conversation
 * cannot be restored (another agent's session: `StoryRow.conversationRestore`) — code only, with
 * the server's reason.
 */
export function modePicks(codeOnlyReason: string | undefined): readonly ModePickItem[] {
    if (codeOnlyReason === undefined) {
        return MODE_PICKS;
    }
    return [{ label: vscode.l10n.t('Restore code'), detail: vscode.l10n.t('Files go back to this checkpoint. {0}.', codeOnlyReason), mode: 'code' }];
}
