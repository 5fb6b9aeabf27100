/**
 * How each timeline node looks: label, description, icon (and its color) and context value. The
 * server decides what a row says; this module only lays it out and formats times relative to
 * "now". Pure (of `vscode` only `l10n`) so it is unit-tested; `providers/timeline/items.ts` turns a look into a
 * TreeItem. The nodes themselves are built in `timelineModel.ts`.
 */
import * as vscode from 'vscode';
import type { Checkpoint } from '../../client/protocol';
import { STARTING_POINT, firstLine } from '../../labels';
import { CHECKPOINT_CONTEXT, CHILD_CONTEXT, hasTimeline, SUBAGENT_CONTEXT, TASK_CONTEXT, taskContext, taskStatusText } from './taskModel';
import { relativeTime, type CheckpointNode, type GroupNode, type SessionNode, type SubagentNode, type TimelineNode, type TurnNode } from './timelineModel';
import { CODE_ONLY_CONTEXT, codeOnlyReason } from './agentModel';
import { rowMarks } from './gitModel';

export interface NodeLook {
    readonly label: string;
    readonly description: string;
    readonly icon: string;
    /** A theme color id for the icon, when not the default. */
    readonly iconColor: string | undefined;
    /** The node kind; checkpoint rows: `checkpoint`, `checkpoint.task`, `checkpoint.child` or
     * `checkpoint.codeOnly` (another agent's: the server offers no conversation restore). */
    readonly contextValue: string;
    readonly collapsible: boolean;
}

const TOOL_ICONS: Readonly<Record<string, string>> = {
    task: 'type-hierarchy-sub',
    edit_file: 'edit',
    write_file: 'edit',
    run_command: 'terminal',
    read_file: 'eye',
    list_files: 'list-tree',
    search_text: 'search',
    // Other agents' tools, as their hooks name them (Claude Code, Gemini CLI).
    Write: 'edit',
    Edit: 'edit',
    MultiEdit: 'edit',
    NotebookEdit: 'edit',
    Bash: 'terminal',
    Read: 'eye',
    Grep: 'search',
    Glob: 'search',
    replace: 'edit',
    run_shell_command: 'terminal',
    read_many_files: 'eye',
    glob: 'search',
    search_file_content: 'search',
};

const KIND_ICONS: Readonly<Record<Checkpoint['kind'], string>> = {
    baseline: 'circle-outline',
    tool: 'tools',
    external: 'person',
    safety: 'shield',
    restore: 'history',
    manual: 'bookmark',
    summary: 'note',
    background: 'server-process',
};

export function checkpointIcon(cp: Checkpoint): string {
    if (cp.kind === 'tool' && cp.tool !== undefined && cp.tool !== null) {
        return TOOL_ICONS[cp.tool] ?? 'tools';
    }
    return KIND_ICONS[cp.kind];
}

/** "src/app.py +3 −1", "3 files +10 −2", "" when nothing changed. */
export function changeSummary(cp: Checkpoint): string {
    const files = cp.files ?? [];
    if (files.length === 0) {
        return '';
    }
    const add = files.reduce((n, f) => n + (f.additions ?? 0), 0);
    const del = files.reduce((n, f) => n + (f.deletions ?? 0), 0);
    const what = files.length === 1 ? (files[0]?.path ?? '') : vscode.l10n.t('{0} files', files.length);
    // Big files' lines are counted on request, not at commit: never show their zeros as a figure.
    const uncounted = files.some(f => f.counted === false) ? vscode.l10n.t(' (lines not counted yet)') : '';
    return `${what} +${add} −${del}${uncounted}`;
}

export function recoverabilityNote(cp: Checkpoint): string {
    switch (cp.recoverability ?? 'full') {
        case 'full':
            return '';
        case 'partial':
            return vscode.l10n.t('⚠ partial: {0}', (cp.unrecoverable ?? []).map(u => `${u.path} (${u.reason})`).join(', ') || vscode.l10n.t('some content not stored'));
        case 'none':
            return vscode.l10n.t('✖ not recoverable');
    }
}

/** Counts as words ("1 step", "1,234 steps"): one literal message per form, so each translates. */
const fmt = (n: number): string => n.toLocaleString('en-US');
const steps = (n: number): string => (n === 1 ? vscode.l10n.t('1 step') : vscode.l10n.t('{0} steps', fmt(n)));
const turns = (n: number): string => (n === 1 ? vscode.l10n.t('1 turn') : vscode.l10n.t('{0} turns', fmt(n)));
const toolCalls = (n: number): string => (n === 1 ? vscode.l10n.t('1 tool call') : vscode.l10n.t('{0} tool calls', fmt(n)));
const earlierSteps = (n: number): string => (n === 1 ? vscode.l10n.t('1 earlier step') : vscode.l10n.t('{0} earlier steps', fmt(n)));

function sessionLook(node: SessionNode, now: number): NodeLook {
    const story = node.story;
    const parts = [
        story.workspace ? '' : turns(story.turnCount),
        steps(story.rowCount),
        relativeTime(story.session.createdAt, now),
        node.running ? vscode.l10n.t('running') : '',
    ];
    const agent = story.session.agent ?? null;
    return {
        label: node.title,
        description: parts.filter(p => p !== '').join(' · '),
        icon: node.running ? 'sync~spin' : story.workspace ? 'history' : agent !== null ? 'hubot' : 'comment-discussion',
        iconColor: undefined,
        contextValue: agent !== null ? 'session.agent' : 'session',
        collapsible: true,
    };
}

/** Another agent's turn: what its state adds to the description, and its icon. */
function turnStateLook(node: TurnNode): { readonly word: string; readonly icon: string | undefined } {
    switch (node.turn.state ?? null) {
        case 'running':
            return { word: vscode.l10n.t('running'), icon: 'sync~spin' };
        case 'interrupted':
            return { word: vscode.l10n.t('interrupted'), icon: 'debug-disconnect' };
        case 'ended':
        case null:
            return { word: '', icon: undefined };
    }
}

function turnLook(node: TurnNode, now: number): NodeLook {
    const turn = node.turn;
    const state = turnStateLook(node);
    const parts = [
        state.word,
        turn.abandoned ? vscode.l10n.t('abandoned branch') : '',
        node.forkedFromTitle !== undefined ? vscode.l10n.t('⑂ from ‘{0}’', firstLine(node.forkedFromTitle, 40)) : '',
        steps(turn.rows.length),
        relativeTime(turn.createdAt, now),
    ];
    return {
        label: node.title,
        description: parts.filter(p => p !== '').join(' · '),
        icon: state.icon ?? (turn.abandoned ? 'git-branch' : node.forkedFromTitle !== undefined ? 'git-pull-request' : 'comment'),
        iconColor: turn.abandoned ? 'disabledForeground' : undefined,
        contextValue: 'turn',
        collapsible: true,
    };
}

/** The head row's marker: first in the label (never cut), said in words in the description. */
export const HEAD_MARK = '●';
export const HEAD_WORDS = vscode.l10n.t('you are here');
/** The baseline's name for people ("Baseline" is jargon); its description still says "baseline". */

/** A restore row names its target in at most this many characters (its label fits 300 px). */
const RESTORE_TARGET_CHARS = 18;
const PATH_TITLE = /^([A-Za-z_][\w.-]*): (\S+)$/;

/**
 * A row title laid out for a 300 px sidebar: what matters leftmost. "edit_file: src/app/g.py" →
 * label "edit_file: g.py", the folder "src/app" to the description; a restore names its target the
 * by its file ("Back to ‘g.py’", "restored code" in the description, the full title in the hover); the baseline is the "Starting point". Other
 * titles stay as the server wrote them.
 */
export function rowLabel(title: string, kind: Checkpoint['kind']): { readonly label: string; readonly folder: string } {
    if (kind === 'baseline') {
        return { label: STARTING_POINT, folder: '' };
    }
    const restored = /^Restored code to ‘(.*)’$/.exec(title);
    if (restored !== null) {
        const target = restored[1] ?? ''; // named like its own row, short: the full title is in the hover
        const onFile = PATH_TITLE.exec(target)?.[2]; // a tool call on one file: the file's name says it
        const name = onFile !== undefined ? (onFile.split('/').at(-1) ?? onFile) : rowLabel(target, target === STARTING_POINT ? 'baseline' : 'tool').label;
        return { label: vscode.l10n.t('Back to ‘{0}’', firstLine(name, RESTORE_TARGET_CHARS)), folder: vscode.l10n.t('restored code') };
    }
    const m = PATH_TITLE.exec(title);
    if (m === null) {
        return { label: title, folder: '' };
    }
    const path = m[2] ?? '';
    const cut = path.lastIndexOf('/');
    return { label: `${m[1] ?? ''}: ${path.slice(cut + 1)}`, folder: cut > 0 ? path.slice(0, cut) : '' };
}

function checkpointLook(node: CheckpointNode, now: number): NodeLook {
    const { label, folder } = checkpointLabel(node);
    const parts = [
        node.isHead ? HEAD_WORDS : '',
        node.checkpoint.kind === 'baseline' ? 'baseline' : '',
        node.toolStatus ?? '',
        folder,
        rowMarks(node.row).badge, // git's move and side effects outside the workspace: leftmost
        ...taskParts(node),
        node.row.summary,
        recoverabilityNote(node.checkpoint),
        relativeTime(node.checkpoint.createdAt, now),
    ];
    const { icon, iconColor } = checkpointIconOf(node);
    return {
        label: node.isHead ? `${HEAD_MARK} ${label}` : label,
        description: parts.filter(p => p !== '').join(' · '),
        icon,
        iconColor,
        contextValue: checkpointContext(node),
        collapsible: node.task !== undefined ? hasTimeline(node.task) : node.children.length > 0,
    };
}

/** A named row: its name leftmost, what it is after (with the folder); else the tool and file. */
function checkpointLabel(node: CheckpointNode): { readonly label: string; readonly folder: string } {
    const laid = rowLabel(node.row.title, node.checkpoint.kind);
    const bookmark = node.row.bookmark ?? undefined;
    if (bookmark === undefined || bookmark === node.row.title) {
        return { label: bookmark ?? laid.label, folder: laid.folder };
    }
    return { label: bookmark, folder: [laid.label, laid.folder].filter(p => p !== '').join(' · ') };
}

/** A task row's description (unless its title says it already) and status. */
function taskParts(node: CheckpointNode): string[] {
    if (node.task === undefined) {
        return [];
    }
    return [node.row.title.includes(node.task.description) ? '' : node.task.description, taskStatusText(node.task)];
}

/** Failure first, then damage, a bookmark, a branch, the row's marks, the kind's own icon. */
function checkpointIconOf(node: CheckpointNode): Pick<NodeLook, 'icon' | 'iconColor'> {
    if (node.toolStatus !== undefined) {
        return { icon: 'error', iconColor: 'list.errorForeground' };
    }
    if ((node.checkpoint.recoverability ?? 'full') !== 'full') {
        return { icon: 'warning', iconColor: 'list.warningForeground' };
    }
    const bookmarked = (node.row.bookmark ?? undefined) !== undefined;
    const icon = bookmarked ? 'bookmark' : node.row.branch ? 'git-branch' : (rowMarks(node.row).icon ?? checkpointIcon(node.checkpoint));
    return { icon, iconColor: undefined };
}

/** A folded group's hover: its label, then its newest rows (title · gist). */
export function groupHover(node: GroupNode, max = 12): string {
    const rows = node.children.map(c => `- ${c.row.title}${c.row.summary === '' ? '' : ` · ${c.row.summary}`}`);
    const more = rows.length > max ? `\n${vscode.l10n.t('… {0} earlier', rows.length - max)}` : '';
    return `${node.label}\n\n${rows.slice(-max).join('\n')}${more}`;
}

/** A restore row's hover line about the safety capture folded into it ("" without one). */
export function safetyNote(node: CheckpointNode): string {
    const safety = node.children.find((c): c is CheckpointNode => c.kind === 'checkpoint' && c.checkpoint.kind === 'safety');
    return safety === undefined ? '' : `${vscode.l10n.t('Before restoring, the workspace was saved ({0}): open this row to see or restore that capture.', safety.row.summary)}\n\n`;
}

const GROUP_ICONS: Readonly<Record<GroupNode['group'], string>> = { repeat: 'layers', reads: 'eye', abandoned: 'git-branch' };

/** A folded run of rows (`timelineFold.ts`): its label leftmost, the newest row's time after. */
function groupLook(node: GroupNode, now: number): NodeLook {
    const newest = node.children.at(-1);
    const parts = [node.isHead ? HEAD_WORDS : '', node.detail, newest?.row.summary ?? '', relativeTime(newest?.checkpoint.createdAt, now)];
    return {
        label: node.isHead ? `${HEAD_MARK} ${node.label}` : node.label,
        description: parts.filter(p => p !== '').join(' · '),
        icon: GROUP_ICONS[node.group],
        iconColor: node.group === 'abandoned' ? 'disabledForeground' : undefined,
        contextValue: `group.${node.group}`,
        collapsible: true,
    };
}

function checkpointContext(node: CheckpointNode): string {
    if (node.task !== undefined) {
        return taskContext(TASK_CONTEXT, node.task);
    }
    if (node.scope !== undefined) {
        return CHILD_CONTEXT;
    }
    return codeOnlyReason(node.row) !== undefined ? CODE_ONLY_CONTEXT : CHECKPOINT_CONTEXT;
}

function subagentLook(node: SubagentNode): NodeLook {
    const calls = node.view.metrics['toolCalls'];
    const parts = [taskStatusText(node.task), typeof calls === 'number' ? toolCalls(calls) : ''];
    const bad = node.task.status === 'interrupted' || node.task.status === 'failed';
    const running = node.task.status === 'running';
    return {
        label: vscode.l10n.t('subagent: {0}', firstLine(node.task.description)),
        description: parts.filter(p => p !== '').join(' · '),
        icon: running ? 'sync~spin' : 'type-hierarchy-sub',
        iconColor: bad ? 'list.warningForeground' : undefined,
        contextValue: taskContext(SUBAGENT_CONTEXT, node.task),
        collapsible: hasTimeline(node.task),
    };
}

export function lookOf(node: TimelineNode, now: number = Date.now()): NodeLook {
    switch (node.kind) {
        case 'session':
            return sessionLook(node, now);
        case 'turn':
            return turnLook(node, now);
        case 'checkpoint':
            return checkpointLook(node, now);
        case 'subagent':
            return subagentLook(node);
        case 'group':
            return groupLook(node, now);
        case 'runningTool':
            return { label: node.tool, description: node.detail === undefined ? vscode.l10n.t('running…') : vscode.l10n.t('running… · {0}', node.detail), icon: 'sync~spin', iconColor: undefined, contextValue: 'runningTool', collapsible: false };
        case 'more':
            return {
                label: node.before === null ? vscode.l10n.t('Load {0}…', steps(node.omitted)) : vscode.l10n.t('Load older… ({0})', earlierSteps(node.omitted)),
                description: '',
                icon: 'unfold',
                iconColor: undefined,
                contextValue: 'more',
                collapsible: false,
            };
    }
}
