/**
 * The session/row layer of the Timeline view: ONE store's timeline (a workspace folder's), as the
 * server's story tree, paged (`retrace/timeline/tree` with `outline`: every session's counts plus
 * the newest page of the current one; older pages, other sessions and filter results on request),
 * rows the server adds through `retrace/timeline/didChange` (inserted without a refetch), and the
 * subagents' own timelines opened under their `task` rows (`subagents.ts`). Every request goes
 * through `rpc()`, which names this store's folder in a multi-root workspace. What a page or a
 * filter holds is decided by the server; this class only asks and keeps the answer. The tree view
 * (`provider.ts`) owns the filter, the running tool calls and the rendering; it is told to render
 * through `host.changed`.
 */
import { METHODS, type Checkpoint, type Rpc, type SessionStory, type StoryRow, type TaskRef, type TimelineDidChange, type TimelineFilter, type TimelineGetResult, type TimelineTreeResult } from '../../../client/protocol';
import { log } from '../../../logging';
import { applyChange, buildTimeline, checkpointNodeId, checkpointsOf, cursorMoved, filterDescription, flatTimeline, indexNodes, mergePage, rowsOf } from '../../models/timelineModel';
import type { RunningTool, SessionNode, TimelineNode } from '../../models/timelineModel';
import { Subagents } from './subagents';
import { sessionsWithTaskRows, taskOf } from '../../models/taskModel';

/** Rows per page; older rows come on demand ("Load older…"). */
export const PAGE_ROWS = 500;

export interface StoriesHost {
    /** The server, its requests naming this store's folder (undefined: not running). */
    readonly rpc: () => Rpc | undefined;
    /** The filter the view shows (the same for every folder). */
    readonly filter: () => TimelineFilter | undefined;
    /** The session the chat shows (the outline's focus). */
    readonly focus: () => string | undefined;
    /** The agent's tool calls running now (only the agent's own folder shows them). */
    readonly running: () => readonly RunningTool[];
    /** Something shown changed: render again. */
    readonly changed: () => void;
    /** Whether this store has the agent's subagents (`retrace/tasks/list` is the agent's folder's). */
    readonly agent: () => boolean;
}

/** What an applied change asks of the view. */
export interface ChangeEffect {
    /** The tree must be fetched again (the change could not be placed). */
    readonly refetch: boolean;
    /** The head to reveal, when the change moved it to a row shown now. */
    readonly reveal: string | undefined;
    /** A `task` row came: the subagents' state may have moved (`refreshTaskViews`). */
    readonly tasks: boolean;
}

export class Stories {
    private data: TimelineTreeResult | undefined;
    private flat: TimelineGetResult | undefined;
    private byId = new Map<string, Checkpoint>();
    private built: SessionNode[] = [];
    private index = new Map<string, TimelineNode>();
    /** Sessions the user opened (their newest page is fetched again on refresh). */
    private readonly openedSessions = new Set<string>();
    private readonly loading = new Set<string>();
    /** Children of sessions and the own timelines the user opened; fetched again when they move. */
    readonly subagents: Subagents;

    constructor(private readonly host: StoriesHost) {
        this.subagents = new Subagents(host.rpc, PAGE_ROWS);
    }

    /** The flat view (checkpoints in commit order, head, sessions) other features read. */
    get timeline(): TimelineGetResult | undefined {
        return this.flat;
    }

    get tree(): TimelineTreeResult | undefined {
        return this.data;
    }

    get head(): string | undefined {
        return this.data?.head ?? undefined;
    }

    /** The session holding the head (its newest page shows it). */
    get headSessionId(): string | undefined {
        return this.data?.headSessionId ?? undefined;
    }

    /** The sessions as built by the last `build` (ids as in a one-folder workspace). */
    get roots(): readonly SessionNode[] {
        return this.built;
    }

    /** Every node of the last `build`, by id. */
    get nodes(): ReadonlyMap<string, TimelineNode> {
        return this.index;
    }

    checkpoint(id: string): Checkpoint | undefined {
        return this.byId.get(id);
    }

    /** Whether a checkpoint's row is built now. */
    shows(checkpointId: string): boolean {
        return this.index.has(checkpointNodeId(checkpointId));
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

    /** Build the nodes from the data (the view renders them). */
    build(): void {
        const filter = this.host.filter();
        this.built =
            this.data === undefined
                ? []
                : buildTimeline(this.data, { running: this.host.running(), tasks: this.subagents.views, children: this.subagents.trees, orphans: filter === undefined, fold: filter === undefined });
        this.index = indexNodes(this.built);
    }

    private setData(tree: TimelineTreeResult): void {
        this.data = tree;
        this.flat = flatTimeline(tree);
        this.byId = new Map(checkpointsOf(tree).map(c => [c.id, c]));
    }

    /** Insert a described row in place (`refetch`: it cannot be placed, or a filter decides). */
    apply(change: TimelineDidChange, refreshPending: boolean): ChangeEffect {
        if (this.host.filter() !== undefined) {
            return { refetch: true, reveal: undefined, tasks: false }; // which rows match is the server's decision: one filtered page
        }
        const next = this.data === undefined || refreshPending ? undefined : applyChange(this.data, change);
        if (next === undefined) {
            return { refetch: true, reveal: undefined, tasks: false };
        }
        this.setData(next);
        this.host.changed();
        const head = change.head ?? undefined;
        const tasks = change.row !== null && change.row !== undefined && taskOf(change.row.checkpoint) !== undefined;
        return { refetch: false, reveal: head !== undefined && this.byId.has(head) ? head : undefined, tasks };
    }

    /** Fetch the tree; resolves to whether it changed (and, for the first tree, true). */
    async fetch(rpc: Rpc): Promise<{ changed: boolean; first: boolean }> {
        const filter = this.host.filter();
        const started = Date.now();
        let tree = await rpc.request(
            METHODS.timelineTree,
            filter === undefined ? { outline: true, focus: this.host.focus() ?? null, maxRows: PAGE_ROWS } : { filter, maxRows: PAGE_ROWS },
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
        const first = this.data === undefined;
        if (!first && JSON.stringify(tree) === JSON.stringify(this.data)) {
            return { changed: false, first };
        }
        this.setData(tree);
        return { changed: true, first };
    }

    /** Fetch one page of a story (`before`: older than that cursor; `null`: its newest page). */
    async loadPage(sessionId: string, before: string | null, retry = true): Promise<void> {
        const rpc = this.host.rpc();
        const key = `${sessionId}:${before ?? ''}`;
        const refused = rpc === undefined ? 'no server' : this.data === undefined ? 'no timeline yet' : this.loading.has(key) ? 'already asked' : undefined;
        if (rpc === undefined || refused !== undefined) {
            log.debug(`timeline page of ${sessionId} before ${before ?? 'the newest'} not asked: ${refused ?? 'no server'}`);
            return;
        }
        this.loading.add(key);
        try {
            const filter = this.host.filter();
            const page = await this.fetchPage(rpc, sessionId, before, filter);
            const again = this.placePage(sessionId, before, page, filter, retry);
            if (again !== undefined) {
                // The tree was replaced meanwhile (a new checkpoint moved the page boundary):
                // this page no longer fits; the same click asks from the story's cursor now.
                log.info(`timeline page of ${sessionId}: the tree changed meanwhile; asking again before ${again}`);
                this.loading.delete(key);
                await this.loadPage(sessionId, again, false);
            }
        } catch (err) {
            log.error('timeline page failed', err);
        } finally {
            this.loading.delete(key);
        }
    }

    private async fetchPage(rpc: Rpc, sessionId: string, before: string | null, filter: TimelineFilter | undefined): Promise<SessionStory | undefined> {
        const params = { sessionId, before, maxRows: PAGE_ROWS, ...(filter === undefined ? {} : { filter }) };
        const started = Date.now();
        const [page] = (await rpc.request(METHODS.timelineTree, params)).sessions;
        log.info(`timeline page of ${sessionId} before ${before ?? 'the newest'}: ${page?.rowsOmitted ?? 0} older left, ${Date.now() - started} ms`);
        return page;
    }

    /** Put a fetched page in the tree shown; the cursor to ask from again when the tree moved meanwhile. */
    private placePage(sessionId: string, before: string | null, page: SessionStory | undefined, filter: TimelineFilter | undefined, retry: boolean): string | undefined {
        // A page asked for under another filter belongs to a tree no longer shown.
        if (page === undefined || this.data === undefined || this.host.filter() !== filter) {
            return undefined;
        }
        const again = retry ? cursorMoved(this.data, sessionId, before) : undefined;
        if (again === undefined) {
            this.openedSessions.add(sessionId);
            this.setData(mergePage(this.data, page, before));
            this.host.changed();
        }
        return again;
    }

    /** After new data: the children of the sessions showing task rows (and, once, of the session
     * in focus: a crash leaves its cut-off child without a row), rendered when they moved. */
    refreshTaskViews(focus?: string): void {
        if (!this.host.agent()) {
            return;
        }
        void this.subagents.list(this.data === undefined ? [] : sessionsWithTaskRows(this.data), focus === undefined ? [] : [focus]).then(moved => moved && this.host.changed());
    }

    /** Fetch a subagent's own timeline (and the session's children) and show it again. */
    async reloadTask(ref: TaskRef): Promise<void> {
        await Promise.all([this.subagents.loadTree(ref), this.subagents.list([ref.sessionId])]);
        this.host.changed();
    }

    /** Forget a subagent's timeline (discarded) and show its row as the server says it is now. */
    async forgetTask(ref: TaskRef): Promise<void> {
        this.subagents.forget(ref);
        await this.subagents.list([ref.sessionId]);
        this.host.changed();
    }
}
