/**
 * The remote sync status bar item: "$(cloud-upload) 3/10" while pushing, "$(cloud) synced 2 min
 * ago", "$(cloud) remote unreachable". Fed by `retrace/remote/progress` and, at each server start,
 * `retrace/remote/status`; hidden when no remote is configured. Clicking pushes now. A pop-up
 * only when the user must act (credentials refused before any push worked), once per server run.
 */
import * as vscode from 'vscode';
import { COMMANDS } from '../../constants';
import type { Ctx } from '../../ctx';
import { METHODS, type RemoteStatusResult, type RemoteSyncView } from '../../client/protocol';
import { errorMessage, log } from '../../logging';
import { remoteItemView } from '../models/remoteModel';

const RENDER_EVERY_MS = 30_000;

export class RemoteItem implements vscode.Disposable {
    private readonly item = vscode.window.createStatusBarItem('retrace.remote', vscode.StatusBarAlignment.Left, 9);
    private sync: RemoteSyncView | undefined;
    private status: RemoteStatusResult | undefined;
    private warned = false;
    private readonly timer: NodeJS.Timeout;
    private readonly disposables: vscode.Disposable[] = [];

    constructor(private readonly ctx: Ctx) {
        this.item.name = vscode.l10n.t('Retrace remote');
        this.item.command = COMMANDS.remotePush;
        this.disposables.push(
            this.item,
            ctx.onRemoteProgress(view => {
                this.sync = view;
                this.render();
            }),
            ctx.onDidChangeState(state => {
                this.sync = undefined;
                this.status = undefined;
                this.warned = false;
                if (state.kind === 'running') {
                    void this.refresh();
                }
                this.render();
            }),
        );
        this.timer = setInterval(() => this.render(), RENDER_EVERY_MS); // "synced 2 min ago" ages
        this.render();
    }

    get text(): string | undefined {
        return this.item.text;
    }

    async refresh(): Promise<void> {
        const rpc = this.ctx.rpc;
        if (rpc === undefined) {
            return;
        }
        try {
            this.status = await rpc.request(METHODS.remoteStatus, {});
            this.sync ??= this.status.sync;
        } catch (err) {
            log.warn(`remote status: ${errorMessage(err)}`);
        }
        this.render();
    }

    private render(): void {
        const view = remoteItemView(this.sync, this.status, Date.now());
        if (view.text === undefined) {
            this.item.hide();
            return;
        }
        this.item.text = view.text;
        this.item.tooltip = view.tooltip;
        this.item.show();
        if (view.attention && !this.warned) {
            this.warned = true;
            const set = vscode.l10n.t('Set remote credentials');
            void vscode.window
                .showWarningMessage(vscode.l10n.t('Retrace: {0}', view.tooltip), set)
                .then(pick => pick === set && vscode.commands.executeCommand(COMMANDS.remoteSetCredentials));
        }
    }

    dispose(): void {
        clearInterval(this.timer);
        vscode.Disposable.from(...this.disposables).dispose();
    }
}
