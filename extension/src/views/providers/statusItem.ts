/**
 * Status bar item: agent state (idle / running / error), checkpoint count and storage used
 * (`retrace/stats`); clicking reveals the timeline. The tooltip links logs and restart. In a
 * multi-root workspace the store figures are those of the folder of the active editor (named;
 * `followedFolder`); the agent's state is the agent's (the first folder's).
 */
import * as vscode from 'vscode';
import { COMMANDS, CONFIG_SECTION, CONTEXT_AGENT_RUNNING } from '../../constants';
import type { Ctx } from '../../ctx';
import { METHODS, type AgentEvent } from '../../client/protocol';
import { errorMessage, log } from '../../logging';
import { followedFolder } from '../../diff/hunkModel';
import { withFolder } from '../../paths';
import { activeFile, folderRoots } from '../../diff/editorFolder';
import { modelSummary } from '../models/modelChoice';
import { AgentActivityModel, statusLook, storeStats, type AgentActivity } from '../models/statusModel';

export class StatusItem implements vscode.Disposable {
    private readonly item = vscode.window.createStatusBarItem('retrace.status', vscode.StatusBarAlignment.Left, 10);
    private readonly agent = new AgentActivityModel();
    private stats = '';
    /** The folder whose store figures are shown (undefined: the first). */
    private folder: string | undefined;
    private timer: NodeJS.Timeout | undefined;
    private readonly disposables: vscode.Disposable[] = [];

    constructor(private readonly ctx: Ctx) {
        this.item.name = 'Retrace';
        this.item.command = COMMANDS.timelineReveal;
        this.disposables.push(
            this.item,
            ctx.onAgentEvent(e => this.onEvent(e)),
            ctx.onTimelineChange(() => this.folder === undefined && this.scheduleStats()),
            ctx.onFolderTimelineChange(c => c.folder === this.folder && this.scheduleStats()),
            vscode.window.onDidChangeActiveTextEditor(() => this.follow()),
            vscode.workspace.onDidChangeWorkspaceFolders(() => this.follow()),
            vscode.workspace.onDidChangeConfiguration(e => e.affectsConfiguration(`${CONFIG_SECTION}.model`) && this.render()),
            ctx.onDidChangeState(state => {
                // A (re)connected or dead server: what ran before is not known to run any more.
                this.agent.reset();
                void vscode.commands.executeCommand('setContext', CONTEXT_AGENT_RUNNING, false);
                if (state.kind === 'running') {
                    void this.syncFromServer();
                }
                this.scheduleStats();
                this.render();
            }),
        );
        this.render();
        this.item.show();
    }

    /** Show the store figures of the active editor's folder. */
    private follow(): void {
        const next = followedFolder(activeFile(), folderRoots().map(f => f.root), this.folder);
        if (next !== this.folder) {
            this.folder = next;
            this.scheduleStats();
        }
    }

    get state(): AgentActivity {
        return this.agent.activity;
    }

    get text(): string {
        return this.item.text;
    }

    private onEvent(e: AgentEvent): void {
        if (!this.agent.apply(e)) {
            return;
        }
        if (e.kind === 'turnFinished') {
            this.scheduleStats();
        }
        this.agentChanged();
    }

    private agentChanged(): void {
        void vscode.commands.executeCommand('setContext', CONTEXT_AGENT_RUNNING, this.agent.anyRunning);
        this.render();
    }

    /** Running sessions as the server reports them (after every (re)connect). */
    async syncFromServer(): Promise<void> {
        const rpc = this.ctx.rpc;
        if (rpc === undefined) {
            return;
        }
        try {
            this.agent.beginSync();
            const { sessions } = await rpc.request(METHODS.sessionList, {});
            this.agent.endSync(sessions.filter(x => x.running).map(x => x.id));
            this.agentChanged();
        } catch (err) {
            log.debug(`session list unavailable: ${errorMessage(err)}`);
        }
    }

    scheduleStats(): void {
        if (this.timer !== undefined) {
            clearTimeout(this.timer);
        }
        this.timer = setTimeout(() => void this.refreshStats(), 400);
    }

    async refreshStats(): Promise<void> {
        const rpc = this.ctx.rpc;
        if (rpc === undefined) {
            return;
        }
        try {
            const folder = this.folder;
            const s = await rpc.request(METHODS.stats, withFolder({}, folder));
            const folders = folderRoots();
            const name = folders.length > 1 ? folders.find(f => f.root === folder)?.name ?? folders[0]?.name : undefined;
            if (folder === this.folder) {
                this.stats = storeStats(s.store.checkpoints, s.store.totalBytes, name);
            }
        } catch (err) {
            log.debug(`stats unavailable: ${errorMessage(err)}`);
        }
        this.render();
    }

    private render(): void {
        const server = this.ctx.serverState;
        const look = statusLook(server.kind, this.ctx.started, this.agent.activity);
        const label = look.label;
        this.item.backgroundColor = look.background === undefined ? undefined : new vscode.ThemeColor(look.background);
        this.item.text = `${look.icon} ${vscode.l10n.t('Retrace: {0}', label)}${this.stats !== '' && server.kind === 'running' ? ` · ${this.stats}` : ''}`;
        const md = new vscode.MarkdownString('', true);
        md.appendMarkdown(`${vscode.l10n.t('**Retrace** — agent {0}', label)}\n\n`);
        if (server.kind === 'failed') {
            md.appendMarkdown(`${server.reason}\n\n`);
        }
        if (this.agent.activity === 'error' && this.agent.lastError !== '') {
            md.appendMarkdown(`${vscode.l10n.t('Last error: {0}', this.agent.lastError)}\n\n`);
        }
        if (this.stats !== '') {
            md.appendMarkdown(`${vscode.l10n.t('Store: {0}', this.stats)}\n\n`);
        }
        // The provider and model this window's settings choose, as code: a model id or URL is
        // neither Markdown nor a link (`qwen2.5-coder:14b` would read as one).
        const model = modelSummary(vscode.workspace.getConfiguration(CONFIG_SECTION).get('model')).replace(/`/g, "'");
        md.appendMarkdown(vscode.l10n.t('Model: {0}', `\`${model}\``));
        md.appendMarkdown(`\n\n[${vscode.l10n.t('Choose model provider')}](command:${COMMANDS.chooseModelProvider}) · `);
        md.appendMarkdown(
            `[${vscode.l10n.t('Show timeline')}](command:${COMMANDS.timelineReveal}) · [${vscode.l10n.t('Show logs')}](command:${COMMANDS.showLogs}) · [${vscode.l10n.t('Restart server')}](command:${COMMANDS.restartServer})`,
        );
        md.isTrusted = { enabledCommands: [COMMANDS.chooseModelProvider, COMMANDS.timelineReveal, COMMANDS.showLogs, COMMANDS.restartServer] };
        this.item.tooltip = md;
    }

    dispose(): void {
        if (this.timer !== undefined) {
            clearTimeout(this.timer);
        }
        for (const d of this.disposables) {
            d.dispose();
        }
    }
}
