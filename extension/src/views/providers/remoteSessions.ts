/**
 * The "Remote Sessions" view (in the Retrace container, under the timeline): sessions in the
 * remote bucket that this store has not opened (`retrace/remote/sessions`); a click opens one
 * (the server imports it) and the timeline focuses it. Shown only while a remote is configured
 * (context key `retrace.remoteConfigured`). Rows come from `remoteSessionRows` (pure).
 */
import * as vscode from 'vscode';
import { COMMANDS, CONTEXT_REMOTE_CONFIGURED, VIEW_REMOTE_SESSIONS } from '../../constants';
import type { Ctx } from '../../ctx';
import { METHODS, type RemoteSession } from '../../client/protocol';
import { errorMessage, log } from '../../logging';
import { remoteSessionRows } from '../models/remoteModel';

export interface RemoteSessionNode {
    readonly label: string;
    readonly description: string;
    readonly tooltip: string;
    readonly session: RemoteSession;
}

export class RemoteSessionsProvider implements vscode.TreeDataProvider<RemoteSessionNode>, vscode.Disposable {
    private readonly changed = new vscode.EventEmitter<RemoteSessionNode | undefined>();
    readonly onDidChangeTreeData = this.changed.event;
    private rows: RemoteSessionNode[] = [];
    private readonly disposables: vscode.Disposable[] = [];
    readonly view: vscode.TreeView<RemoteSessionNode>;

    constructor(private readonly ctx: Ctx) {
        this.view = vscode.window.createTreeView(VIEW_REMOTE_SESSIONS, { treeDataProvider: this });
        this.disposables.push(
            this.view,
            this.changed,
            ctx.onDidChangeState(s => {
                if (s.kind === 'running') {
                    void this.refresh();
                }
            }),
            // A push finished: another machine may have pushed too; an open changes what is listed.
            ctx.onRemoteProgress(v => v.state === 'synced' && void this.refresh()),
        );
    }

    get sessions(): readonly RemoteSessionNode[] {
        return this.rows;
    }

    async refresh(): Promise<void> {
        const rpc = this.ctx.rpc;
        if (rpc === undefined) {
            return;
        }
        try {
            const status = await rpc.request(METHODS.remoteStatus, {});
            await vscode.commands.executeCommand('setContext', CONTEXT_REMOTE_CONFIGURED, status.configured);
            const sessions = status.configured ? (await rpc.request(METHODS.remoteSessions, {})).sessions : [];
            this.rows = remoteSessionRows(sessions, Date.now());
        } catch (err) {
            log.warn(`remote sessions: ${errorMessage(err)}`);
            this.rows = [];
        }
        this.changed.fire(undefined);
    }

    getChildren(element?: RemoteSessionNode): RemoteSessionNode[] {
        return element === undefined ? this.rows : [];
    }

    getTreeItem(node: RemoteSessionNode): vscode.TreeItem {
        const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.None);
        item.id = `remote:${node.session.storeId}:${node.session.sessionId}`;
        item.description = node.description;
        item.tooltip = node.tooltip;
        item.iconPath = new vscode.ThemeIcon('cloud');
        item.contextValue = 'remoteSession';
        // This tree re-renders only on refresh, so the row's arguments stay valid.
        item.command = { command: COMMANDS.remoteOpen, title: vscode.l10n.t('Open Remote Session'), arguments: [{ sessionId: node.session.sessionId, storeId: node.session.storeId }] };
        return item;
    }

    dispose(): void {
        vscode.Disposable.from(...this.disposables).dispose();
    }
}
