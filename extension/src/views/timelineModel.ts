/**
 * The timeline as data: server checkpoints → a tree of session → turn → checkpoint nodes, and
 * each node → how it looks (label, description, icon, context value). Pure (no `vscode`
 * import) so the mapping is unit-tested; `timelineProvider.ts` only turns these into TreeItems.
 *
 * Node ids are stable across refreshes (derived from server ids), which keeps expansion and
 * selection and makes `reveal` work. `contextValue` is the node kind, so package.json menus
 * target checkpoints with `viewItem == checkpoint`.
 */
import type { Checkpoint, SessionInfo, TimelineGetResult } from '../client/protocol';

export interface SessionNode {
    readonly kind: 'session';
    readonly id: string;
    readonly sessionId: string;
    readonly title: string;
    readonly running: boolean;
    readonly children: TimelineNode[];
}

export interface TurnNode {
    readonly kind: 'turn';
    readonly id: string;
    readonly parentId: string;
    readonly sessionId: string;
    readonly turnId: string;
    readonly title: string;
    readonly children: TimelineNode[];
}

export interface CheckpointNode {
    readonly kind: 'checkpoint';
    readonly id: string;
    readonly parentId: string;
    readonly checkpoint: Checkpoint;
    readonly isHead: boolean;
    /** Tool call status when it was not `ok` (error, denied, interrupted…). */
    readonly toolStatus: string | undefined;
}

/** A tool call that is running now (no checkpoint yet). */
export interface RunningToolNode {
    readonly kind: 'runningTool';
    readonly id: string;
    readonly parentId: string;
    readonly tool: string;
}

export type TimelineNode = SessionNode | TurnNode | CheckpointNode | RunningToolNode;

export interface RunningTool {
    readonly sessionId: string;
    readonly turnId: string | undefined;
    readonly toolCallId: string;
    readonly tool: string;
}

export interface TimelineExtras {
    /** Turn id → the user's prompt (from `turnStarted` events and the conversation). */
    readonly turnTitles: ReadonlyMap<string, string>;
    /** Tool call id → final status, for calls that did not end `ok`. */
    readonly toolStatus: ReadonlyMap<string, string>;
    readonly running: readonly RunningTool[];
}

export const sessionNodeId = (sessionId: string): string => `session:${sessionId}`;
export const turnNodeId = (turnId: string): string => `turn:${turnId}`;
export const checkpointNodeId = (checkpointId: string): string => `cp:${checkpointId}`;

function firstLine(text: string, max = 60): string {
    const line = text.split('\n')[0]?.trim() ?? '';
    return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** Build the tree. Checkpoints stay in commit order; a turn sits where its first checkpoint is. */
export function buildTimeline(result: TimelineGetResult, extras: TimelineExtras): SessionNode[] {
    const sessions = new Map<string, SessionNode>();
    const sessionInfo = new Map<string, SessionInfo>(result.sessions.map(s => [s.id, s]));
    const turns = new Map<string, TurnNode>();

    const session = (sessionId: string): SessionNode => {
        let node = sessions.get(sessionId);
        if (node === undefined) {
            const info = sessionInfo.get(sessionId);
            const title = info !== undefined && info.title !== '' ? firstLine(info.title) : 'Workspace history';
            node = { kind: 'session', id: sessionNodeId(sessionId), sessionId, title, running: info?.running ?? false, children: [] };
            sessions.set(sessionId, node);
        }
        return node;
    };
    const turn = (sessionId: string, turnId: string): TurnNode => {
        let node = turns.get(turnId);
        if (node === undefined) {
            const parent = session(sessionId);
            const index = parent.children.filter(c => c.kind === 'turn').length + 1;
            const prompt = extras.turnTitles.get(turnId);
            node = {
                kind: 'turn',
                id: turnNodeId(turnId),
                parentId: parent.id,
                sessionId,
                turnId,
                title: prompt !== undefined && prompt !== '' ? firstLine(prompt) : `Turn ${index}`,
                children: [],
            };
            turns.set(turnId, node);
            parent.children.push(node);
        }
        return node;
    };

    // Sessions the server lists appear even before their first checkpoint.
    for (const info of result.sessions) {
        session(info.id);
    }
    for (const cp of result.checkpoints) {
        const parent = cp.turnId !== undefined && cp.turnId !== null ? turn(cp.sessionId, cp.turnId) : session(cp.sessionId);
        const status = cp.toolCallId !== undefined && cp.toolCallId !== null ? extras.toolStatus.get(cp.toolCallId) : undefined;
        parent.children.push({
            kind: 'checkpoint',
            id: checkpointNodeId(cp.id),
            parentId: parent.id,
            checkpoint: cp,
            isHead: cp.id === result.head,
            toolStatus: status,
        });
    }
    for (const r of extras.running) {
        const parent = r.turnId !== undefined ? turn(r.sessionId, r.turnId) : session(r.sessionId);
        parent.children.push({ kind: 'runningTool', id: `running:${r.toolCallId}`, parentId: parent.id, tool: r.tool });
    }
    return [...sessions.values()].filter(s => s.children.length > 0 || sessionInfo.has(s.sessionId));
}

/** Every node by id (for getParent / reveal). */
export function indexNodes(roots: readonly SessionNode[]): Map<string, TimelineNode> {
    const out = new Map<string, TimelineNode>();
    const visit = (n: TimelineNode): void => {
        out.set(n.id, n);
        if (n.kind === 'session' || n.kind === 'turn') {
            n.children.forEach(visit);
        }
    };
    roots.forEach(visit);
    return out;
}

export interface NodeLook {
    readonly label: string;
    readonly description: string;
    readonly icon: string;
    /** A theme color id for the icon, when not the default. */
    readonly iconColor: string | undefined;
    readonly contextValue: TimelineNode['kind'];
    readonly collapsible: boolean;
}

const TOOL_ICONS: Readonly<Record<string, string>> = {
    edit_file: 'edit',
    write_file: 'edit',
    run_command: 'terminal',
    read_file: 'eye',
    list_files: 'list-tree',
    search_text: 'search',
};

const KIND_ICONS: Readonly<Record<Checkpoint['kind'], string>> = {
    baseline: 'circle-outline',
    tool: 'tools',
    external: 'person',
    safety: 'shield',
    restore: 'history',
    manual: 'bookmark',
    summary: 'note',
};

export function checkpointIcon(cp: Checkpoint): string {
    if (cp.kind === 'tool' && cp.tool !== undefined && cp.tool !== null) {
        return TOOL_ICONS[cp.tool] ?? 'tools';
    }
    return KIND_ICONS[cp.kind];
}

/** One line, at most 60 characters (labels of shell commands can be long scripts). */
export function checkpointLabel(cp: Checkpoint): string {
    if (cp.label !== '') {
        return firstLine(cp.label);
    }
    switch (cp.kind) {
        case 'tool':
            return cp.tool ?? 'tool call';
        case 'baseline':
            return 'Baseline';
        case 'external':
            return 'External changes';
        case 'safety':
            return 'Before restore';
        case 'restore':
            return `Restored ${cp.restoredFrom?.slice(0, 8) ?? ''}`.trim();
        case 'manual':
            return 'Mark';
        case 'summary':
            return 'Summary';
    }
}

/** "src/app.py +3 −1", "3 files +10 −2", "" when nothing changed. */
export function changeSummary(cp: Checkpoint): string {
    const files = cp.files ?? [];
    if (files.length === 0) {
        return '';
    }
    const add = files.reduce((n, f) => n + (f.additions ?? 0), 0);
    const del = files.reduce((n, f) => n + (f.deletions ?? 0), 0);
    const what = files.length === 1 ? (files[0]?.path ?? '') : `${files.length} files`;
    return `${what} +${add} −${del}`;
}

export function recoverabilityNote(cp: Checkpoint): string {
    switch (cp.recoverability ?? 'full') {
        case 'full':
            return '';
        case 'partial':
            return `⚠ partial: ${(cp.unrecoverable ?? []).map(u => `${u.path} (${u.reason})`).join(', ') || 'some content not stored'}`;
        case 'none':
            return '✖ not recoverable';
    }
}

export function lookOf(node: TimelineNode): NodeLook {
    switch (node.kind) {
        case 'session':
            return {
                label: node.title,
                description: node.running ? 'running' : '',
                icon: node.running ? 'sync~spin' : 'comment-discussion',
                iconColor: undefined,
                contextValue: 'session',
                collapsible: true,
            };
        case 'turn':
            return { label: node.title, description: '', icon: 'comment', iconColor: undefined, contextValue: 'turn', collapsible: true };
        case 'runningTool':
            return {
                label: node.tool,
                description: 'running…',
                icon: 'sync~spin',
                iconColor: undefined,
                contextValue: 'runningTool',
                collapsible: false,
            };
        case 'checkpoint': {
            const cp = node.checkpoint;
            const failed = node.toolStatus !== undefined && node.toolStatus !== 'ok';
            const parts = [node.isHead ? '● head' : '', changeSummary(cp), failed ? node.toolStatus ?? '' : '', recoverabilityNote(cp)];
            const unrecoverable = (cp.recoverability ?? 'full') !== 'full';
            return {
                label: checkpointLabel(cp),
                description: parts.filter(p => p !== '').join(' · '),
                icon: failed ? 'error' : unrecoverable ? 'warning' : checkpointIcon(cp),
                iconColor: failed ? 'list.errorForeground' : unrecoverable ? 'list.warningForeground' : undefined,
                contextValue: 'checkpoint',
                collapsible: false,
            };
        }
    }
}
