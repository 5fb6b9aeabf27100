/**
 * The Timeline tree view: renders the stories of the workspace's store (`stories.ts`: the
 * session/row layer, paged, rows added by `retrace/timeline/didChange`) with the tool calls
 * running now, and owns what is the view's: the filter, "Load older…", jump to head, reveal.
 * The only state change is "update the data, fire the event"; tooltips (diff previews) are filled
 * lazily in `resolveTreeItem` (`items.ts`). A `task` row opens its subagent's own timeline
 * (fetched on expand, again on the child's `taskProgress`).
 */
import * as vscode from 'vscode';
import { VIEW_TIMELINE } from '../../constants';
import type { Ctx } from '../../ctx';
import type { AgentEvent, Checkpoint, StoryRow, TaskProgress, TaskRef, TimelineDidChange, TimelineFilter, TimelineGetResult, TimelineTreeResult } from '../../client/protocol';
import { selectedRow } from '../selection';
import { errorMessage, log } from '../../logging';
import { checkpointNodeId, filterDescription, startsExpanded } from '../timelineModel';
import type { MoreNode, RunningTool, SessionNode, TimelineNode } from '../timelineModel';
import { shownNodeId } from '../timelineFold';
import { Stories } from './stories';
import { rowTooltip, SHOW_EARLIER, treeItem } from './items';
import { pickFilter } from './filterPick';

const FILTER = 'retrace.timeline.filter';
const CLEAR_FILTER = 'retrace.timeline.clearFilter';
const JUMP_TO_HEAD = 'retrace.timeline.jumpToHead';
const CONTEXT_FILTERED = 'retrace.timelineFiltered';

export class TimelineProvider implements vscode.TreeDataProvider<TimelineNode>, vscode.Disposable {
    private readonly changed = new vscode.EventEmitter<TimelineNode | undefined>();
    readonly onDidChangeTreeData = this.changed.event;
    private readonly stories: Stories;
    private roots: SessionNode[] = [];
    private nodes = new Map<string, TimelineNode>();
    private filter: TimelineFilter | undefined;
    private readonly running = new Map<string, RunningTool>();
    private refreshTimer: NodeJS.Timeout | undefined;
    private refreshing: Promise<void> | undefined;
    /** Reveal the head after the next refresh (a checkpoint came, a turn finished). */
    private revealHeadNext = false;
    private readonly disposables: vscode.Disposable[] = [];
    readonly view: vscode.TreeView<TimelineNode>;
    /** The session the chat shows; its nodes are expanded. */
    activeSessionId: string | undefined;

    constructor(private readonly ctx: Ctx) {
        this.stories = new Stories({
            rpc: () => ctx.rpc,
            filter: () => this.filter,
            focus: () => this.activeSessionId,
            running: () => [...this.running.values()],
            changed: () => this.render(),
            agent: true,
        });
        this.view = vscode.window.createTreeView(VIEW_TIMELINE, { treeDataProvider: this, showCollapseAll: true });
        this.disposables.push(
            this.view,
            this.changed,
            ctx.onAgentEvent(e => this.onAgentEvent(e)),
            ctx.onTimelineChange(change => this.onTimelineChange(change)),
            // Showing the timeline is using Retrace: the server starts then (activation is lazy).
            this.view.onDidChangeVisibility(e => e.visible && void ctx.start()),
            vscode.commands.registerCommand(SHOW_EARLIER, (sessionId?: string, before?: string | null) => this.showEarlier(sessionId, before)),
            vscode.commands.registerCommand(FILTER, (spec?: TimelineFilter) => this.chooseFilter(spec)),
            vscode.commands.registerCommand(CLEAR_FILTER, () => this.setFilter(undefined)),
            vscode.commands.registerCommand(JUMP_TO_HEAD, () => this.jumpToHead()),
            ctx.onDidChangeState(s => {
                if (s.kind === 'running') {
                    this.scheduleRefresh();
                } else {
                    this.running.clear();
                    this.render();
                }
            }),
        );
        if (this.view.visible) {
            void ctx.start();
        }
    }

    /** The flat view (checkpoints in commit order, head, sessions) other features read. */
    get timeline(): TimelineGetResult | undefined {
        return this.stories.timeline;
    }

    get tree(): TimelineTreeResult | undefined {
        return this.stories.tree;
    }

    checkpoint(id: string): Checkpoint | undefined {
        return this.stories.checkpoint(id);
    }

    /** The row the server sent for a checkpoint (undefined: not on a page shown). */
    rowOf(id: string): StoryRow | undefined {
        return this.stories.rowOf(id);
    }

    get head(): string | undefined {
        return this.stories.head;
    }

    private onAgentEvent(e: AgentEvent): void {
        switch (e.kind) {
            case 'turnStarted':
                this.activeSessionId = e.sessionId;
                this.scheduleRefresh();
                return;
            case 'toolCallStarted':
                this.running.set(e.toolCallId, { sessionId: e.sessionId, turnId: e.turnId ?? undefined, toolCallId: e.toolCallId, tool: e.tool });
                this.render();
                return;
            case 'toolCallFinished':
                this.running.delete(e.toolCallId);
                this.render();
                return;
            case 'checkpointCreated': // its row arrives with `timeline/didChange`, which reveals the head
                this.revealHeadNext = true;
                return;
            case 'turnFinished': // the turn's last rows may have come in any order: show the head once it ends
                this.revealHeadNext = true;
                this.scheduleRefresh();
                return;
            case 'conversationChanged':
                this.scheduleRefresh();
                return;
            case 'taskProgress':
                this.onTaskProgress(e);
                return;
            case 'textDelta':
            case 'permissionRequest':
            case 'backgroundTask':
            case 'contextCompacted':
            case 'usage':
            case 'error':
                return;
        }
    }

    /** A subagent moved: its running row says how far it is; an open child timeline is fetched again. */
    private onTaskProgress(e: TaskProgress): void {
        const running = this.running.get(e.toolCallId);
        if (running !== undefined) {
            const calls = e.toolCalls === 1 ? vscode.l10n.t('1 tool call') : vscode.l10n.t('{0} tool calls', e.toolCalls);
            const detail = [e.description, calls, e.lastTool ?? ''].filter(p => p !== '').join(' · ');
            this.running.set(e.toolCallId, { ...running, detail });
            this.render();
        }
        const ref = { sessionId: e.sessionId, taskId: e.taskId };
        const subagents = this.stories.subagents;
        if (subagents.isOpen(ref)) {
            void this.reloadTask(ref);
        } else if (e.status !== 'running' || running === undefined) {
            // It ended, or it is not a tool call of this turn (a resumed child): its state moved.
            void subagents.list([e.sessionId]).then(moved => moved && this.render());
        }
    }

    /** Fetch a subagent's own timeline (and the session's children) and show it again. */
    reloadTask(ref: TaskRef): Promise<void> {
        return this.stories.reloadTask(ref);
    }

    /** Forget a subagent's timeline (discarded) and show its row as the server says it is now. */
    forgetTask(ref: TaskRef): Promise<void> {
        return this.stories.forgetTask(ref);
    }

    /** Insert a described row in place; fetch the tree only when the row cannot be placed. */
    private onTimelineChange(change: TimelineDidChange): void {
        this.revealHeadNext ||= change.head !== null && change.head !== undefined; // a restore's change has no row: after the refetch
        const effect = this.stories.apply(change, this.refreshTimer !== undefined);
        if (effect.refetch) {
            this.scheduleRefresh();
            return;
        }
        if (effect.tasks) {
            this.stories.refreshTaskViews(this.currentSessionId());
        }
        // Follow the agent and the restores: the head row (its group) comes into view, whatever
        // order parallel tool calls' checkpoints arrive in.
        this.revealHeadNext = false;
        if (effect.reveal !== undefined) {
            void this.reveal(effect.reveal);
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
        let changed = false;
        try {
            const fetched = await this.stories.fetch(rpc);
            changed = fetched.changed;
            this.revealHeadNext ||= fetched.first; // the first tree opens where the user is
        } catch (err) {
            log.error('timeline refresh failed', err);
            return;
        }
        if (changed) {
            this.render();
            this.stories.refreshTaskViews(this.currentSessionId());
        }
        const reveal = this.revealHeadNext ? this.head : undefined;
        this.revealHeadNext = false;
        if (reveal !== undefined) {
            await this.reveal(reveal);
        }
    }

    /** "Load older…": the page of the given story, else of the selected "Load older…" row (the
     * view names the row as it is in the tree now: a re-rendered row carries the current cursor). */
    private async showEarlier(sessionId: string | undefined, before: string | null | undefined): Promise<void> {
        if (sessionId !== undefined) {
            return this.loadPage(sessionId, before ?? null);
        }
        const more = await selectedRow(this.view, (n): n is MoreNode => n.kind === 'more');
        if (more === undefined) {
            log.debug('"Load older…" without a selected row: nothing to load');
            return;
        }
        return this.loadPage(more.sessionId, more.before);
    }

    /** Fetch one page of a story (`before`: older than that cursor; `null`: its newest page). */
    loadPage(sessionId: string, before: string | null): Promise<void> {
        return this.stories.loadPage(sessionId, before);
    }

    private async setFilter(filter: TimelineFilter | undefined): Promise<void> {
        this.filter = filter;
        await this.refresh();
        // Described once the filtered rows are shown (the view never names a filter it does not show).
        const description = filterDescription(filter);
        this.view.description = description;
        await vscode.commands.executeCommand('setContext', CONTEXT_FILTERED, description !== '');
        // The newest match is what a filter is usually for: show it (the list opens at its top).
        const newest = filter === undefined ? undefined : this.timeline?.checkpoints.at(-1);
        if (newest !== undefined) {
            await this.reveal(newest.id);
        }
    }

    /** Ask what to filter by (tool, path or text; an argument skips the questions). */
    private async chooseFilter(spec?: TimelineFilter): Promise<void> {
        const filter = spec ?? (await pickFilter());
        return filter === undefined ? undefined : this.setFilter(filter);
    }

    /** Show the head: its story's newest page (loaded when not shown yet), the head row selected. */
    async jumpToHead(): Promise<void> {
        if (this.filter !== undefined) {
            await this.setFilter(undefined);
        }
        const head = this.head;
        if (head === undefined) {
            return;
        }
        const holder = this.stories.headSessionId;
        if (!this.stories.shows(head) && holder !== undefined) {
            await this.loadPage(holder, null);
        }
        await this.reveal(head);
    }

    /** Build the rows from the data and have the view ask for every one again. */
    render(): void {
        this.stories.build();
        this.roots = [...this.stories.roots];
        this.nodes = new Map(this.stories.nodes);
        this.changed.fire(undefined);
    }

    /** Show one checkpoint of a session: the timeline opens, the checkpoint's story page is
     * loaded when its row is not shown yet, and the row is selected (the Health panel's links). */
    async showCheckpoint(checkpointId: string, sessionId: string): Promise<void> {
        await vscode.commands.executeCommand(`${VIEW_TIMELINE}.focus`);
        if (this.stories.tree === undefined) {
            await this.refresh();
        }
        if (!this.stories.shows(checkpointId)) {
            await this.loadPage(sessionId, null);
        }
        await this.reveal(checkpointId);
    }

    /** Reveal a checkpoint's row, or the folded group holding it (which stays closed). */
    async reveal(checkpointId: string): Promise<void> {
        const node = this.nodes.get(shownNodeId(checkpointNodeId(checkpointId), this.nodes));
        if (node !== undefined && this.view.visible) {
            try {
                // The row itself stays closed (a task row would load the child's whole timeline, a
                // restore row would open the work it left behind); its ancestors open.
                await this.view.reveal(node, { select: true, focus: false, expand: false });
            } catch (err) {
                log.debug(`reveal failed: ${errorMessage(err)}`);
            }
        }
    }

    getChildren(given?: TimelineNode): TimelineNode[] | Promise<TimelineNode[]> {
        if (given === undefined) {
            return this.roots;
        }
        // The workbench may hand back a node object of an earlier tree with the same id (a turn
        // shown before a filter changed): its children are those of the tree shown now.
        const element = this.nodes.get(given.id);
        if (element === undefined) {
            return []; // not in the tree shown now
        }
        if (element.kind === 'session' && element.story.outline) {
            void this.loadPage(element.sessionId, null); // expanding an outline loads its newest page
        }
        if ((element.kind === 'checkpoint' || element.kind === 'subagent') && element.task !== undefined && !this.stories.subagents.isOpen(element.task.ref)) {
            return this.openTask(element.id, element.task.ref); // expanding a task row loads the child's timeline
        }
        return element.kind === 'runningTool' || element.kind === 'more' ? [] : [...element.children];
    }

    private async openTask(nodeId: string, ref: TaskRef): Promise<TimelineNode[]> {
        const subagents = this.stories.subagents;
        await Promise.all([subagents.loadTree(ref), subagents.list([ref.sessionId])]);
        this.render(); // the task row's description may have moved too
        const node = this.nodes.get(nodeId);
        return node?.kind === 'checkpoint' || node?.kind === 'subagent' ? [...node.children] : [];
    }

    getParent(element: TimelineNode): TimelineNode | undefined {
        return element.kind === 'session' ? undefined : this.nodes.get(element.parentId);
    }

    private currentSessionId(): string | undefined {
        const agentStories = this.roots.filter(r => !r.story.workspace);
        return this.activeSessionId ?? agentStories[agentStories.length - 1]?.sessionId;
    }

    getTreeItem(node: TimelineNode): vscode.TreeItem {
        return treeItem(node, startsExpanded(node, this.currentSessionId()));
    }

    async resolveTreeItem(item: vscode.TreeItem, node: TimelineNode, token: vscode.CancellationToken): Promise<vscode.TreeItem> {
        if (node.kind !== 'checkpoint') {
            return item;
        }
        item.tooltip = await rowTooltip(node, this.ctx.rpc, token);
        return item;
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
