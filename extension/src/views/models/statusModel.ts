/**
 * The status bar item's words and state, pure (only `vscode.l10n`; table-tested): the store
 * figures ("12 cp · 2.0 KB"), the agent's activity as the events and the server's session list say
 * it (`AgentActivityModel`), and the look of the item for a server state and an activity
 * (`statusLook`). `providers/statusItem.ts` owns the `StatusBarItem` and renders what these say.
 */
import * as vscode from 'vscode';
import type { AgentEvent } from '../../client/protocol';
import type { ServerState } from '../../client/supervisor';

export function formatBytes(bytes: number): string {
    const units = ['B', 'KB', 'MB', 'GB', 'TB'];
    let value = bytes;
    let unit = 0;
    while (value >= 1024 && unit < units.length - 1) {
        value /= 1024;
        unit++;
    }
    return `${unit === 0 ? value : value.toFixed(1)} ${units[unit] ?? 'B'}`;
}

/** "12 cp · 2.0 KB", after the folder's name when the workspace has several. */
export function storeStats(checkpoints: number, bytes: number, folderName: string | undefined): string {
    const figures = `${checkpoints} cp · ${formatBytes(bytes)}`;
    return folderName === undefined ? figures : `${folderName}: ${figures}`;
}

export type AgentActivity = 'idle' | 'running' | 'error';

/** What an agent event does to the activity: the kinds not listed leave it as it is. */
type ActivityStep = (m: AgentActivityModel, e: AgentEvent) => void;

const STEPS: Partial<Record<AgentEvent['kind'], ActivityStep>> = {
    turnStarted: (m, e) => {
        if (e.kind === 'turnStarted') {
            m.turnStarted(e.sessionId);
        }
    },
    turnFinished: (m, e) => {
        if (e.kind === 'turnFinished') {
            m.turnFinished(e.sessionId, e.stopReason === 'error');
        }
    },
    error: (m, e) => {
        if (e.kind === 'error' && !e.retrying) {
            m.failed(e.message);
        }
    },
};

/** Another agent's turn (recorded through its hooks) is not Retrace's activity. */
function otherAgents(e: AgentEvent): boolean {
    return (e.kind === 'turnStarted' || e.kind === 'turnFinished') && e.agent !== undefined && e.agent !== null;
}

/**
 * Which of this agent's sessions run a turn, and so whether the agent is idle, running or in error.
 * Events that arrive while a `session/list` request is in flight are newer than its answer: they
 * are remembered from `beginSync` and win over it in `endSync`.
 */
export class AgentActivityModel {
    private readonly running = new Set<string>();
    private readonly changedSinceSync = new Map<string, boolean>();
    activity: AgentActivity = 'idle';
    lastError = '';

    get anyRunning(): boolean {
        return this.running.size > 0;
    }

    /** Apply one event; true when the activity may have changed (render, update the context key). */
    apply(e: AgentEvent): boolean {
        const step = otherAgents(e) ? undefined : STEPS[e.kind];
        step?.(this, e);
        return step !== undefined;
    }

    turnStarted(sessionId: string): void {
        this.changedSinceSync.set(sessionId, true);
        this.running.add(sessionId);
        this.activity = 'running';
    }

    turnFinished(sessionId: string, inError: boolean): void {
        this.changedSinceSync.set(sessionId, false);
        this.running.delete(sessionId);
        this.activity = inError ? 'error' : this.anyRunning ? 'running' : 'idle';
    }

    failed(message: string): void {
        this.lastError = message;
        this.activity = 'error';
    }

    /** A (re)connected or dead server: what ran before is not known to run any more. */
    reset(): void {
        this.running.clear();
        this.activity = 'idle';
    }

    beginSync(): void {
        this.changedSinceSync.clear();
    }

    /** The server's list of running sessions, corrected by the events seen since `beginSync`. */
    endSync(runningIds: readonly string[]): void {
        this.running.clear();
        for (const id of runningIds) {
            this.running.add(id);
        }
        for (const [id, running] of this.changedSinceSync) {
            if (running) {
                this.running.add(id);
            } else {
                this.running.delete(id);
            }
        }
        this.activity = this.anyRunning ? 'running' : 'idle';
    }
}

export interface StatusLook {
    readonly icon: string;
    readonly label: string;
    /** The theme colour id of the item's background, if any. */
    readonly background: string | undefined;
}

const ACTIVITY_LOOK: Record<AgentActivity, () => StatusLook> = {
    running: () => ({ icon: '$(sync~spin)', label: vscode.l10n.t('running'), background: undefined }),
    error: () => ({ icon: '$(warning)', label: vscode.l10n.t('error'), background: 'statusBarItem.warningBackground' }),
    idle: () => ({ icon: '$(history)', label: vscode.l10n.t('idle'), background: undefined }),
};

/** The item's icon, word and background for the server's state (`started`: has Retrace been opened). */
export function statusLook(server: ServerState['kind'], started: boolean, activity: AgentActivity): StatusLook {
    if (server === 'failed') {
        return { icon: '$(error)', label: vscode.l10n.t('server not running'), background: 'statusBarItem.errorBackground' };
    }
    if (server === 'stopped' && !started) {
        // Activation is lazy: nothing runs until Retrace is opened (clicking reveals it).
        return { icon: '$(history)', label: vscode.l10n.t('not started'), background: undefined };
    }
    if (server !== 'running') {
        return { icon: '$(loading~spin)', label: vscode.l10n.t('starting'), background: undefined };
    }
    return ACTIVITY_LOOK[activity]();
}
