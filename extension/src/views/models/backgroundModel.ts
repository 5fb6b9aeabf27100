/**
 * Background commands as the extension shows them (pure: no vscode import, unit-tested): the
 * running tasks kept from `retrace/background/list` and `backgroundTask` agent events, the status
 * bar text, the quick-pick rows of the Stop command, and the question a code restore asks while
 * some run. The server decides everything; this only renders and forwards the user's choice.
 */
import * as vscode from 'vscode';
import type { BackgroundTaskView } from '../../client/protocol';

/** What a restore does with running background commands (the server's `backgroundTasks`). */
export type BackgroundChoice = 'stop' | 'keep';

/** The server's error code for a code restore refused while background commands run. */
export const BACKGROUND_RUNNING_CODE = 'backgroundTasksRunning';

export const STOP_AND_RESTORE = vscode.l10n.t('Stop and Restore');
export const RESTORE_ANYWAY = vscode.l10n.t('Restore Anyway');

export class BackgroundModel {
    private readonly tasks = new Map<string, BackgroundTaskView>();

    /** Replace everything with the server's list (after a (re)connect). */
    reset(tasks: readonly BackgroundTaskView[]): void {
        this.tasks.clear();
        for (const t of tasks) {
            this.update(t);
        }
    }

    /** One task started or ended. */
    update(task: BackgroundTaskView): void {
        if (task.state === 'running') {
            this.tasks.set(task.handle, task);
        } else {
            this.tasks.delete(task.handle);
        }
    }

    get running(): readonly BackgroundTaskView[] {
        return [...this.tasks.values()];
    }
}

function shortCommand(command: string, limit = 40): string {
    const line = command.split(/\s+/).filter(Boolean).join(' ');
    return line.length <= limit ? line : `${line.slice(0, limit - 1)}…`;
}

/** Status bar text; undefined when nothing runs (the item is hidden). */
export function statusText(running: readonly BackgroundTaskView[]): string | undefined {
    if (running.length === 0) {
        return undefined;
    }
    const first = running[0];
    if (running.length === 1 && first !== undefined) {
        return `$(server-process) ${shortCommand(first.command, 30)}`;
    }
    return `$(server-process) ${vscode.l10n.t('{0} background commands', running.length)}`;
}

export function statusTooltip(running: readonly BackgroundTaskView[]): string {
    const lines = running.map(t => `${t.handle} (pid ${t.pid}): ${shortCommand(t.command, 80)}`);
    return `${vscode.l10n.t('Retrace background commands — click to stop one')}\n${lines.join('\n')}`;
}

export interface TaskPick {
    readonly label: string;
    readonly description: string;
    readonly handle: string;
}

export function stopPicks(running: readonly BackgroundTaskView[]): TaskPick[] {
    return running.map(t => ({ label: shortCommand(t.command, 60), description: vscode.l10n.t('{0} · pid {1} · since {2}', t.handle, t.pid, t.startedAt), handle: t.handle }));
}

/** The modal question of a code restore while background commands run. */
export function restoreQuestion(running: readonly BackgroundTaskView[]): { message: string; detail: string; buttons: readonly string[] } {
    const n = running.length;
    const names = running.map(t => shortCommand(t.command)).join(', ');
    const message =
        n === 1
            ? vscode.l10n.t('1 background task is running ({0}): it may overwrite restored files.', names)
            : vscode.l10n.t('{0} background tasks are running ({1}): they may overwrite restored files.', n, names);
    const detail = n === 1 ? vscode.l10n.t('Stop it and restore, restore anyway (it keeps running), or cancel.') : vscode.l10n.t('Stop them and restore, restore anyway (they keep running), or cancel.');
    return { message, detail, buttons: [STOP_AND_RESTORE, RESTORE_ANYWAY] };
}

/** The user's pick as the restore's `backgroundTasks`; undefined: cancel. */
export function choiceOf(pick: string | undefined): BackgroundChoice | undefined {
    return pick === STOP_AND_RESTORE ? 'stop' : pick === RESTORE_ANYWAY ? 'keep' : undefined;
}

/** Whether a request failed because background commands run (the server's error `data.code`). */
export function isBackgroundRefusal(err: unknown): boolean {
    const data = typeof err === 'object' && err !== null ? (err as { data?: unknown }).data : undefined;
    return typeof data === 'object' && data !== null && (data as { code?: unknown }).code === BACKGROUND_RUNNING_CODE;
}
