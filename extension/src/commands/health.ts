/**
 * Health actions the server asks for, and the restore reason:
 * - after a restore the server says may be asked about (`askReason`), a "Why?" action on the
 *   restore's own notification opens the reasons as a quick pick; the one chosen is recorded by
 *   the server (`retrace/restore/reason`) with the restore's checkpoint; nothing takes focus
 *   unless the user clicks;
 * - a storage alert (`retrace/storage/alert`: 80 % / 90 % of the retention budget) as a
 *   notification with the fixes: collect garbage now (`retrace/store/gc`) or open the retention
 *   settings.
 * The Health panel's banner offers the same two fixes (`runGarbageCollection`,
 * `openRetentionSettings`).
 * The tables and the key a reason names are pure (unit-tested).
 */
import * as vscode from 'vscode';
import { openRetentionSettings, runGarbageCollection } from '../views/providers/storageFixes';
import { METHODS, type RestoreOutcome, type Rpc, type StorageAlert } from '../client/protocol';
import { log } from '../logging';
import { prompter } from '../ui';

export type RestoreReason = 'wrongApproach' | 'brokeTests' | 'unwantedChanges' | 'offTrack' | 'other';
export type RestoreMode = 'code' | 'conversation' | 'both';

/** The reason buttons, in the order they are shown. */
export const REASONS: readonly { readonly label: string; readonly reason: RestoreReason }[] = [
    { label: vscode.l10n.t('Wrong approach'), reason: 'wrongApproach' },
    { label: vscode.l10n.t('Broke tests'), reason: 'brokeTests' },
    { label: vscode.l10n.t('Unwanted file changes'), reason: 'unwantedChanges' },
    { label: vscode.l10n.t('Conversation went off track'), reason: 'offTrack' },
    { label: vscode.l10n.t('Other'), reason: 'other' },
];

export const REASON_QUESTION = vscode.l10n.t('Why did you restore? (optional, helps the restore statistics)');

export function reasonOf(label: string | undefined): RestoreReason | undefined {
    return REASONS.find(r => r.label === label)?.reason;
}

/** The checkpoint a reason names: the restore's own checkpoint, else its target (a
 * conversation-only restore makes no checkpoint). */
export function reasonKey(targetId: string, outcome: RestoreOutcome): string {
    return outcome.kind === 'applied' && outcome.checkpoint ? outcome.checkpoint.id : targetId;
}

/** The action on a restore's own notification that opens the reasons (when the server says
 * `askReason`: a code restore that changed files, rarely; never after an undo or a
 * conversation-only restore). Short, so it is never cut in a normal window. */
export const WHY = vscode.l10n.t('Why?');

/** The reasons as a quick pick the user opened with "Why?"; records the one chosen (Escape or a
 * click elsewhere records nothing). Never blocks or fails the restore. */
export async function askRestoreReason(rpc: Rpc, targetId: string, outcome: RestoreOutcome, mode: RestoreMode): Promise<void> {
    const ui = prompter();
    const pick = ui.choose === undefined ? undefined : await ui.choose(REASON_QUESTION, REASONS.map(r => r.label));
    const reason = reasonOf(pick);
    if (reason === undefined) {
        return;
    }
    try {
        await rpc.request(METHODS.restoreReason, { checkpointId: reasonKey(targetId, outcome), reason, mode });
        log.info(`restore reason recorded: ${reason}`);
    } catch (err) {
        log.warn(`restore reason not recorded: ${err instanceof Error ? err.message : String(err)}`);
    }
}

export const RUN_GC = vscode.l10n.t('Collect garbage now');
export const OPEN_RETENTION = vscode.l10n.t('Retention settings');

/** How an alert is shown: its severity and buttons (pure). */
export function alertLook(alert: StorageAlert): { severity: 'warning' | 'error'; message: string; buttons: readonly string[] } {
    return { severity: alert.level === 'urgent' ? 'error' : 'warning', message: alert.message, buttons: [RUN_GC, OPEN_RETENTION] };
}

export async function showStorageAlert(alert: StorageAlert): Promise<void> {
    const look = alertLook(alert);
    const pick = await prompter().notify(look.severity, look.message, look.buttons);
    if (pick === RUN_GC) {
        await runGarbageCollection();
    } else if (pick === OPEN_RETENTION) {
        await openRetentionSettings();
    }
}

function mib(bytes: number): string {
    return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

export async function collectGarbage(rpc: Rpc): Promise<void> {
    const result = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: vscode.l10n.t('Retrace: collecting garbage…') },
        () => rpc.request(METHODS.storeGc, {}),
    );
    const r = result.report;
    void prompter().notify(
        'info',
        vscode.l10n.t('Retrace: garbage collected: {0} checkpoint(s) dropped by retention, {1} blob(s) removed, {2} freed.', r.checkpointsDropped, r.blobsRemoved, mib(r.bytesFreed)),
        [],
    );
}
