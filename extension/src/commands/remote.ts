/**
 * Remote sync commands: "Push to remote", "Open a remote session…" (a quick pick of
 * `retrace/remote/sessions`; the server imports the session, the timeline focuses it) and
 * "Set remote credentials". The server does the work; these only ask and report.
 */
import * as vscode from 'vscode';
import { COMMANDS, VIEW_TIMELINE } from '../constants';
import type { Ctx } from '../ctx';
import { METHODS, type OpenReport, type PushReport, type Rpc } from '../client/protocol';
import { errorMessage, log } from '../logging';
import { formatBytes } from '../views/models/statusModel';
import { remoteSessionPicks } from '../views/models/remoteModel';
import type { TimelineProvider } from '../views/providers/timeline/provider';
import { localCommand, serverCommand, type Registration } from './registry';
import { setRemoteCredentials } from './remoteCredentials';

/** One line for a finished push. */
export function pushSummary(r: PushReport): string {
    if (r.upToDate) {
        return vscode.l10n.t('Retrace: {0} is up to date.', r.remote);
    }
    return vscode.l10n.t('Retrace: pushed to {0}: {1} journal segment(s), {2} file version(s) in {3} pack(s), {4}.', r.remote, r.segments, r.blobs, r.packs, formatBytes(r.bytes));
}

export async function pushToRemote(rpc: Rpc): Promise<PushReport | undefined> {
    try {
        const { report } = await vscode.window.withProgress(
            { location: vscode.ProgressLocation.Window, title: vscode.l10n.t('Retrace: pushing to the remote…') },
            () => rpc.request(METHODS.remotePush, {}),
        );
        void vscode.window.showInformationMessage(pushSummary(report));
        return report;
    } catch (err) {
        void vscode.window.showErrorMessage(vscode.l10n.t('Retrace: {0}', errorMessage(err)));
        return undefined;
    }
}

/** Import `sessionId` (from `storeId`) and show it in the timeline. */
export async function openRemoteSession(rpc: Rpc, timeline: TimelineProvider, sessionId: string, storeId: string | null): Promise<OpenReport | undefined> {
    try {
        const { report } = await vscode.window.withProgress(
            { location: vscode.ProgressLocation.Notification, title: vscode.l10n.t('Retrace: opening the remote session…') },
            () => rpc.request(METHODS.remoteOpen, { sessionId, storeId }),
        );
        log.info(`opened remote session ${report.sessionId} from store ${report.storeId}: ${report.checkpoints} checkpoint(s)`);
        if (report.skipped.length > 0) {
            // Damaged or foreign objects the server refused (an earlier session, a pack index).
            for (const line of report.skipped) log.warn(`remote open left out: ${line}`);
            void vscode.window.showWarningMessage(vscode.l10n.t('Retrace: {0} damaged object(s) in the remote were left out: {1}', report.skipped.length, report.skipped[0] ?? ''));
        }
        timeline.activeSessionId = report.sessionId;
        timeline.scheduleRefresh();
        await vscode.commands.executeCommand(`${VIEW_TIMELINE}.focus`);
        return report;
    } catch (err) {
        void vscode.window.showErrorMessage(vscode.l10n.t('Retrace: {0}', errorMessage(err)));
        return undefined;
    }
}

export async function pickRemoteSession(rpc: Rpc, timeline: TimelineProvider): Promise<OpenReport | undefined> {
    let sessions;
    try {
        sessions = (await rpc.request(METHODS.remoteSessions, {})).sessions;
    } catch (err) {
        void vscode.window.showErrorMessage(vscode.l10n.t('Retrace: {0}', errorMessage(err)));
        return undefined;
    }
    if (sessions.length === 0) {
        void vscode.window.showInformationMessage(vscode.l10n.t('Retrace: the remote has no sessions for this workspace yet.'));
        return undefined;
    }
    const pick = await vscode.window.showQuickPick(remoteSessionPicks(sessions, Date.now()), {
        title: vscode.l10n.t('Open a remote session'),
        placeHolder: vscode.l10n.t('Workspace — machine · last change · size'),
        matchOnDescription: true,
        matchOnDetail: true,
    });
    log.info(`open a remote session: ${sessions.length} listed, ${pick === undefined ? 'none picked' : `picked ${pick.sessionId}`}`);
    return pick === undefined ? undefined : openRemoteSession(rpc, timeline, pick.sessionId, pick.storeId);
}

/** `refreshSessions`: the Remote Sessions view lists again (after an open, on its refresh button). */
export function remoteCommands(ctx: Ctx, timeline: TimelineProvider, refreshSessions: () => void): Registration[] {
    return [
        serverCommand(COMMANDS.remotePush, rpc => () => pushToRemote(rpc)),
        serverCommand(COMMANDS.remoteOpen, rpc => async (arg?: unknown) => {
            const given = typeof arg === 'object' && arg !== null ? (arg as { sessionId?: unknown; storeId?: unknown }) : undefined;
            const opened =
                given !== undefined && typeof given.sessionId === 'string'
                    ? await openRemoteSession(rpc, timeline, given.sessionId, typeof given.storeId === 'string' ? given.storeId : null)
                    : await pickRemoteSession(rpc, timeline);
            refreshSessions();
            return opened;
        }),
        serverCommand(COMMANDS.remoteSessionsRefresh, () => () => refreshSessions()),
        localCommand(COMMANDS.remoteSetCredentials, () => setRemoteCredentials(ctx)),
    ];
}
