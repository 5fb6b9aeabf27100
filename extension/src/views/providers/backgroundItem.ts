/**
 * Status bar item of the running background commands (hidden when none run); clicking it runs
 * "Stop a Background Command" (a quick pick, then `retrace/background/stop`). Kept current from
 * `backgroundTask` agent events and, after every (re)connect, `retrace/background/list`.
 */
import * as vscode from 'vscode';
import { COMMANDS } from '../../constants';
import type { Ctx } from '../../ctx';
import { METHODS, type BackgroundTaskView, type Rpc } from '../../client/protocol';
import { errorMessage, log } from '../../logging';
import { BackgroundModel, statusText, statusTooltip, stopPicks } from '../models/backgroundModel';

export class BackgroundItem implements vscode.Disposable {
    private readonly item = vscode.window.createStatusBarItem('retrace.background', vscode.StatusBarAlignment.Left, 9);
    readonly model = new BackgroundModel();
    private readonly disposables: vscode.Disposable[] = [];

    constructor(ctx: Ctx) {
        this.item.name = vscode.l10n.t('Retrace background commands');
        this.item.command = COMMANDS.backgroundStop;
        this.disposables.push(
            this.item,
            ctx.onAgentEvent(e => {
                if (e.kind === 'backgroundTask') {
                    this.model.update(e.task);
                    this.render();
                }
            }),
            ctx.onDidChangeState(state => {
                this.model.reset([]);
                this.render();
                if (state.kind === 'running') {
                    void this.sync(state.rpc);
                }
            }),
        );
        this.render();
    }

    get running(): readonly BackgroundTaskView[] {
        return this.model.running;
    }

    async sync(rpc: Rpc): Promise<void> {
        try {
            const { tasks } = await rpc.request(METHODS.backgroundList, {});
            this.model.reset(tasks);
            this.render();
        } catch (err) {
            log.debug(`background list unavailable: ${errorMessage(err)}`);
        }
    }

    /** The Stop command: pick a running task (the only one is picked for you), stop its group. */
    async stop(rpc: Rpc): Promise<BackgroundTaskView | undefined> {
        await this.sync(rpc);
        const picks = stopPicks(this.model.running);
        if (picks.length === 0) {
            void vscode.window.showInformationMessage(vscode.l10n.t('Retrace: no background command is running.'));
            return undefined;
        }
        const pick = await vscode.window.showQuickPick(picks, { title: vscode.l10n.t('Stop a background command'), placeHolder: vscode.l10n.t('Its whole process group is killed') });
        if (pick === undefined) {
            return undefined;
        }
        const { task } = await rpc.request(METHODS.backgroundStop, { handle: pick.handle });
        log.info(`stopped background command ${task.handle} (${task.state})`);
        this.model.update(task);
        this.render();
        return task;
    }

    private render(): void {
        const running = this.model.running;
        const text = statusText(running);
        if (text === undefined) {
            this.item.hide();
            return;
        }
        this.item.text = text;
        this.item.tooltip = statusTooltip(running);
        this.item.show();
    }

    dispose(): void {
        for (const d of this.disposables) {
            d.dispose();
        }
    }
}
