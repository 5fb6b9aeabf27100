/**
 * The Timeline tree view: renders the stories of each workspace folder's store (`stories.ts`: the
 * session/row layer, paged, rows added by `retrace/timeline/didChange`) with the tool calls
 * running now, and owns what is the view's: the filter, "Load older…", jump to head, reveal. A
 * workspace of one folder shows its sessions at the top level, exactly as always; a multi-root
 * workspace one node per folder, in workspace order (`models/folderGroups.ts`), each with what that
 * folder's timeline shows alone, its requests naming the folder (`client/folderRpc.ts`); folders
 * added or removed at run time come and go. The agent (its running tool calls, its subagents) is
 * the first folder's. The only state change is "update the data, fire the event"; tooltips (diff
 * previews) are filled lazily in `resolveTreeItem` (`items.ts`). A `task` row opens its
 * subagent's own timeline (fetched on expand, again on the child's `taskProgress`).
 */
import * as vscode from 'vscode';
import { VIEW_TIMELINE } from '../../../constants';
import type { Ctx } from '../../../ctx';
import type { AgentEvent, Checkpoint, Rpc, StoryRow, TaskProgress, TaskRef, TimelineDidChange, TimelineFilter, TimelineGetResult, TimelineTreeResult } from '../../../client/protocol';
import { inFolderRpc } from '../../../client/folderRpc';
import { selectedRow } from '../selection';
import { errorMessage, log } from '../../../logging';
import { checkpointNodeId, filterDescription, startsExpanded } from '../../models/timelineModel';
import type { MoreNode, RunningTool, TimelineNode } from '../../models/timelineModel';
import { shownNodeId } from '../../models/timelineFold';
import { Stories } from './stories';
import { folderItem, rowTooltip, SHOW_EARLIER, treeItem } from './items';
import { groupRoots, idInFolder, indexShown, rowContext, type FolderInfo, type ShownNode } from '../../models/folderGroups';
import { pickFilter } from './filterPick';

const FILTER = 'retrace.timeline.filter';
const CLEAR_FILTER = 'retrace.timeline.clearFilter';
const JUMP_TO_HEAD = 'retrace.timeline.jumpToHead';
const CONTEXT_FILTERED = 'retrace.timelineFiltered';
const MAX_RETRIES = 5;
const RETRY_MS = 2000;

/** One workspace folder and its timeline. */
interface Group {
    readonly folder: FolderInfo;
    readonly stories: Stories;
}

/** The workspace's folders on disk, in order (the server opens only those). */
function workspaceFolders(): FolderInfo[] {
    return (vscode.workspace.workspaceFolders ?? []).filter(f => f.uri.scheme === 'file').map(f => ({ name: f.name, root: f.uri.fsPath }));
}

export class TimelineProvider implements vscode.TreeDataProvider<ShownNode>, vscode.Disposable {
    private readonly changed = new vscode.EventEmitter<ShownNode | undefined>();
    readonly onDidChangeTreeData = this.changed.event;
    private groups: Group[] = [];
    private roots: ShownNode[] = [];
    private nodes = new Map<string, ShownNode>();
    private filter: TimelineFilter | undefined;
    private readonly running = new Map<string, RunningTool>();
    private refreshTimer: NodeJS.Timeout | undefined;
    /** Refreshes asked again because a folder's timeline could not be read yet. */
    private retries = 0;
    private retryTimer: NodeJS.Timeout | undefined;
    /** The folder the running server was started in (its first; undefined before it ran). */
    private serverFirst: string | undefined;
    private refreshing: Promise<void> | undefined;
    /** Reveal the head after the next refresh (a checkpoint came, a turn finished). */
    private revealHeadNext = false;
    private readonly disposables: vscode.Disposable[] = [];
    readonly view: vscode.TreeView<ShownNode>;
    /** The session the chat shows; its nodes are expanded. */
    activeSessionId: string | undefined;

    constructor(private readonly ctx: Ctx) {
        this.syncFolders();
        this.view = vscode.window.createTreeView(VIEW_TIMELINE, { treeDataProvider: this, showCollapseAll: true });
        this.disposables.push(
            this.view,
            this.changed,
            ctx.onAgentEvent(e => this.onAgentEvent(e)),
            ctx.onTimelineChange(change => this.onTimelineChange(change)),
            ctx.onFolderTimelineChange(change => this.onFolderChange(change)),
            vscode.workspace.onDidChangeWorkspaceFolders(() => {
                this.syncFolders();
                this.render();
                this.scheduleRefresh();
            }),
            // Showing the timeline is using Retrace: the server starts then (activation is lazy).
            this.view.onDidChangeVisibility(e => e.visible && void ctx.start()),
            vscode.commands.registerCommand(SHOW_EARLIER, (sessionId?: string, before?: string | null) => this.showEarlier(sessionId, before)),
            vscode.commands.registerCommand(FILTER, (spec?: TimelineFilter) => this.chooseFilter(spec)),
            vscode.commands.registerCommand(CLEAR_FILTER, () => this.setFilter(undefined)),
            vscode.commands.registerCommand(JUMP_TO_HEAD, () => this.jumpToHead()),
            ctx.onDidChangeState(s => {
                if (s.kind === 'running') {
                    this.serverFirst = workspaceFolders()[0]?.root; // the folder it was started in
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

    /** The folders shown, their stories kept across changes (a new folder's are read on refresh). */
    private syncFolders(): void {
        const folders = workspaceFolders();
        const known = new Map(this.groups.map(g => [g.folder.root, g.stories]));
        this.groups = folders.map(folder => ({ folder, stories: known.get(folder.root) ?? this.storiesFor(folder.root) }));
    }

    private storiesFor(root: string): Stories {
        return new Stories({
            rpc: () => this.rpcOf(root),
            filter: () => this.filter,
            focus: () => this.activeSessionId,
            running: () => (this.isAgentFolder(root) ? [...this.running.values()] : []),
            changed: () => this.render(),
            agent: () => this.isAgentFolder(root),
        });
    }

    /** More than one folder: the view groups by folder and every request names its folder. */
    get grouped(): boolean {
        return this.groups.length > 1;
    }

    /** The folders shown, in workspace order. */
    get folders(): readonly FolderInfo[] {
        return this.groups.map(g => g.folder);
    }

    /** The agent works in the first folder (its chat, running calls and subagents are shown there). */
    private isAgentFolder(root: string): boolean {
        return this.agentGroup()?.folder.root === root;
    }

    /** The folder the server started with (its first: the agent's, the one requests naming no
     * folder reach); the workspace's first folder until the server says otherwise. */
    get agentFolder(): string | undefined {
        return this.serverFirst ?? this.groups[0]?.folder.root;
    }

    /** The agent's folder's group (the first one shown if it left the workspace). */
    private agentGroup(): Group | undefined {
        return this.groups.find(g => g.folder.root === this.serverFirst) ?? this.groups[0];
    }

    /** The server, its requests naming the folder at `root` when the view groups by folder. */
    rpcOf(root: string | undefined): Rpc | undefined {
        const rpc = this.ctx.rpc;
        // One folder, the server's own: requests exactly as always. Otherwise the folder is named
        // (a reordered workspace: the server's first folder stays the one it started with).
        const named = this.grouped || (root !== undefined && root !== this.agentFolder) ? root : undefined;
        return rpc === undefined ? undefined : inFolderRpc(rpc, named);
    }

    /** The timeline of the folder at `root` (undefined: the first folder's). */
    private storiesOf(root: string | undefined): Stories | undefined {
        return root === undefined ? this.agentGroup()?.stories : this.groups.find(g => g.folder.root === root)?.stories;
    }

    /** The first folder's flat view (checkpoints in commit order, head, sessions) other features read. */
    get timeline(): TimelineGetResult | undefined {
        return this.storiesOf(undefined)?.timeline;
    }

    /** A folder's flat view (undefined: the first's; a folder not shown: undefined). */
    timelineOf(root: string | undefined): TimelineGetResult | undefined {
        return this.storiesOf(root)?.timeline;
    }

    /** The story tree of a folder (undefined: the first). */
    treeOf(root?: string): TimelineTreeResult | undefined {
        return this.storiesOf(root)?.tree;
    }

    get tree(): TimelineTreeResult | undefined {
        return this.treeOf(undefined);
    }

    /** A checkpoint on a page shown, of a folder (undefined: the first). */
    checkpoint(id: string, root?: string): Checkpoint | undefined {
        return this.storiesOf(root)?.checkpoint(id);
    }

    /** The row the server sent for a checkpoint of a folder (undefined: not on a page shown). */
    rowOf(id: string, root?: string): StoryRow | undefined {
        return this.storiesOf(root)?.rowOf(id);
    }

    /** The head of a folder's store (undefined: the first folder's). */
    headOf(root: string | undefined): string | undefined {
        return this.storiesOf(root)?.head;
    }

    get head(): string | undefined {
        return this.headOf(undefined);
    }

    private onAgentEvent(e: AgentEvent): void {
        (this.agentHandlers[e.kind] as ((e: AgentEvent) => void) | undefined)?.(e);
    }

    /** What each agent event does to the tree (`undefined`: nothing; every kind is named). */
    private readonly agentHandlers: { readonly [K in AgentEvent['kind']]: ((e: Extract<AgentEvent, { kind: K }>) => void) | undefined } = {
        turnStarted: e => {
            this.activeSessionId = e.sessionId;
            this.scheduleRefresh();
        },
        toolCallStarted: e => {
            this.running.set(e.toolCallId, { sessionId: e.sessionId, turnId: e.turnId ?? undefined, toolCallId: e.toolCallId, tool: e.tool });
            this.render();
        },
        toolCallFinished: e => {
            this.running.delete(e.toolCallId);
            this.render();
        },
        // Its row arrives with `timeline/didChange`, which reveals the head.
        checkpointCreated: () => (this.revealHeadNext = true),
        // The turn's last rows may have come in any order: show the head once it ends.
        turnFinished: () => {
            this.revealHeadNext = true;
            this.scheduleRefresh();
        },
        conversationChanged: () => this.scheduleRefresh(),
        taskProgress: e => this.onTaskProgress(e),
        textDelta: undefined,
        permissionRequest: undefined,
        backgroundTask: undefined,
        contextCompacted: undefined,
        usage: undefined,
        error: undefined,
    };

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
        const subagents = this.agentGroup()?.stories.subagents;
        if (subagents === undefined) {
            return;
        }
        if (subagents.isOpen(ref)) {
            void this.reloadTask(ref);
        } else if (e.status !== 'running' || running === undefined) {
            // It ended, or it is not a tool call of this turn (a resumed child): its state moved.
            void subagents.list([e.sessionId]).then(moved => moved && this.render());
        }
    }

    /** Fetch a subagent's own timeline (and the session's children) and show it again. */
    async reloadTask(ref: TaskRef): Promise<void> {
        return this.storiesOf(undefined)?.reloadTask(ref);
    }

    /** Forget a subagent's timeline (discarded) and show its row as the server says it is now. */
    async forgetTask(ref: TaskRef): Promise<void> {
        return this.storiesOf(undefined)?.forgetTask(ref);
    }

    /** Insert a described row in place; fetch the tree only when the row cannot be placed. */
    private onTimelineChange(change: TimelineDidChange): void {
        this.revealHeadNext ||= change.head !== null && change.head !== undefined; // a restore's change has no row: after the refetch
        const stories = this.storiesOf(undefined);
        const effect = stories?.apply(change, this.refreshTimer !== undefined);
        if (stories === undefined || effect === undefined || effect.refetch) {
            this.scheduleRefresh();
            return;
        }
        if (effect.tasks) {
            stories.refreshTaskViews(this.currentSessionId(undefined));
        }
        // Follow the agent and the restores: the head row (its group) comes into view, whatever
        // order parallel tool calls' checkpoints arrive in.
        this.revealHeadNext = false;
        if (effect.reveal !== undefined) {
            void this.reveal(effect.reveal);
        }
    }

    /** Another folder's row: placed in its group (the view follows the agent's folder only). */
    private onFolderChange(change: TimelineDidChange): void {
        const root = change.folder ?? undefined;
        const stories = root === undefined ? undefined : this.storiesOf(root);
        if (stories === undefined) {
            log.debug(`timeline change of folder ${root ?? '?'}: not shown`);
            return;
        }
        if (stories.apply(change, this.refreshTimer !== undefined).refetch) {
            this.scheduleRefresh();
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
        if (this.ctx.rpc === undefined) {
            return;
        }
        const fetched = await Promise.all(this.groups.map(g => this.fetch(g)));
        this.retryUnread(fetched.some(f => f === undefined));
        if (fetched.some(f => f?.changed === true)) {
            this.render();
            this.storiesOf(undefined)?.refreshTaskViews(this.currentSessionId(undefined));
        }
        if (fetched[0] === undefined) {
            return; // the first folder's timeline could not be read (logged)
        }
        this.revealHeadNext ||= fetched[0].first; // the first tree opens where the user is
        const reveal = this.revealHeadNext ? this.head : undefined;
        this.revealHeadNext = false;
        if (reveal !== undefined) {
            await this.reveal(reveal);
        }
    }

    /** A folder added while the server runs is opened in the background: until it is, its
     * timeline cannot be read. Asked again a few times (grouped view only; one folder: as ever). */
    private retryUnread(unread: boolean): void {
        if (!unread || !this.grouped || this.retries >= MAX_RETRIES) {
            this.retries = unread ? this.retries : 0;
            return;
        }
        this.retries++;
        clearTimeout(this.retryTimer);
        this.retryTimer = setTimeout(() => this.scheduleRefresh(), RETRY_MS);
    }

    /** One folder's tree; undefined when it could not be read (the others still are). */
    private async fetch(group: Group): Promise<{ changed: boolean; first: boolean } | undefined> {
        const rpc = this.rpcOf(group.folder.root);
        try {
            return rpc === undefined ? undefined : await group.stories.fetch(rpc);
        } catch (err) {
            log.error(`timeline refresh failed${this.grouped ? ` (folder ${group.folder.root})` : ''}`, err);
            return undefined;
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
        return this.loadPage(more.sessionId, more.before, more.folder);
    }

    /** Fetch one page of a folder's story (`before`: older than that cursor; `null`: its newest
     * page; `root`: the folder, undefined: the first). */
    async loadPage(sessionId: string, before: string | null, root?: string): Promise<void> {
        return this.storiesOf(root)?.loadPage(sessionId, before);
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
        const stories = this.storiesOf(undefined);
        const holder = stories?.headSessionId;
        if (stories?.shows(head) === false && holder !== undefined) {
            await this.loadPage(holder, null);
        }
        await this.reveal(head);
    }

    /** Build the rows from the data and have the view ask for every one again. */
    render(): void {
        for (const g of this.groups) {
            g.stories.build();
        }
        this.roots = groupRoots(
            this.groups.map(g => ({ folder: g.folder, roots: g.stories.roots, tree: g.stories.tree })),
            Date.now(),
        );
        this.nodes = indexShown(this.roots);
        this.changed.fire(undefined);
    }

    /** Show one checkpoint of a session: the timeline opens, the checkpoint's story page is
     * loaded when its row is not shown yet, and the row is selected (the Health panel's links). */
    async showCheckpoint(checkpointId: string, sessionId: string): Promise<void> {
        await vscode.commands.executeCommand(`${VIEW_TIMELINE}.focus`);
        if (this.tree === undefined) {
            await this.refresh();
        }
        if (this.storiesOf(undefined)?.shows(checkpointId) === false) {
            await this.loadPage(sessionId, null);
        }
        await this.reveal(checkpointId);
    }

    /** Reveal a checkpoint's row of a folder (undefined: the first), or the folded group holding
     * it (which stays closed). */
    async reveal(checkpointId: string, root?: string): Promise<void> {
        const group = root === undefined ? this.agentGroup() : this.groups.find(g => g.folder.root === root);
        if (group === undefined) {
            return;
        }
        const local = shownNodeId(checkpointNodeId(checkpointId), group.stories.nodes);
        const node = this.nodes.get(this.grouped ? idInFolder(group.folder.root, local) : local);
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

    getChildren(given?: ShownNode): ShownNode[] | Promise<ShownNode[]> {
        if (given === undefined) {
            return this.roots;
        }
        // The workbench may hand back a node object of an earlier tree with the same id (a turn
        // shown before a filter changed): its children are those of the tree shown now.
        const element = this.nodes.get(given.id);
        if (element === undefined) {
            return []; // not in the tree shown now
        }
        if (element.kind === 'folder') {
            return [...element.children];
        }
        if (element.kind === 'session' && element.story.outline) {
            void this.loadPage(element.sessionId, null, element.folder); // expanding an outline loads its newest page
        }
        const task = this.taskToOpen(element);
        if (task !== undefined) {
            return this.openTask(element.id, task); // expanding a task row loads the child's timeline
        }
        return element.kind === 'runningTool' || element.kind === 'more' ? [] : [...element.children];
    }

    /** The subagent whose own timeline expanding this row must load (the agent folder's, not yet open). */
    private taskToOpen(element: TimelineNode): TaskRef | undefined {
        const agent = element.folder === undefined || this.isAgentFolder(element.folder);
        const task = agent && (element.kind === 'checkpoint' || element.kind === 'subagent') ? element.task : undefined;
        return task !== undefined && this.storiesOf(undefined)?.subagents.isOpen(task.ref) === false ? task.ref : undefined;
    }

    private async openTask(nodeId: string, ref: TaskRef): Promise<ShownNode[]> {
        const subagents = this.storiesOf(undefined)?.subagents;
        if (subagents === undefined) {
            return [];
        }
        await Promise.all([subagents.loadTree(ref), subagents.list([ref.sessionId])]);
        this.render(); // the task row's description may have moved too
        const node = this.nodes.get(nodeId);
        return node?.kind === 'checkpoint' || node?.kind === 'subagent' ? [...node.children] : [];
    }

    getParent(element: ShownNode): ShownNode | undefined {
        return element.kind === 'folder' || element.parentId === undefined ? undefined : this.nodes.get(element.parentId);
    }

    /** The session whose latest turn opens expanded in a folder (undefined: the first). */
    private currentSessionId(root: string | undefined): string | undefined {
        const agentStories = (this.storiesOf(root)?.roots ?? []).filter(r => !r.story.workspace);
        return this.activeSessionId ?? agentStories[agentStories.length - 1]?.sessionId;
    }

    getTreeItem(node: ShownNode): vscode.TreeItem {
        if (node.kind === 'folder') {
            return folderItem(node);
        }
        const item = treeItem(node, startsExpanded(node, this.currentSessionId(node.folder)));
        item.contextValue = rowContext(item.contextValue ?? '', node.folder, this.agentFolder);
        return item;
    }

    async resolveTreeItem(item: vscode.TreeItem, node: ShownNode, token: vscode.CancellationToken): Promise<vscode.TreeItem> {
        if (node.kind !== 'checkpoint') {
            return item;
        }
        item.tooltip = await rowTooltip(node, this.rpcOf(node.folder), token);
        return item;
    }

    dispose(): void {
        if (this.refreshTimer !== undefined) {
            clearTimeout(this.refreshTimer);
        }
        clearTimeout(this.retryTimer);
        for (const d of this.disposables) {
            d.dispose();
        }
    }
}
