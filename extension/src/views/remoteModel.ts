/**
 * Pure view models of remote sync (table-tested): the status bar item's text from the server's
 * `retrace/remote/progress` / `retrace/remote/status`, the quick pick of remote sessions, and
 * the timeline's "Remote sessions" rows. The server decides everything; this only words it.
 */
import type { RemoteSession, RemoteStatusResult, RemoteSyncView } from '../client/protocol';
import { formatBytes } from './statusItem';

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
        return 'just now';
    }
    const m = Math.floor(s / 60);
    if (m < 60) {
        return `${m} min ago`;
    }
    const h = Math.floor(m / 60);
    return h < 48 ? `${h} h ago` : `${Math.floor(h / 24)} d ago`;
}

/** The status bar item for the scheduler's state (`sync`) and the remote's record (`status`). */
export function remoteItemView(sync: RemoteSyncView | undefined, status: RemoteStatusResult | undefined, nowMs: number): RemoteItemView {
    const state = sync?.state ?? (status?.configured === true ? 'idle' : 'off');
    const remote = sync?.remote ?? status?.status?.remote ?? 'remote';
    const lastPush = status?.status?.lastPush ?? (state === 'synced' ? sync?.at : null);
    const pushedAgo = ago(lastPush, nowMs);
    switch (state) {
        case 'off':
            return { text: undefined, tooltip: 'No remote configured (retrace.remote.url)', attention: false };
        case 'pushing': {
            const p = sync?.progress;
            const count = p !== null && p !== undefined && p.total > 0 ? ` ${p.done}/${p.total}` : '';
            const bytes = p !== null && p !== undefined && p.bytesTotal > 0 ? ` (${formatBytes(p.bytesDone)} of ${formatBytes(p.bytesTotal)})` : '';
            return { text: `$(cloud-upload)${count}`, tooltip: `Retrace: pushing to ${remote}${p ? `: ${p.phase}` : ''}${bytes}`, attention: false };
        }
        case 'error': {
            const error = sync?.lastError ?? status?.status?.lastError ?? 'unknown error';
            const retry = sync?.retryInSeconds;
            const when = retry !== null && retry !== undefined ? ` Retrying in ${Math.max(1, Math.round(retry))} s.` : '';
            const last = pushedAgo !== undefined ? ` Last synced ${pushedAgo}.` : ' Never synced.';
            return {
                text: '$(cloud) remote unreachable',
                tooltip: `Retrace: cannot push to ${remote}: ${error}.${when}${last} Your checkpoints are safe locally. Click to push now.`,
                attention: pushedAgo === undefined && /credential|access denied|forbidden|signature|key/i.test(error),
            };
        }
        case 'synced':
        case 'idle': {
            const pending = sync?.pendingCheckpoints ?? status?.status?.pendingCheckpoints ?? 0;
            const text = pushedAgo !== undefined ? `$(cloud) synced ${pushedAgo}` : '$(cloud) not synced yet';
            const more = pending > 0 ? ` ${pending} checkpoint(s) since.` : '';
            return { text, tooltip: `Retrace: remote ${remote}.${more} Click to push now.`, attention: false };
        }
    }
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
        description: [ago(s.lastAt, nowMs) ?? 'time unknown', formatBytes(s.bytes), s.openedLocally ? 'opened here' : ''].filter(x => x !== '').join(' · '),
        detail: `${s.sessionId} · ${s.workspacePath} · ${s.segments} segment(s)`,
        sessionId: s.sessionId,
        storeId: s.storeId,
    }));
}

/** The timeline group's rows: remote sessions this store has not opened (newest first). */
export function remoteSessionRows(sessions: readonly RemoteSession[], nowMs: number): { label: string; description: string; tooltip: string; session: RemoteSession }[] {
    return sessions
        .filter(s => !s.openedLocally)
        .map(s => ({
            label: `${s.workspaceName} on ${s.machine}`,
            description: `${ago(s.lastAt, nowMs) ?? ''} · ${formatBytes(s.bytes)}`.replace(/^ · /, ''),
            tooltip: `Remote session ${s.sessionId} from ${s.machine} (${s.workspacePath}). Click to open it here (its timeline first; file contents are fetched when needed).`,
            session: s,
        }));
}
