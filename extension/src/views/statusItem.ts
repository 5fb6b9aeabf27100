/**
 * Status bar item: agent state (idle / running / error), checkpoint count and storage used
 * (`retrace/stats`); clicking reveals the timeline. The tooltip links logs and restart. In a
 * multi-root workspace the store figures are those of the folder of the active editor (named;
 * `followedFolder`); the agent's state is the agent's (the first folder's).
 */
import * as vscode from 'vscode';
import { COMMANDS, CONFIG_SECTION, CONTEXT_AGENT_RUNNING } from '../constants';
import type { Ctx } from '../ctx';
import { METHODS, type AgentEvent } from '../client/protocol';
import { errorMessage, log } from '../logging';
import { followedFolder } from '../diff/hunkModel';
import { withFolder } from '../paths';
import { activeFile, folderRoots } from '../diff/editorFolder';
import { modelSummary } from './modelChoice';

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

export class StatusItem implements vscode.Disposable {
    private readonly item = vscode.window.createStatusBarItem('retrace.status', vscode.StatusBarAlignment.Left, 10);
    private readonly runningSessions = new Set<string>();
    /** Turn starts/ends seen since the last `session/list` request: its answer may predate them. */
    private readonly changedSinceSync = new Map<string, boolean>();
    private activity: AgentActivity = 'idle';
    private lastError = '';
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
                this.runningSessions.clear();
                this.activity = 'idle';
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
        return this.activity;
    }

    get text(): string {
        return this.item.text;
    }

    private onEvent(e: AgentEvent): void {
        // Another agent's turn (recorded through its hooks) is not Retrace's activity.
        if ((e.kind === 'turnStarted' || e.kind === 'turnFinished') && e.agent !== undefined && e.agent !== null) {
            return;
        }
        switch (e.kind) {
            case 'turnStarted':
                this.changedSinceSync.set(e.sessionId, true);
                this.runningSessions.add(e.sessionId);
                this.activity = 'running';
                break;
            case 'turnFinished':
                this.changedSinceSync.set(e.sessionId, false);
                this.runningSessions.delete(e.sessionId);
                this.activity = e.stopReason === 'error' ? 'error' : this.runningSessions.size > 0 ? 'running' : 'idle';
                this.scheduleStats();
                break;
            case 'error':
                if (!e.retrying) {
                    this.lastError = e.message;
                    this.activity = 'error';
                }
                break;
            case 'textDelta':
            case 'toolCallStarted':
            case 'toolCallFinished':
            case 'checkpointCreated':
            case 'permissionRequest':
            case 'usage':
            case 'conversationChanged':
            case 'backgroundTask':
            case 'contextCompacted':
            case 'taskProgress':
                return;
        }
        void vscode.commands.executeCommand('setContext', CONTEXT_AGENT_RUNNING, this.runningSessions.size > 0);
        this.render();
    }

    /** Running sessions as the server reports them (after every (re)connect). */
    async syncFromServer(): Promise<void> {
        const rpc = this.ctx.rpc;
        if (rpc === undefined) {
            return;
        }
        try {
            this.changedSinceSync.clear();
            const { sessions } = await rpc.request(METHODS.sessionList, {});
            this.runningSessions.clear();
            for (const s of sessions.filter(x => x.running)) {
                this.runningSessions.add(s.id);
            }
            // Events that arrived while the request was in flight are newer than its answer.
            for (const [id, running] of this.changedSinceSync) {
                if (running) {
                    this.runningSessions.add(id);
                } else {
                    this.runningSessions.delete(id);
                }
            }
            this.activity = this.runningSessions.size > 0 ? 'running' : 'idle';
            void vscode.commands.executeCommand('setContext', CONTEXT_AGENT_RUNNING, this.runningSessions.size > 0);
            this.render();
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
        let icon: string;
        let label: string;
        if (server.kind === 'failed') {
            icon = '$(error)';
            label = vscode.l10n.t('server not running');
            this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
        } else if (server.kind === 'stopped' && !this.ctx.started) {
            // Activation is lazy: nothing runs until Retrace is opened (clicking reveals it).
            icon = '$(history)';
            label = vscode.l10n.t('not started');
            this.item.backgroundColor = undefined;
        } else if (server.kind !== 'running') {
            icon = '$(loading~spin)';
            label = vscode.l10n.t('starting');
            this.item.backgroundColor = undefined;
        } else {
            icon = this.activity === 'running' ? '$(sync~spin)' : this.activity === 'error' ? '$(warning)' : '$(history)';
            label = this.activity === 'running' ? vscode.l10n.t('running') : this.activity === 'error' ? vscode.l10n.t('error') : vscode.l10n.t('idle');
            this.item.backgroundColor = this.activity === 'error' ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
        }
        this.item.text = `${icon} ${vscode.l10n.t('Retrace: {0}', label)}${this.stats !== '' && server.kind === 'running' ? ` · ${this.stats}` : ''}`;
        const md = new vscode.MarkdownString('', true);
        md.appendMarkdown(`${vscode.l10n.t('**Retrace** — agent {0}', label)}\n\n`);
        if (server.kind === 'failed') {
            md.appendMarkdown(`${server.reason}\n\n`);
        }
        if (this.activity === 'error' && this.lastError !== '') {
            md.appendMarkdown(`${vscode.l10n.t('Last error: {0}', this.lastError)}\n\n`);
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
