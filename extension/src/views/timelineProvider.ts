/**
 * The Timeline tree view: server state (`retrace/timeline/get`) plus live agent events (running
 * tools, turn prompts, failed calls). The only state change is "update the data, fire the event";
 * tooltips (diff previews) are filled lazily in `resolveTreeItem`.
 */
import * as vscode from 'vscode';
import { COMMANDS, VIEW_TIMELINE } from '../constants';
import type { Ctx } from '../ctx';
import { METHODS, type AgentEvent, type Checkpoint, type TimelineGetResult } from '../client/protocol';
import { previewPatch } from '../diff/hunks';
import { errorMessage, log } from '../logging';
import {
    buildTimeline,
    changeSummary,
    checkpointLabel,
    checkpointNodeId,
    indexNodes,
    lookOf,
    recoverabilityNote,
    type CheckpointNode,
    type RunningTool,
    type SessionNode,
    type TimelineNode,
} from './timelineModel';

const PREVIEW_LINES = 24;

export class TimelineProvider implements vscode.TreeDataProvider<TimelineNode>, vscode.Disposable {
    private readonly changed = new vscode.EventEmitter<TimelineNode | undefined>();
    readonly onDidChangeTreeData = this.changed.event;
    private data: TimelineGetResult | undefined;
    private roots: SessionNode[] = [];
    private nodes = new Map<string, TimelineNode>();
    private readonly turnTitles = new Map<string, string>();
    private readonly toolStatus = new Map<string, string>();
    private readonly running = new Map<string, RunningTool>();
    private refreshTimer: NodeJS.Timeout | undefined;
    private refreshing: Promise<void> | undefined;
    private revealNext: string | undefined;
    private readonly disposables: vscode.Disposable[] = [];
    readonly view: vscode.TreeView<TimelineNode>;
    /** The session the chat shows; its nodes are expanded. */
    activeSessionId: string | undefined;

    constructor(private readonly ctx: Ctx) {
        this.view = vscode.window.createTreeView(VIEW_TIMELINE, { treeDataProvider: this, showCollapseAll: true });
        this.disposables.push(
            this.view,
            this.changed,
            ctx.onAgentEvent(e => this.onAgentEvent(e)),
            ctx.onTimelineChange(() => this.scheduleRefresh()),
            ctx.onDidChangeState(s => {
                if (s.kind === 'running') {
                    this.scheduleRefresh();
                } else {
                    this.running.clear();
                    this.render();
                }
            }),
        );
    }

    get timeline(): TimelineGetResult | undefined {
        return this.data;
    }

    checkpoint(id: string): Checkpoint | undefined {
        return this.data?.checkpoints.find(c => c.id === id);
    }

    get head(): string | undefined {
        return this.data?.head ?? undefined;
    }

    private onAgentEvent(e: AgentEvent): void {
        switch (e.kind) {
            case 'turnStarted':
                if (e.turnId !== undefined && e.turnId !== null) {
                    this.turnTitles.set(e.turnId, e.text);
                }
                this.activeSessionId = e.sessionId;
                this.scheduleRefresh();
                return;
            case 'toolCallStarted':
                this.running.set(e.toolCallId, { sessionId: e.sessionId, turnId: e.turnId ?? undefined, toolCallId: e.toolCallId, tool: e.tool });
                this.render();
                return;
            case 'toolCallFinished':
                this.running.delete(e.toolCallId);
                if (e.status !== 'ok') {
                    this.toolStatus.set(e.toolCallId, e.status);
                }
                this.render();
                return;
            case 'checkpointCreated':
                this.revealNext = e.checkpoint.id;
                this.scheduleRefresh();
                return;
            case 'turnFinished':
            case 'conversationChanged':
                this.scheduleRefresh();
                return;
            case 'textDelta':
            case 'permissionRequest':
            case 'usage':
            case 'error':
                return;
        }
    }

    scheduleRefresh(): void {
        if (this.refreshTimer !== undefined) {
            clearTimeout(this.refreshTimer);
        }
        this.refreshTimer = setTimeout(() => {
            this.refreshTimer = undefined;
            void this.refresh();
        }, 60);
    }

    /** Fetch the timeline; resolves when the tree shows it. */
    async refresh(): Promise<void> {
        if (this.refreshing !== undefined) {
            await this.refreshing;
        }
        this.refreshing = this.doRefresh().finally(() => {
            this.refreshing = undefined;
        });
        return this.refreshing;
    }

    private async doRefresh(): Promise<void> {
        const rpc = this.ctx.rpc;
        if (rpc === undefined) {
            return;
        }
        try {
            this.data = await rpc.request(METHODS.timelineGet, {});
            await this.fillTurnTitles();
        } catch (err) {
            log.error('timeline refresh failed', err);
            return;
        }
        this.render();
        const reveal = this.revealNext;
        if (reveal !== undefined) {
            this.revealNext = undefined;
            await this.reveal(reveal);
        }
    }

    /** Prompts of turns we did not see start (earlier windows) come from the conversation. */
    private async fillTurnTitles(): Promise<void> {
        const rpc = this.ctx.rpc;
        if (rpc === undefined || this.data === undefined) {
            return;
        }
        const missing = new Set<string>();
        for (const cp of this.data.checkpoints) {
            if (cp.turnId !== undefined && cp.turnId !== null && !this.turnTitles.has(cp.turnId)) {
                missing.add(cp.sessionId);
            }
        }
        for (const sessionId of missing) {
            try {
                const conv = await rpc.request(METHODS.conversationGet, { sessionId });
                for (const m of conv.messages) {
                    const text = m.content.find(b => b['type'] === 'text')?.['text'];
                    if (m.role === 'user' && m.turnId !== null && m.turnId !== undefined && typeof text === 'string' && !this.turnTitles.has(m.turnId)) {
                        this.turnTitles.set(m.turnId, text);
                    }
                }
            } catch (err) {
                log.debug(`no conversation for ${sessionId}: ${errorMessage(err)}`);
            }
        }
    }

    private render(): void {
        if (this.data === undefined) {
            this.roots = [];
        } else {
            this.roots = buildTimeline(this.data, { turnTitles: this.turnTitles, toolStatus: this.toolStatus, running: [...this.running.values()] });
        }
        this.nodes = indexNodes(this.roots);
        this.changed.fire(undefined);
    }

    async reveal(checkpointId: string): Promise<void> {
        const node = this.nodes.get(checkpointNodeId(checkpointId));
        if (node !== undefined && this.view.visible) {
            try {
                await this.view.reveal(node, { select: true, focus: false, expand: true });
            } catch (err) {
                log.debug(`reveal failed: ${errorMessage(err)}`);
            }
        }
    }

    getChildren(element?: TimelineNode): TimelineNode[] {
        if (element === undefined) {
            return this.roots;
        }
        return element.kind === 'session' || element.kind === 'turn' ? element.children : [];
    }

    getParent(element: TimelineNode): TimelineNode | undefined {
        return element.kind === 'session' ? undefined : this.nodes.get(element.parentId);
    }

    private isCurrentSession(sessionId: string): boolean {
        const last = this.roots[this.roots.length - 1];
        return sessionId === (this.activeSessionId ?? last?.sessionId);
    }

    getTreeItem(node: TimelineNode): vscode.TreeItem {
        const look = lookOf(node);
        // Sessions start expanded; only the current session's turns do (older turns stay tidy).
        const expanded = node.kind === 'session' || (node.kind === 'turn' && this.isCurrentSession(node.sessionId));
        const item = new vscode.TreeItem(
            look.label,
            look.collapsible
                ? expanded
                    ? vscode.TreeItemCollapsibleState.Expanded
                    : vscode.TreeItemCollapsibleState.Collapsed
                : vscode.TreeItemCollapsibleState.None,
        );
        item.id = node.id;
        item.description = look.description;
        item.contextValue = look.contextValue;
        item.iconPath = new vscode.ThemeIcon(look.icon, look.iconColor === undefined ? undefined : new vscode.ThemeColor(look.iconColor));
        if (node.kind === 'checkpoint') {
            item.command = { command: COMMANDS.openDiff, title: 'Open Changes', arguments: [node] };
            item.accessibilityInformation = { label: `${look.label} ${look.description}` };
        }
        return item;
    }

    async resolveTreeItem(item: vscode.TreeItem, node: TimelineNode, token: vscode.CancellationToken): Promise<vscode.TreeItem> {
        if (node.kind !== 'checkpoint') {
            return item;
        }
        item.tooltip = await this.tooltip(node, token);
        return item;
    }

    private async tooltip(node: CheckpointNode, token: vscode.CancellationToken): Promise<vscode.MarkdownString> {
        const cp = node.checkpoint;
        const md = new vscode.MarkdownString('', true);
        md.appendMarkdown(`$(${lookOf(node).icon}) **${escapeMd(checkpointLabel(cp))}**${node.isHead ? ' — head' : ''}\n\n`);
        md.appendMarkdown(`${cp.kind}${cp.tool ? ` · ${escapeMd(cp.tool)}` : ''} · ${new Date(cp.createdAt).toLocaleString()} · \`${cp.id.slice(0, 12)}\`\n\n`);
        const summary = changeSummary(cp);
        if (summary !== '') {
            md.appendMarkdown(`${escapeMd(summary)}\n\n`);
        }
        const note = recoverabilityNote(cp);
        if (note !== '') {
            md.appendMarkdown(`**${escapeMd(note)}**\n\n`);
        }
        const rpc = this.ctx.rpc;
        if (rpc !== undefined && cp.parent !== null && cp.parent !== undefined && (cp.files ?? []).length > 0) {
            try {
                const diff = await rpc.request(METHODS.checkpointDiff, { from: cp.parent, to: cp.id });
                if (token.isCancellationRequested) {
                    return md;
                }
                const preview = previewPatch(diff.patch, PREVIEW_LINES);
                if (preview.text !== '') {
                    md.appendCodeblock(preview.text, 'diff');
                }
                const more: string[] = [];
                if (preview.omittedLines > 0) {
                    more.push(`${preview.omittedLines} more lines`);
                }
                if (preview.omittedFiles > 0) {
                    more.push(`${preview.omittedFiles} more files`);
                }
                if (diff.truncated) {
                    more.push('patch truncated by the server');
                }
                if (more.length > 0) {
                    md.appendMarkdown(`\n… ${more.join(' / ')}`);
                }
            } catch (err) {
                md.appendMarkdown(`_diff unavailable: ${escapeMd(errorMessage(err))}_`);
            }
        }
        return md;
    }

    dispose(): void {
        if (this.refreshTimer !== undefined) {
            clearTimeout(this.refreshTimer);
        }
        for (const d of this.disposables) {
            d.dispose();
        }
    }
}

function escapeMd(text: string): string {
    return text.replace(/[\\`*_{}[\]()#+\-.!|<>]/g, c => `\\${c}`);
}
