/**
 * The timeline as data: the server's story tree (`retrace/timeline/tree`: sessions → turns →
 * described checkpoint rows) → tree nodes; how each node looks is `timelineLook.ts`. The server
 * decides what a row says; this module only arranges it. Pure (of `vscode` only `l10n`: session
 * titles, relative times and filter words are translated) so the mapping is unit-tested; `providers/timeline/items.ts` only turns these into TreeItems.
 *
 * Node ids are stable across refreshes (derived from server ids), which keeps expansion and
 * selection and makes `reveal` work. `contextValue` is the node kind, so package.json menus
 * target checkpoints with `viewItem == checkpoint`.
 */
import * as vscode from 'vscode';
import type { Checkpoint, SessionStory, StoryRow, StoryTurn, TaskRef, TaskView, TimelineDidChange, TimelineFilter, TimelineGetResult, TimelineTreeResult } from '../../client/protocol';
import { firstLine } from '../../labels';
import {
    childNodeId,
    childRows,
    hasTimeline,
    orphanTasks,
    taskKey,
    taskOf,
    withView,
    type TaskInfo,
} from './taskModel';
import { abandonedBy, abandonedLabel, foldRows, groupDetail, groupLabel, type GroupKind } from './timelineFold';

export interface SessionNode {
    readonly kind: 'session';
    readonly id: string;
    /** The root of the folder whose store holds it (a multi-root workspace; else undefined). */
    readonly folder?: string;
    /** Its folder's node (a multi-root workspace; else undefined: a top-level node). */
    readonly parentId?: string;
    readonly sessionId: string;
    readonly story: SessionStory;
    readonly title: string;
    readonly running: boolean;
    readonly children: TimelineNode[];
}

export interface TurnNode {
    readonly kind: 'turn';
    readonly id: string;
    /** The root of the folder whose store holds it (a multi-root workspace; else undefined). */
    readonly folder?: string;
    readonly parentId: string;
    readonly sessionId: string;
    readonly turnId: string;
    readonly turn: StoryTurn;
    readonly title: string;
    /** Title of the checkpoint this turn's conversation was forked from, when it was. */
    readonly forkedFromTitle: string | undefined;
    /** The session's most recent turn. */
    readonly latest: boolean;
    readonly children: TimelineNode[];
}

export interface CheckpointNode {
    readonly kind: 'checkpoint';
    readonly id: string;
    /** The root of the folder whose store holds it (a multi-root workspace; else undefined). */
    readonly folder?: string;
    readonly parentId: string;
    readonly checkpoint: Checkpoint;
    readonly row: StoryRow;
    readonly isHead: boolean;
    /** Tool call status when it was not `ok` (error, denied, interrupted…). */
    readonly toolStatus: string | undefined;
    /** The prompt of the turn this checkpoint belongs to. */
    readonly prompt: string | undefined;
    /** A row of a subagent's own timeline: every request about it names that child. */
    readonly scope: TaskRef | undefined;
    /** A `task` row: the subagent whose own timeline is nested under it. */
    readonly task: TaskInfo | undefined;
    /** A task row's child rows, once its timeline was loaded (else empty); a restore row's safety
     * capture and the work it left behind (`timelineFold.ts`). */
    readonly children: readonly (CheckpointNode | GroupNode)[];
}

/**
 * Rows folded into one node (`timelineFold.ts`): a run of the same tool on one file
 * (`repeat`), a run of read-only calls (`reads`), or the work a restore left behind
 * (`abandoned`, under the restore row: copies of those rows).
 */
export interface GroupNode {
    readonly kind: 'group';
    readonly id: string;
    /** The root of the folder whose store holds it (a multi-root workspace; else undefined). */
    readonly folder?: string;
    readonly parentId: string;
    readonly group: GroupKind | 'abandoned';
    readonly label: string;
    readonly detail: string;
    /** One of its rows is the head. */
    readonly isHead: boolean;
    readonly children: readonly CheckpointNode[];
}

/** A tool call that is running now (no checkpoint yet). */
export interface RunningToolNode {
    readonly kind: 'runningTool';
    readonly id: string;
    /** The root of the folder whose store holds it (a multi-root workspace; else undefined). */
    readonly folder?: string;
    readonly parentId: string;
    readonly tool: string;
    readonly detail: string | undefined;
}

/**
 * "Load N earlier steps…": the server left the oldest rows of a long story out (paging), or sent
 * the story as an outline (no rows yet; `before` is then `null`: load its newest page).
 */
export interface MoreNode {
    readonly kind: 'more';
    readonly id: string;
    /** The root of the folder whose store holds it (a multi-root workspace; else undefined). */
    readonly folder?: string;
    readonly parentId: string;
    readonly sessionId: string;
    readonly omitted: number;
    readonly before: string | null;
}

/**
 * A subagent the server lists (`retrace/tasks/list`) whose `task` call made no checkpoint (a crash
 * cut it off, its turn was cancelled): shown under its turn so its own timeline can be opened,
 * applied or discarded.
 */
export interface SubagentNode {
    readonly kind: 'subagent';
    readonly id: string;
    /** The root of the folder whose store holds it (a multi-root workspace; else undefined). */
    readonly folder?: string;
    readonly parentId: string;
    readonly task: TaskInfo;
    readonly view: TaskView;
    readonly children: readonly CheckpointNode[];
}

export type TimelineNode = SessionNode | TurnNode | CheckpointNode | RunningToolNode | MoreNode | SubagentNode | GroupNode;

export interface RunningTool {
    readonly sessionId: string;
    readonly turnId: string | undefined;
    readonly toolCallId: string;
    readonly tool: string;
    /** What it is doing, when the server says (a subagent's progress). */
    readonly detail?: string;
}

export interface TimelineExtras {
    readonly running: readonly RunningTool[];
    /** `retrace/tasks/list` answers by `taskKey`. */
    readonly tasks?: ReadonlyMap<string, TaskView>;
    /** Loaded child timelines (`retrace/timeline/tree` with `task`) by `taskKey`. */
    readonly children?: ReadonlyMap<string, TimelineTreeResult>;
    /** Show listed subagents that have no row (not while a filter shows only matching rows). */
    readonly orphans?: boolean;
    /** Fold rows (`timelineFold.ts`; default: yes). Not while a filter shows every matching row. */
    readonly fold?: boolean;
}

export const sessionNodeId = (sessionId: string): string => `session:${sessionId}`;
export const turnNodeId = (turnId: string): string => `turn:${turnId}`;
export const checkpointNodeId = (checkpointId: string): string => `cp:${checkpointId}`;

export function rowsOf(story: SessionStory): StoryRow[] {
    return story.items.flatMap(i => (i.kind === 'turn' ? i.rows : [i]));
}

/** Every checkpoint the tree holds, in commit order. */
export function checkpointsOf(tree: TimelineTreeResult): Checkpoint[] {
    const all = tree.sessions.flatMap(s => rowsOf(s).map(r => r.checkpoint));
    return all.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
}

/** The flat view other features read (change highlighting): checkpoints, head, sessions. */
export function flatTimeline(tree: TimelineTreeResult): TimelineGetResult {
    const checkpoints = checkpointsOf(tree);
    const named = new Map(tree.sessions.flatMap(s => rowsOf(s)).flatMap(r => (r.bookmark ? [[r.checkpoint.id, r.bookmark] as const] : [])));
    // Only the loaded rows' bookmarks, newest first (the restore pick asks the server for all of them).
    const bookmarks = [...checkpoints].reverse().flatMap(c => (named.has(c.id) ? [{ checkpointId: c.id, name: named.get(c.id) ?? '' }] : []));
    return { checkpoints, head: tree.head, sessions: tree.sessions.map(s => s.session), bookmarks };
}

type Extras = TimelineExtras | undefined;

function rowNode(row: StoryRow, parentId: string, prompt: string | undefined, extras: Extras, scope?: TaskRef): CheckpointNode {
    const status = row.toolStatus ?? undefined;
    const named = scope === undefined ? taskOf(row.checkpoint) : undefined; // a child's children are not nested (yet)
    const task = named === undefined ? undefined : withView(named, extras?.tasks?.get(taskKey(named.ref)));
    const id = scope === undefined ? checkpointNodeId(row.checkpoint.id) : childNodeId(scope, row.checkpoint.id);
    return {
        kind: 'checkpoint',
        id,
        parentId,
        checkpoint: row.checkpoint,
        row,
        isHead: row.isHead,
        toolStatus: status === 'ok' ? undefined : status,
        prompt,
        scope,
        task,
        children: task === undefined ? [] : childNodes(id, task, extras),
    };
}

/** The rows of a subagent's own timeline under `parentId`, once loaded (a discarded one has none). */
function childNodes(parentId: string, task: TaskInfo, extras: Extras): CheckpointNode[] {
    const tree = hasTimeline(task) ? extras?.children?.get(taskKey(task.ref)) : undefined;
    return tree === undefined ? [] : childRows(tree).map(r => rowNode(r.row, parentId, r.prompt, undefined, task.ref));
}

/** Listed subagents of the shown stories that have no row, each under its (shown) turn. */
function addOrphans(sessions: readonly SessionNode[], turns: ReadonlyMap<string, TurnNode>, extras: TimelineExtras): void {
    if (extras.orphans === false || extras.tasks === undefined) {
        return;
    }
    for (const session of sessions) {
        const named = new Set(rowsOf(session.story).flatMap(r => taskOf(r.checkpoint)?.ref.taskId ?? []));
        const calls = new Set(extras.running.map(r => r.toolCallId));
        for (const { ref, view } of orphanTasks(session.sessionId, named, extras.tasks, calls)) {
            const turn = view.turnId === null || view.turnId === undefined ? undefined : turns.get(view.turnId);
            if (turn === undefined || turn.sessionId !== session.sessionId) {
                continue; // its turn is not shown (an outline, an older page)
            }
            const id = `subagent:${ref.taskId}`;
            const task: TaskInfo = withView({ ref, description: view.description, status: undefined, conflicts: [], resumable: false }, view);
            turn.children.push({ kind: 'subagent', id, parentId: turn.id, task, view, children: childNodes(id, task, extras) });
        }
    }
}

/** What folding needs to know about the whole tree: every row shown, by checkpoint id. */
interface FoldContext {
    readonly rows: ReadonlyMap<string, StoryRow>;
    readonly byId: ReadonlyMap<string, Checkpoint>;
    readonly extras: Extras;
}

const reparented = (node: CheckpointNode, parentId: string): CheckpointNode => ({ ...node, parentId });

/** The restore row with its safety capture and the work it left behind as children. */
function restoreNode(row: CheckpointNode, safety: CheckpointNode | undefined, fold: FoldContext): CheckpointNode {
    const cp = row.checkpoint;
    const left = abandonedBy(safety?.checkpoint.parent ?? cp.parent, cp.restoredFrom, fold.byId).reverse();
    const children: (CheckpointNode | GroupNode)[] = safety === undefined ? [] : [reparented(safety, row.id)];
    const shown = left.flatMap(c => fold.rows.get(c.id) ?? []);
    if (shown.length > 0) {
        const id = `abandoned:${cp.id}`;
        const copies = shown.map(r => ({ ...rowNode(r, id, undefined, fold.extras), id: `${id}:${r.checkpoint.id}`, isHead: false }));
        children.push({ kind: 'group', id, parentId: row.id, group: 'abandoned', ...abandonedLabel(shown.map(r => r.title)), isHead: false, children: copies });
    }
    return { ...row, children };
}

/** A list of rows folded (`timelineFold.ts`): restores with their safety capture, runs grouped. */
function folded(rows: readonly CheckpointNode[], parentId: string, fold: FoldContext): TimelineNode[] {
    if (fold.extras?.fold === false) {
        return [...rows];
    }
    return foldRows(rows.map(r => ({ ...r, nested: r.task !== undefined || r.scope !== undefined || Boolean(r.row.bookmark) }))).map((f): TimelineNode => {
        const strip = ({ nested: _nested, ...node }: CheckpointNode & { nested: boolean }): CheckpointNode => node;
        if (f.kind === 'row') {
            return strip(f.row);
        }
        if (f.kind === 'restore') {
            return restoreNode(strip(f.row), f.safety === undefined ? undefined : strip(f.safety), fold);
        }
        const first = f.rows[0];
        const id = `group:${first?.checkpoint.id ?? parentId}`;
        const titles = f.rows.map(r => r.row.title);
        return {
            kind: 'group',
            id,
            parentId,
            group: f.group,
            label: groupLabel(f.group, f.rows),
            detail: groupDetail(f.group, f.rows, titles),
            isHead: f.rows.some(r => r.isHead),
            children: f.rows.map(r => reparented(strip(r), id)),
        };
    });
}

function turnTitle(turn: StoryTurn): string {
    const prompt = firstLine(turn.prompt);
    return prompt === '' ? vscode.l10n.t('Turn {0}', turn.number) : `${turn.number}. ${prompt}`;
}

/** Build the tree. Story items stay in the server's (chronological) order. */
export function buildTimeline(tree: TimelineTreeResult, extras: TimelineExtras): SessionNode[] {
    const titles = new Map<string, string>();
    const rows = new Map<string, StoryRow>();
    for (const story of tree.sessions) {
        for (const row of rowsOf(story)) {
            titles.set(row.checkpoint.id, row.title);
            rows.set(row.checkpoint.id, row);
        }
    }
    const fold: FoldContext = { rows, byId: new Map([...rows].map(([id, r]) => [id, r.checkpoint])), extras };
    const turns = new Map<string, TurnNode>();
    const sessions = tree.sessions.map((story): SessionNode => {
        const id = sessionNodeId(story.session.id);
        const children: TimelineNode[] = [];
        if (story.rowsOmitted > 0) {
            const before = story.outline ? null : story.nextBefore;
            children.push({ kind: 'more', id: `more:${story.session.id}`, parentId: id, sessionId: story.session.id, omitted: story.rowsOmitted, before });
        }
        const lastTurn = story.items.filter(i => i.kind === 'turn').at(-1);
        let loose: CheckpointNode[] = []; // rows in place between turns, folded together
        const flush = (): void => {
            children.push(...folded(loose, id, fold));
            loose = [];
        };
        for (const item of story.items) {
            if (item.kind === 'row') {
                loose.push(rowNode(item, id, undefined, extras));
                continue;
            }
            flush();
            const turnId = turnNodeId(item.turnId);
            const forked = item.forkedFrom ?? undefined;
            const node: TurnNode = {
                kind: 'turn',
                id: turnId,
                parentId: id,
                sessionId: story.session.id,
                turnId: item.turnId,
                turn: item,
                title: turnTitle(item),
                forkedFromTitle: forked === undefined ? undefined : (titles.get(forked) ?? forked.slice(0, 12)),
                latest: item === lastTurn,
                children: folded(item.rows.map(r => rowNode(r, turnId, item.prompt, extras)), turnId, fold),
            };
            turns.set(item.turnId, node);
            children.push(node);
        }
        flush();
        return { kind: 'session', id, sessionId: story.session.id, story, title: sessionTitle(story), running: story.session.running, children };
    });
    addOrphans(sessions, turns, extras);
    const bySession = new Map(sessions.map(s => [s.sessionId, s]));
    for (const r of extras.running) {
        const parent = (r.turnId !== undefined ? turns.get(r.turnId) : undefined) ?? bySession.get(r.sessionId);
        parent?.children.push({ kind: 'runningTool', id: `running:${r.toolCallId}`, parentId: parent.id, tool: r.tool, detail: r.detail });
    }
    return sessions;
}

/** A session is named by when it started, not by its first prompt (its first turn shows that). */
export function sessionTitle(story: SessionStory): string {
    if (story.workspace) {
        return vscode.l10n.t('Workspace history');
    }
    const started = story.session.createdAt;
    const agent = story.session.agentTitle ?? null; // another agent's session, as the server names it
    if (agent === null) {
        return started === null ? vscode.l10n.t('Session') : vscode.l10n.t('Session of {0}', shortDate(started));
    }
    return started === null ? vscode.l10n.t('{0}: session', agent) : vscode.l10n.t('{0}: session of {1}', agent, shortDate(started));
}

export function shortDate(iso: string): string {
    const d = new Date(iso);
    if (Number.isNaN(d.getTime())) {
        return iso;
    }
    const pad = (n: number): string => String(n).padStart(2, '0');
    return `${monthName(d.getMonth())} ${d.getDate()}, ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** A month's short name (0 = January), translated. */
function monthName(month: number): string {
    const months = [
        vscode.l10n.t('Jan'),
        vscode.l10n.t('Feb'),
        vscode.l10n.t('Mar'),
        vscode.l10n.t('Apr'),
        vscode.l10n.t('May'),
        vscode.l10n.t('Jun'),
        vscode.l10n.t('Jul'),
        vscode.l10n.t('Aug'),
        vscode.l10n.t('Sep'),
        vscode.l10n.t('Oct'),
        vscode.l10n.t('Nov'),
        vscode.l10n.t('Dec'),
    ];
    return months[month] ?? '';
}

/** "just now", "5 min ago", "3 h ago", "2 d ago", then the date. */
export function relativeTime(iso: string | null | undefined, now: number): string {
    if (iso === null || iso === undefined) {
        return '';
    }
    const then = Date.parse(iso);
    if (Number.isNaN(then)) {
        return '';
    }
    const s = Math.max(0, Math.round((now - then) / 1000));
    if (s < 45) {
        return vscode.l10n.t('just now');
    }
    // One message per unit and number form (a translation may word "1" apart from "5").
    const minutes = Math.max(1, Math.round(s / 60));
    if (minutes < 60) {
        return minutes === 1 ? vscode.l10n.t('1 min ago') : vscode.l10n.t('{0} min ago', minutes);
    }
    const hours = Math.round(s / 3600);
    if (hours < 24) {
        return hours === 1 ? vscode.l10n.t('1 h ago') : vscode.l10n.t('{0} h ago', hours);
    }
    const days = Math.round(s / 86400);
    if (days < 14) {
        return days === 1 ? vscode.l10n.t('1 d ago') : vscode.l10n.t('{0} d ago', days);
    }
    return shortDate(iso);
}

function storyIndexOf(tree: TimelineTreeResult, change: TimelineDidChange, parent: string | null): number {
    const storyId = change.storyId ?? null;
    if (storyId !== null) {
        return tree.sessions.findIndex(s => s.session.id === storyId);
    }
    const turnId = change.turnId ?? null;
    if (turnId !== null) {
        return tree.sessions.findIndex(s => s.items.some(i => i.kind === 'turn' && i.turnId === turnId));
    }
    return parent === null ? -1 : tree.sessions.findIndex(s => rowsOf(s).some(r => r.checkpoint.id === parent));
}

function withHead(story: SessionStory, head: string | null): SessionStory {
    const mark = (r: StoryRow): StoryRow => (r.isHead === (r.checkpoint.id === head) ? r : { ...r, isHead: !r.isHead });
    return { ...story, items: story.items.map(i => (i.kind === 'turn' ? { ...i, rows: i.rows.map(mark) } : mark(i))) };
}

/** `story` with `row` added as its newest row (in its turn, added when new); `undefined`: no place. */
function insertRow(story: SessionStory, row: StoryRow, change: TimelineDidChange): SessionStory | undefined {
    const counted = (s: SessionStory, turns: number): SessionStory => ({
        ...s,
        rowCount: s.rowCount + 1,
        turnCount: s.turnCount + turns,
        session: { ...s.session, checkpointCount: s.session.checkpointCount + 1 },
    });
    if (story.outline) {
        return counted({ ...story, rowsOmitted: story.rowsOmitted + 1 }, 0); // not shown yet: only counted
    }
    const turnId = change.turnId ?? null;
    if (turnId === null) {
        return counted({ ...story, items: [...story.items, row] }, 0);
    }
    const index = story.items.findIndex(i => i.kind === 'turn' && i.turnId === turnId);
    const turn = story.items[index];
    if (turn !== undefined && turn.kind === 'turn') {
        const items = [...story.items];
        items[index] = { ...turn, rows: [...turn.rows, row] };
        return counted({ ...story, items }, 0);
    }
    const header = change.turn ?? null;
    return header === null ? undefined : counted({ ...story, items: [...story.items, { ...header, rows: [row] }] }, 1);
}

/**
 * Apply a `timeline/didChange` that carries a described row without asking the server again:
 * into the story the server names (else the one holding its turn, else its parent), in its turn
 * (a turn the change carries is added when new); an outline story only counts it. Returns the new
 * tree, or `undefined` when the change cannot be placed (no row, an unknown story or turn): the
 * caller then fetches the tree.
 */
export function applyChange(tree: TimelineTreeResult, change: TimelineDidChange): TimelineTreeResult | undefined {
    const row = change.row;
    if (row === null || row === undefined) {
        return undefined;
    }
    const cp = row.checkpoint;
    const head = change.head;
    const known = tree.sessions.some(s => rowsOf(s).some(r => r.checkpoint.id === cp.id)); // a refetch won the race
    const index = known ? -1 : storyIndexOf(tree, change, cp.parent ?? null);
    const target = tree.sessions[index];
    const placed = target === undefined ? undefined : insertRow(target, row, change);
    if (!known && placed === undefined) {
        return undefined;
    }
    const sessions = tree.sessions.map((s, i) => withHead(i === index && placed !== undefined ? placed : s, head));
    return { ...tree, sessions, head, headSessionId: known ? tree.headSessionId : (target?.session.id ?? tree.headSessionId) };
}

/**
 * A page the server sent for one story (`retrace/timeline/tree` with `sessionId`): an outline's
 * newest page replaces it; an older page (`before`) goes in front of what is shown, a turn cut by
 * the page boundary becoming one turn again.
 */
export function mergePage(tree: TimelineTreeResult, page: SessionStory, before: string | null): TimelineTreeResult {
    const sessions = tree.sessions.map((s): SessionStory => {
        if (s.session.id !== page.session.id) {
            return s;
        }
        // Only the page the story is waiting for fits: an outline's newest page, or the page
        // older than its cursor. A late answer (the tree was replaced or paged meanwhile) would
        // repeat rows or mix another filter's rows in, so it changes nothing.
        if (before === null) {
            return s.outline ? page : s;
        }
        if (s.outline || s.nextBefore !== before) {
            return s;
        }
        const older = [...page.items];
        const shown = [...s.items];
        const last = older.at(-1);
        const first = shown[0];
        if (last?.kind === 'turn' && first?.kind === 'turn' && last.turnId === first.turnId) {
            older[older.length - 1] = { ...last, rows: [...last.rows, ...first.rows] };
            shown.shift();
        }
        return { ...s, items: [...older, ...shown], rowsOmitted: page.rowsOmitted, nextBefore: page.nextBefore };
    });
    return { ...tree, sessions };
}

/**
 * For an older page (`before`) just answered: the cursor to ask again from when the tree was
 * replaced meanwhile (a refetch moved the story's page boundary, so `mergePage` would drop the
 * page), else `undefined` (the page fits, the story is an outline again, or nothing older is
 * left). Without it a "Load older…" click racing a new checkpoint did nothing.
 */
export function cursorMoved(tree: TimelineTreeResult, sessionId: string, before: string | null): string | undefined {
    const story = tree.sessions.find(s => s.session.id === sessionId);
    const now = story === undefined || story.outline ? null : (story.nextBefore ?? null);
    return before !== null && now !== null && now !== before ? now : undefined;
}

/** What a filter shows as the view's description ("" for none). */
export function filterDescription(filter: TimelineFilter | undefined): string {
    if (filter === undefined) {
        return '';
    }
    const parts = [
        filter.tool ? vscode.l10n.t('tool {0}', filter.tool) : '',
        filter.path ? vscode.l10n.t('path “{0}”', filter.path) : '',
        filter.text ? vscode.l10n.t('text “{0}”', filter.text) : '',
        filter.bookmarks ? vscode.l10n.t('bookmarks') : '',
    ];
    const what = parts.filter(p => p !== '').join(', ');
    return what === '' ? '' : vscode.l10n.t('Filter: {0}', what);
}

/**
 * Whether a node starts expanded: sessions do (except outlines: expanding one loads it); of the
 * turns, only the current session's latest one (a long story opens as a list of prompts).
 */
export function startsExpanded(node: TimelineNode, currentSessionId: string | undefined): boolean {
    if (node.kind === 'session') {
        return !node.story.outline;
    }
    return node.kind === 'turn' && node.latest && node.sessionId === currentSessionId;
}

/** Every node by id (for getParent / reveal). */
export function indexNodes(roots: readonly SessionNode[]): Map<string, TimelineNode> {
    const out = new Map<string, TimelineNode>();
    const visit = (n: TimelineNode): void => {
        out.set(n.id, n);
        if (n.kind === 'session' || n.kind === 'turn' || n.kind === 'checkpoint' || n.kind === 'subagent' || n.kind === 'group') {
            n.children.forEach(visit);
        }
    };
    roots.forEach(visit);
    return out;
}
