/**
 * Subagents in the timeline as data. A parent checkpoint made by a `task` tool call names its
 * child in `meta.task` (`id`, `description`, `status`, `conflicts`); the child is addressed on the
 * wire as `{sessionId: <the parent's session>, taskId}` (`TaskRef`), which scoped requests
 * (`retrace/timeline/tree`, `checkpoint/get|diff|fileContent|restore`) take as `task`. The child's
 * state the user sees is the server's: `meta.task.status` as the checkpoint recorded it, replaced
 * by `retrace/tasks/list`'s when known (a child discarded or applied later). Pure (no `vscode`).
 *
 * Context values (package.json menus): a task row is `checkpoint.task`, a row of a child's own
 * timeline `checkpoint.child`, every other row `checkpoint`; a listed child without a row `subagent`.
 * A child the server would resume adds `.resumable` (`checkpoint.task.resumable`, `subagent.resumable`).
 */
import * as vscode from 'vscode';
import type { Checkpoint, StoryRow, TaskRef, TaskView, TimelineTreeResult } from '../../client/protocol';

export type TaskStatus = TaskView['status'];

export const CHECKPOINT_CONTEXT = 'checkpoint';
export const TASK_CONTEXT = 'checkpoint.task';
export const CHILD_CONTEXT = 'checkpoint.child';
/** A listed subagent without a row of its own (see `orphanTasks`). */
export const SUBAGENT_CONTEXT = 'subagent';
export const RESUMABLE_SUFFIX = '.resumable';

/** The context value of a row naming `task`: `base`, plus `.resumable` when the server would resume it. */
export function taskContext(base: string, task: TaskInfo): string {
    return task.resumable ? `${base}${RESUMABLE_SUFFIX}` : base;
}

/** A subagent as a task row shows it. */
export interface TaskInfo {
    readonly ref: TaskRef;
    readonly description: string;
    /** `undefined`: the checkpoint did not say and `retrace/tasks/list` was not asked yet. */
    readonly status: TaskStatus | undefined;
    /** Paths the merge left alone because of a conflict. */
    readonly conflicts: readonly string[];
    /** The server would resume it now (`retrace/tasks/list` says so; unknown before: no). */
    readonly resumable: boolean;
}

const STATUSES: ReadonlySet<string> = new Set<TaskStatus>(['running', 'merged', 'conflicts', 'failed', 'cancelled', 'interrupted', 'discarded']);

function record(value: unknown): Record<string, unknown> | undefined {
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function conflictPaths(value: unknown): string[] {
    return Array.isArray(value) ? value.map(c => record(c)?.['path']).filter((p): p is string => typeof p === 'string') : [];
}

/** The subagent a `task` checkpoint names (`undefined` for every other checkpoint). */
export function taskOf(cp: Checkpoint): TaskInfo | undefined {
    if (cp.kind !== 'tool' || cp.tool !== 'task') {
        return undefined;
    }
    const meta = record(cp.meta['task']);
    const id = meta?.['id'];
    if (meta === undefined || typeof id !== 'string' || id === '') {
        return undefined;
    }
    const status = meta['status'];
    const description = meta['description'];
    return {
        ref: { sessionId: cp.sessionId, taskId: id },
        description: typeof description === 'string' ? description : '',
        status: typeof status === 'string' && STATUSES.has(status) ? (status as TaskStatus) : undefined,
        conflicts: conflictPaths(meta['conflicts']),
        resumable: false,
    };
}

/** One key per subagent (maps of loaded child timelines and of `tasks/list` answers). */
export function taskKey(ref: TaskRef): string {
    return `${ref.sessionId}/${ref.taskId}`;
}

/** `info` with what `retrace/tasks/list` says of it now, when it said anything. */
export function withView(info: TaskInfo, view: TaskView | undefined): TaskInfo {
    return view === undefined ? info : { ...info, status: view.status, conflicts: view.conflicts.map(c => c.path), resumable: view.resumable ?? false };
}

/** What a task row says of its child: "subagent merged", "2 conflicts", "interrupted"… */
export function taskStatusText(info: TaskInfo): string {
    const n = info.conflicts.length;
    switch (info.status) {
        case undefined:
            return vscode.l10n.t('subagent');
        case 'merged':
            return vscode.l10n.t('subagent merged');
        case 'conflicts':
            return n === 0 ? vscode.l10n.t('subagent: conflicts') : n === 1 ? vscode.l10n.t('subagent: 1 conflict') : vscode.l10n.t('subagent: {0} conflicts', n);
        case 'finished':
            return vscode.l10n.t('subagent finished, not applied');
        case 'running':
        case 'failed':
        case 'cancelled':
        case 'interrupted':
        case 'discarded':
            return vscode.l10n.t('subagent {0}', info.status);
    }
}

/** Whether the child's own timeline can still be opened (a discarded child's files are gone). */
export function hasTimeline(info: TaskInfo): boolean {
    return info.status !== 'discarded';
}

/** Node id of a row of a child's timeline: distinct from the parent's `cp:<id>`. */
export function childNodeId(ref: TaskRef, checkpointId: string): string {
    return `task:${ref.taskId}:cp:${checkpointId}`;
}

/** A child's timeline as flat rows in story order, with the prompt of each row's turn. */
export interface ChildRow {
    readonly row: StoryRow;
    readonly prompt: string | undefined;
}

export function childRows(tree: TimelineTreeResult): ChildRow[] {
    return tree.sessions.flatMap(s => s.items.flatMap((i): ChildRow[] => (i.kind === 'turn' ? i.rows.map(row => ({ row, prompt: i.prompt })) : [{ row: i, prompt: undefined }])));
}

/** Sessions of `tree` whose shown rows include `task` rows. */
export function sessionsWithTaskRows(tree: TimelineTreeResult): string[] {
    return tree.sessions.filter(s => s.items.some(i => (i.kind === 'turn' ? i.rows : [i]).some(r => taskOf(r.checkpoint) !== undefined))).map(s => s.session.id);
}

/**
 * The subagents of `sessionId` the server lists (`views`, by `taskKey`) that no row names
 * (`named`: task ids of the story's task rows) and that are neither running as a tool call now
 * (`runningCalls`: their row comes with the call's checkpoint) nor discarded: children a crash cut
 * off, whose call was cancelled, or that were resumed later.
 */
export function orphanTasks(
    sessionId: string,
    named: ReadonlySet<string>,
    views: ReadonlyMap<string, TaskView>,
    runningCalls: ReadonlySet<string> = new Set(),
): { ref: TaskRef; view: TaskView }[] {
    return [...views.values()]
        .map(view => ({ ref: { sessionId, taskId: view.taskId }, view }))
        // (a view is this session's when it is filed under this session's key)
        .filter(({ ref, view }) => views.get(taskKey(ref)) === view && !named.has(view.taskId) && view.status !== 'discarded' && !runningCalls.has(view.toolCallId));
}
