/**
 * The Timeline tree view: the server's story tree, paged (`retrace/timeline/tree` with `outline`:
 * every session's counts plus the newest page of the current one; older pages, other sessions and
 * filter results on request), rows the server adds through `retrace/timeline/didChange` (inserted
 * without a refetch), and the tool calls running now. The only state change is "update the data,
 * fire the event"; tooltips (diff previews) are filled lazily in `resolveTreeItem`. What a page or
 * a filter holds is decided by the server; this class only asks and renders. A `task` row opens
 * its subagent's own timeline (fetched on expand, again on the child's `taskProgress`); the
 * children's state comes from `retrace/tasks/list` (`subagents.ts`).
 */
import * as vscode from 'vscode';
import { COMMANDS, VIEW_TIMELINE } from '../constants';
import type { Ctx } from '../ctx';
import { METHODS, type AgentEvent, type Checkpoint, type StoryRow, type TaskProgress, type TaskRef, type TimelineDidChange, type TimelineFilter, type TimelineGetResult, type TimelineTreeResult } from '../client/protocol';
import { previewOmissions, previewPatch } from '../diff/hunks';
import { selectedRow } from './selection';
import { errorMessage, log } from '../logging';
import { applyChange, buildTimeline, checkpointNodeId, checkpointsOf, filterDescription, firstLine, flatTimeline, indexNodes, cursorMoved, mergePage, rowsOf, startsExpanded } from './timelineModel';
import type { CheckpointNode, MoreNode, RunningTool, SessionNode, TimelineNode } from './timelineModel';
import { codeOnlyReason } from './agentModel';
import { groupHover, lookOf, recoverabilityNote, safetyNote } from './timelineLook';
import { shownNodeId } from './timelineFold';
import { rowMarks } from './gitModel';
import { Subagents } from './subagents';
import { sessionsWithTaskRows, taskOf } from './taskModel';

const PREVIEW_LINES = 24;
/** Rows per page; older rows come on demand ("Load older…"). */
const PAGE_ROWS = 500;
const SHOW_EARLIER = 'retrace.timeline.showEarlier';
const FILTER = 'retrace.timeline.filter';
const CLEAR_FILTER = 'retrace.timeline.clearFilter';
const JUMP_TO_HEAD = 'retrace.timeline.jumpToHead';
const CONTEXT_FILTERED = 'retrace.timelineFiltered';
const TOOLS = ['edit_file', 'write_file', 'run_command', 'read_file', 'list_files', 'search_text'];

export class TimelineProvider implements vscode.TreeDataProvider<TimelineNode>, vscode.Disposable {
    private readonly changed = new vscode.EventEmitter<TimelineNode | undefined>();
    readonly onDidChangeTreeData = this.changed.event;
    private data: TimelineTreeResult | undefined;
    private flat: TimelineGetResult | undefined;
    private byId = new Map<string, Checkpoint>();
    private roots: SessionNode[] = [];
    private nodes = new Map<string, TimelineNode>();
    /** Sessions the user opened (their newest page is fetched again on refresh). */
    private readonly openedSessions = new Set<string>();
    private filter: TimelineFilter | undefined;
    private readonly loading = new Set<string>();
    private readonly running = new Map<string, RunningTool>();
    /** Children of sessions and the own timelines the user opened; fetched again when they move. */
    private readonly subagents: Subagents;
    private refreshTimer: NodeJS.Timeout | undefined;
    private refreshing: Promise<void> | undefined;
    /** Reveal the head after the next refresh (a checkpoint came, a turn finished). */
    private revealHeadNext = false;
    private readonly disposables: vscode.Disposable[] = [];
    readonly view: vscode.TreeView<TimelineNode>;
    /** The session the chat shows; its nodes are expanded. */
    activeSessionId: string | undefined;

    constructor(private readonly ctx: Ctx) {
        this.subagents = new Subagents(() => ctx.rpc, PAGE_ROWS);
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
        return this.flat;
    }

    get tree(): TimelineTreeResult | undefined {
        return this.data;
    }

    checkpoint(id: string): Checkpoint | undefined {
        return this.byId.get(id);
    }

    /** The row the server sent for a checkpoint (undefined: not on a page shown). */
    rowOf(id: string): StoryRow | undefined {
        for (const story of this.data?.sessions ?? []) {
            const found = rowsOf(story).find(r => r.checkpoint.id === id);
            if (found !== undefined) {
                return found;
            }
        }
        return undefined;
    }

    get head(): string | undefined {
        return this.data?.head ?? undefined;
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
        if (this.subagents.isOpen(ref)) {
            void this.reloadTask(ref);
        } else if (e.status !== 'running' || running === undefined) {
            // It ended, or it is not a tool call of this turn (a resumed child): its state moved.
            void this.subagents.list([e.sessionId]).then(moved => moved && this.render());
        }
    }

    /** Fetch a subagent's own timeline (and the session's children) and show it again. */
    async reloadTask(ref: TaskRef): Promise<void> {
        await Promise.all([this.subagents.loadTree(ref), this.subagents.list([ref.sessionId])]);
        this.render();
    }

    /** Forget a subagent's timeline (discarded) and show its row as the server says it is now. */
    async forgetTask(ref: TaskRef): Promise<void> {
        this.subagents.forget(ref);
        await this.subagents.list([ref.sessionId]);
        this.render();
    }

    /** After new data: the children of the sessions showing task rows (and, once, of the session
     * in focus: a crash leaves its cut-off child without a row), rendered when they moved. */
    private refreshTaskViews(): void {
        const focus = this.currentSessionId();
        void this.subagents.list(this.data === undefined ? [] : sessionsWithTaskRows(this.data), focus === undefined ? [] : [focus]).then(moved => moved && this.render());
    }

    /** Insert a described row in place; fetch the tree only when the row cannot be placed. */
    private onTimelineChange(change: TimelineDidChange): void {
        this.revealHeadNext ||= change.head !== null && change.head !== undefined; // a restore's change has no row: after the refetch
        if (this.filter !== undefined) {
            this.scheduleRefresh(); // which rows match is the server's decision: one filtered page
            return;
        }
        const next = this.data === undefined || this.refreshTimer !== undefined ? undefined : applyChange(this.data, change);
        if (next === undefined) {
            this.scheduleRefresh();
            return;
        }
        this.setData(next);
        this.render();
        if (change.row !== null && change.row !== undefined && taskOf(change.row.checkpoint) !== undefined) {
            this.refreshTaskViews();
        }
        // Follow the agent and the restores: the head row (its group) comes into view, whatever
        // order parallel tool calls' checkpoints arrive in.
        this.revealHeadNext = false;
        if (change.head !== null && change.head !== undefined && this.byId.has(change.head)) {
            void this.reveal(change.head);
        }
    }

    private setData(tree: TimelineTreeResult): void {
        this.data = tree;
        this.flat = flatTimeline(tree);
        this.byId = new Map(checkpointsOf(tree).map(c => [c.id, c]));
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
        let unchanged = false;
        try {
            const filter = this.filter;
            const started = Date.now();
            let tree = await rpc.request(
                METHODS.timelineTree,
                filter === undefined ? { outline: true, focus: this.activeSessionId ?? null, maxRows: PAGE_ROWS } : { filter, maxRows: PAGE_ROWS },
            );
            // A story that was showing its rows keeps them: a refresh never collapses what the
            // user was looking at (the outline sends only the focused story's page).
            const shown = new Set([...this.openedSessions, ...(this.data?.sessions ?? []).filter(s => !s.outline).map(s => s.session.id)]);
            for (const sessionId of shown) {
                if (tree.sessions.some(s => s.session.id === sessionId && s.outline)) {
                    const [page] = (await rpc.request(METHODS.timelineTree, { sessionId, maxRows: PAGE_ROWS })).sessions;
                    tree = page === undefined ? tree : mergePage(tree, page, null);
                }
            }
            log.info(`timeline tree (${filter === undefined ? 'outline' : filterDescription(filter)}): ${Date.now() - started} ms`);
            // An answer that changes nothing is not rendered again (a re-render replaces every
            // row under the user's pointer: turn and conversation events refetch what a
            // didChange already showed).
            unchanged = this.data !== undefined && JSON.stringify(tree) === JSON.stringify(this.data);
            if (!unchanged) {
                this.revealHeadNext ||= this.data === undefined; // the first tree opens where the user is
                this.setData(tree);
            }
        } catch (err) {
            log.error('timeline refresh failed', err);
            return;
        }
        if (!unchanged) {
            this.render();
            this.refreshTaskViews();
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
    async loadPage(sessionId: string, before: string | null, retry = true): Promise<void> {
        const rpc = this.ctx.rpc;
        const key = `${sessionId}:${before ?? ''}`;
        if (rpc === undefined || this.data === undefined || this.loading.has(key)) {
            log.debug(`timeline page of ${sessionId} before ${before ?? 'the newest'} not asked: ${rpc === undefined ? 'no server' : this.data === undefined ? 'no timeline yet' : 'already asked'}`);
            return;
        }
        this.loading.add(key);
        try {
            const filter = this.filter;
            const params = { sessionId, before, maxRows: PAGE_ROWS, ...(filter === undefined ? {} : { filter }) };
            const started = Date.now();
            const [page] = (await rpc.request(METHODS.timelineTree, params)).sessions;
            log.info(`timeline page of ${sessionId} before ${before ?? 'the newest'}: ${page?.rowsOmitted ?? 0} older left, ${Date.now() - started} ms`);
            // A page asked for under another filter belongs to a tree no longer shown.
            if (page !== undefined && this.data !== undefined && this.filter === filter) {
                const again = retry ? cursorMoved(this.data, sessionId, before) : undefined;
                if (again !== undefined) {
                    // The tree was replaced meanwhile (a new checkpoint moved the page boundary):
                    // this page no longer fits; the same click asks from the story's cursor now.
                    log.info(`timeline page of ${sessionId}: the tree changed meanwhile; asking again before ${again}`);
                    this.loading.delete(key);
                    await this.loadPage(sessionId, again, false);
                    return;
                }
                this.openedSessions.add(sessionId);
                this.setData(mergePage(this.data, page, before));
                this.render();
            }
        } catch (err) {
            log.error('timeline page failed', err);
        } finally {
            this.loading.delete(key);
        }
    }

    private async setFilter(filter: TimelineFilter | undefined): Promise<void> {
        this.filter = filter;
        await this.refresh();
        // Described once the filtered rows are shown (the view never names a filter it does not show).
        const description = filterDescription(filter);
        this.view.description = description;
        await vscode.commands.executeCommand('setContext', CONTEXT_FILTERED, description !== '');
        // The newest match is what a filter is usually for: show it (the list opens at its top).
        const newest = filter === undefined ? undefined : this.flat?.checkpoints.at(-1);
        if (newest !== undefined) {
            await this.reveal(newest.id);
        }
    }

    /** Ask what to filter by (tool, path or text; an argument skips the questions). */
    private async chooseFilter(spec?: TimelineFilter): Promise<void> {
        if (spec !== undefined) {
            return this.setFilter(spec);
        }
        const by = await vscode.window.showQuickPick(
            [
                { label: vscode.l10n.t('Tool'), description: vscode.l10n.t('checkpoints of one tool'), by: 'tool' as const },
                { label: vscode.l10n.t('Path'), description: vscode.l10n.t('checkpoints that changed a matching path'), by: 'path' as const },
                { label: vscode.l10n.t('Text'), description: vscode.l10n.t('titles, changes and prompts containing the text'), by: 'text' as const },
                { label: vscode.l10n.t('Bookmarks'), description: vscode.l10n.t('named checkpoints only'), by: 'bookmarks' as const },
            ],
            { title: vscode.l10n.t('Filter the Retrace timeline by') },
        );
        if (by === undefined) {
            return;
        }
        if (by.by === 'bookmarks') {
            return this.setFilter({ bookmarks: true });
        }
        const value =
            by.by === 'tool'
                ? await vscode.window.showQuickPick(TOOLS, { title: vscode.l10n.t('Tool') })
                : await vscode.window.showInputBox({
                      title: by.by === 'path' ? vscode.l10n.t('Path contains') : vscode.l10n.t('Text contains'),
                      value: by.by === 'path' ? (vscode.window.activeTextEditor === undefined ? '' : vscode.workspace.asRelativePath(vscode.window.activeTextEditor.document.uri, false)) : '',
                  });
        if (value === undefined || value === '') {
            return;
        }
        return this.setFilter({ [by.by]: value });
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
        const holder = this.data?.headSessionId ?? undefined;
        if (!this.nodes.has(checkpointNodeId(head)) && holder !== undefined) {
            await this.loadPage(holder, null);
        }
        await this.reveal(head);
    }

    /** Build the rows from the data and have the view ask for every one again. */
    render(): void {
        if (this.data === undefined) {
            this.roots = [];
        } else {
            this.roots = buildTimeline(this.data, { running: [...this.running.values()], tasks: this.subagents.views, children: this.subagents.trees, orphans: this.filter === undefined, fold: this.filter === undefined });
        }
        this.nodes = indexNodes(this.roots);
        this.changed.fire(undefined);
    }

    /** Show one checkpoint of a session: the timeline opens, the checkpoint's story page is
     * loaded when its row is not shown yet, and the row is selected (the Health panel's links). */
    async showCheckpoint(checkpointId: string, sessionId: string): Promise<void> {
        await vscode.commands.executeCommand(`${VIEW_TIMELINE}.focus`);
        if (this.data === undefined) {
            await this.refresh();
        }
        if (!this.nodes.has(checkpointNodeId(checkpointId))) {
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
        if ((element.kind === 'checkpoint' || element.kind === 'subagent') && element.task !== undefined && !this.subagents.isOpen(element.task.ref)) {
            return this.openTask(element.id, element.task.ref); // expanding a task row loads the child's timeline
        }
        return element.kind === 'runningTool' || element.kind === 'more' ? [] : [...element.children];
    }

    private async openTask(nodeId: string, ref: TaskRef): Promise<TimelineNode[]> {
        await Promise.all([this.subagents.loadTree(ref), this.subagents.list([ref.sessionId])]);
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
        const look = lookOf(node);
        const expanded = startsExpanded(node, this.currentSessionId());
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
            // No arguments: the command reads the selected row. A command with arguments is held
            // by the workbench per rendered item, and the tree re-renders after every tool call:
            // a click on a row just replaced would do nothing ("command not found").
            item.command = { command: COMMANDS.openDiff, title: vscode.l10n.t('Open Changes') };
            item.accessibilityInformation = { label: `${look.label} ${look.description}` };
        } else if (node.kind === 'more') {
            item.command = { command: SHOW_EARLIER, title: vscode.l10n.t('Load Older Steps') }; // the selected row's page
        } else if (node.kind === 'turn') {
            item.tooltip = new vscode.MarkdownString().appendText(node.turn.prompt || node.title);
        } else if (node.kind === 'group') {
            item.tooltip = new vscode.MarkdownString().appendText(groupHover(node));
        } else if (node.kind === 'subagent') {
            item.tooltip = new vscode.MarkdownString().appendText(
                vscode.l10n.t(
                    "Subagent “{0}” ({1}): its task call made no checkpoint here; its own timeline is kept. Resume it, apply its result or discard it from this row's menu.",
                    node.task.description,
                    node.task.status ?? vscode.l10n.t('unknown'),
                ),
            );
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
        md.appendMarkdown(`$(${lookOf(node).icon}) **${escapeMd(node.row.title)}**${node.isHead ? vscode.l10n.t(' — you are here') : ''}\n\n`);
        md.appendMarkdown(escapeMd(safetyNote(node)));
        md.appendMarkdown(`${cp.kind}${cp.tool ? ` · ${escapeMd(cp.tool)}` : ''} · ${new Date(cp.createdAt).toLocaleString()} · \`${cp.id.slice(0, 12)}\`\n\n`);
        if (node.scope !== undefined) {
            md.appendMarkdown(`${vscode.l10n.t("In the subagent's own copy ({0})", `\`${escapeMd(node.scope.taskId)}\``)}\n\n`);
        }
        if (node.task !== undefined) {
            md.appendMarkdown(`Subagent “${escapeMd(node.task.description)}”: **${escapeMd(node.task.status ?? 'unknown')}**${node.task.conflicts.length > 0 ? ` — conflicts: ${node.task.conflicts.map(escapeMd).join(', ')}` : ''}\n\n`);
        }
        if (node.prompt !== undefined && node.prompt !== '') {
            const quoted = `_${escapeMd(firstLine(node.prompt, 200))}_`;
            md.appendMarkdown(`${node.scope === undefined ? vscode.l10n.t('Prompt: {0}', quoted) : vscode.l10n.t('Brief: {0}', quoted)}\n\n`);
        }
        if (node.toolStatus !== undefined) {
            md.appendMarkdown(`${vscode.l10n.t('Tool call: {0}', `**${escapeMd(node.toolStatus)}**`)}\n\n`);
        }
        const summary = node.row.summary;
        if (summary !== '') {
            md.appendMarkdown(`${escapeMd(summary)}\n\n`);
        }
        const terminal = node.row.terminal;
        if (terminal !== null && terminal !== '') {
            md.appendMarkdown(`${escapeMd(terminal)}\n\n`); // the server's words: cwd and env changes
        }
        for (const line of rowMarks(node.row).hover) {
            md.appendMarkdown(`${escapeMd(line)}\n\n`); // the server's words: git's move, side effects
        }
        const codeOnly = codeOnlyReason(node.row);
        if (codeOnly !== undefined) {
            md.appendMarkdown(`${vscode.l10n.t('Conversation restore not offered: {0}', escapeMd(codeOnly))}\n\n`); // the server's reason
        }
        const note = recoverabilityNote(cp);
        if (note !== '') {
            md.appendMarkdown(`**${escapeMd(note)}**\n\n`);
        }
        const rpc = this.ctx.rpc;
        if (rpc !== undefined && cp.parent !== null && cp.parent !== undefined && (cp.files ?? []).length > 0) {
            try {
                const diff = await rpc.request(METHODS.checkpointDiff, { from: cp.parent, to: cp.id, ...(node.scope === undefined ? {} : { task: node.scope }) });
                if (token.isCancellationRequested) {
                    return md;
                }
                const preview = previewPatch(diff.patch, PREVIEW_LINES);
                if (preview.text !== '') {
                    md.appendCodeblock(preview.text, 'diff');
                }
                const more = previewOmissions(preview, diff.truncated);
                if (more.length > 0) {
                    md.appendMarkdown(`\n… ${more.join(' / ')}`);
                }
            } catch (err) {
                md.appendMarkdown(`_${vscode.l10n.t('diff unavailable: {0}', escapeMd(errorMessage(err)))}_`);
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
