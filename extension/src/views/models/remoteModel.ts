/**
 * Pure view models of remote sync (table-tested): the status bar item's text from the server's
 * `retrace/remote/progress` / `retrace/remote/status`, the quick pick of remote sessions, and
 * the timeline's "Remote sessions" rows. The server decides everything; this only words it.
 */
import * as vscode from 'vscode';
import type { RemoteSession, RemoteStatusResult, RemoteSyncView } from '../../client/protocol';
import { formatBytes } from './statusModel';

export interface RemoteItemView {
    /** `undefined`: hide the item (no remote configured). */
    readonly text: string | undefined;
    readonly tooltip: string;
    /** The user must act (a pop-up is allowed): only a remote that has never worked in this run. */
    readonly attention: boolean;
}

/** "just now", "2 min ago", "3 h ago", "4 d ago" (`iso` before `nowMs`). */
export function ago(iso: string | null | undefined, nowMs: number): string | undefined {
    if (iso === null || iso === undefined) {
        return undefined;
    }
    const then = Date.parse(iso);
    if (Number.isNaN(then)) {
        return undefined;
    }
    const s = Math.max(0, Math.round((nowMs - then) / 1000));
    if (s < 60) {
        return vscode.l10n.t('just now');
    }
    const m = Math.floor(s / 60);
    if (m < 60) {
        return vscode.l10n.t('{0} min ago', m);
    }
    const h = Math.floor(m / 60);
    return h < 48 ? vscode.l10n.t('{0} h ago', h) : vscode.l10n.t('{0} d ago', Math.floor(h / 24));
}

/** What every state's wording draws on. */
interface RemoteFacts {
    readonly sync: RemoteSyncView | undefined;
    readonly status: RemoteStatusResult | undefined;
    readonly remote: string;
    /** When the last push succeeded, in words; undefined: never. */
    readonly pushedAgo: string | undefined;
}

/** The status bar item for the scheduler's state (`sync`) and the remote's record (`status`). */
export function remoteItemView(sync: RemoteSyncView | undefined, status: RemoteStatusResult | undefined, nowMs: number): RemoteItemView {
    const state = sync?.state ?? (status?.configured === true ? 'idle' : 'off');
    const remote = sync?.remote ?? status?.status?.remote ?? 'remote';
    return STATE_VIEWS[state]({ sync, status, remote, pushedAgo: ago(lastPush(state, sync, status), nowMs) });
}

/** The remote's record of the last push, else the scheduler's time of a state that is "synced". */
function lastPush(state: RemoteSyncView['state'], sync: RemoteSyncView | undefined, status: RemoteStatusResult | undefined): string | null | undefined {
    return status?.status?.lastPush ?? (state === 'synced' ? sync?.at : null);
}

const STATE_VIEWS: Readonly<Record<RemoteSyncView['state'], (f: RemoteFacts) => RemoteItemView>> = {
    off: () => ({ text: undefined, tooltip: vscode.l10n.t('No remote configured (retrace.remote.url)'), attention: false }),
    pushing: pushingView,
    error: errorView,
    synced: syncedView,
    idle: syncedView,
};

function pushingView({ sync, remote }: RemoteFacts): RemoteItemView {
    const p = sync?.progress ?? null;
    const count = p !== null && p.total > 0 ? ` ${p.done}/${p.total}` : '';
    const bytes = p !== null && p.bytesTotal > 0 ? vscode.l10n.t(' ({0} of {1})', formatBytes(p.bytesDone), formatBytes(p.bytesTotal)) : '';
    return { text: `$(cloud-upload)${count}`, tooltip: vscode.l10n.t('Retrace: pushing to {0}', `${remote}${p ? `: ${p.phase}` : ''}${bytes}`), attention: false };
}

/** Words that say the remote refused the credentials, not that it was out of reach. */
const CREDENTIAL_TROUBLE = /credential|access denied|forbidden|signature|key/i;

function errorView({ sync, status, remote, pushedAgo }: RemoteFacts): RemoteItemView {
    const error = sync?.lastError ?? status?.status?.lastError ?? vscode.l10n.t('unknown error');
    const retry = sync?.retryInSeconds ?? null;
    const when = retry !== null ? vscode.l10n.t(' Retrying in {0} s.', Math.max(1, Math.round(retry))) : '';
    const last = pushedAgo !== undefined ? vscode.l10n.t(' Last synced {0}.', pushedAgo) : vscode.l10n.t(' Never synced.');
    return {
        text: `$(cloud) ${vscode.l10n.t('remote unreachable')}`,
        tooltip: vscode.l10n.t('Retrace: cannot push to {0}: {1}.{2}{3} Your checkpoints are safe locally. Click to push now.', remote, error, when, last),
        attention: pushedAgo === undefined && CREDENTIAL_TROUBLE.test(error),
    };
}

function syncedView({ sync, status, remote, pushedAgo }: RemoteFacts): RemoteItemView {
    const pending = sync?.pendingCheckpoints ?? status?.status?.pendingCheckpoints ?? 0;
    const text = pushedAgo !== undefined ? `$(cloud) ${vscode.l10n.t('synced {0}', pushedAgo)}` : `$(cloud) ${vscode.l10n.t('not synced yet')}`;
    const more = pending > 0 ? vscode.l10n.t(' {0} checkpoint(s) since.', pending) : '';
    return { text, tooltip: vscode.l10n.t('Retrace: remote {0}.{1} Click to push now.', remote, more), attention: false };
}

export interface RemoteSessionPick {
    readonly label: string;
    readonly description: string;
    readonly detail: string;
    readonly sessionId: string;
    readonly storeId: string;
}

/** Quick pick entries: not yet opened first (newest first, as the server sends them). */
export function remoteSessionPicks(sessions: readonly RemoteSession[], nowMs: number): RemoteSessionPick[] {
    const ordered = [...sessions.filter(s => !s.openedLocally), ...sessions.filter(s => s.openedLocally)];
    return ordered.map(s => ({
        label: `${s.workspaceName} — ${s.machine}`,
        description: [ago(s.lastAt, nowMs) ?? vscode.l10n.t('time unknown'), formatBytes(s.bytes), s.openedLocally ? vscode.l10n.t('opened here') : ''].filter(x => x !== '').join(' · '),
        detail: vscode.l10n.t('{0} · {1} · {2} segment(s)', s.sessionId, s.workspacePath, s.segments),
        sessionId: s.sessionId,
        storeId: s.storeId,
    }));
}

/** The timeline group's rows: remote sessions this store has not opened (newest first). */
export function remoteSessionRows(sessions: readonly RemoteSession[], nowMs: number): { label: string; description: string; tooltip: string; session: RemoteSession }[] {
    return sessions
        .filter(s => !s.openedLocally)
        .map(s => ({
            label: vscode.l10n.t('{0} on {1}', s.workspaceName, s.machine),
            description: `${ago(s.lastAt, nowMs) ?? ''} · ${formatBytes(s.bytes)}`.replace(/^ · /, ''),
            tooltip: vscode.l10n.t('Remote session {0} from {1} ({2}). Click to open it here (its timeline first; file contents are fetched when needed).', s.sessionId, s.machine, s.workspacePath),
            session: s,
        }));
}
