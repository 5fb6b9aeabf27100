/**
 * The File History view's pure model (no `vscode`): which file the view shows, the rows the
 * server's `retrace/file/history` pages become, how each row looks, and which two versions each
 * action compares. The server decides what a version is and says (title, summary, change kind);
 * this module only lays it out.
 */
import * as vscode from 'vscode';
import type { FileChange, FileHistoryResult, FileVersion } from '../../client/protocol';
import { relativeTime } from './timelineModel';

/** The file the view shows: a workspace-relative path, following the active editor unless pinned. */
export interface FileTarget {
    readonly path: string;
    readonly pinned: boolean;
    /** The root of the folder the file is in when not the first (its store answers). */
    readonly folder?: string;
}

export interface VersionNode {
    readonly kind: 'version';
    readonly path: string;
    readonly version: FileVersion;
    /** As `FileTarget.folder`. */
    readonly folder?: string;
}

export interface MoreVersionsNode {
    readonly kind: 'more';
    readonly cursor: string;
}

export interface MessageNode {
    readonly kind: 'message';
    readonly text: string;
}

export type FileHistoryNode = VersionNode | MoreVersionsNode | MessageNode;

/** What the view holds for its file: every page loaded so far, newest first. */
export interface FileHistoryState {
    readonly path: string;
    readonly versions: readonly FileVersion[];
    readonly nextCursor: string | null;
}

/** Context value of a version row (package.json menus key on it). */
export const VERSION_CONTEXT = 'fileVersion';
/** A version whose file exists after it: it can be restored. */
export const VERSION_CONTEXT_EXISTS = 'fileVersionExists';

/** A fresh state from a first page, or `state` with an older page appended. */
export function withPage(state: FileHistoryState | undefined, page: FileHistoryResult, append: boolean): FileHistoryState {
    if (!append || state === undefined || state.path !== page.path) {
        return { path: page.path, versions: page.versions, nextCursor: page.nextCursor };
    }
    const seen = new Set(state.versions.map(v => v.checkpointId));
    const older = page.versions.filter(v => !seen.has(v.checkpointId));
    return { path: state.path, versions: [...state.versions, ...older], nextCursor: page.nextCursor };
}

/** The rows of the view: one per version, then "load older" while the server has more. */
export function nodesOf(state: FileHistoryState | undefined, target: FileTarget | undefined): FileHistoryNode[] {
    if (target === undefined) {
        return [{ kind: 'message', text: vscode.l10n.t('Open a file of the workspace to see the checkpoints that changed it.') }];
    }
    if (state === undefined || state.path !== target.path) {
        return [];
    }
    if (state.versions.length === 0) {
        return [{ kind: 'message', text: vscode.l10n.t('No checkpoint changed {0} yet.', target.path) }];
    }
    const folder = target.folder === undefined ? {} : { folder: target.folder };
    const rows: FileHistoryNode[] = state.versions.map(version => ({ kind: 'version', path: state.path, version, ...folder }));
    return state.nextCursor === null ? rows : [...rows, { kind: 'more', cursor: state.nextCursor }];
}

const CHANGE_ICONS: Record<FileVersion['change'], string> = {
    created: 'diff-added',
    modified: 'diff-modified',
    deleted: 'diff-removed',
    renamed: 'diff-renamed',
};

export interface VersionLook {
    readonly label: string;
    readonly description: string;
    readonly tooltip: string;
    readonly icon: string;
    readonly contextValue: string;
}

/** How a version row looks: the checkpoint's title, this file's change and when. */
export function versionLook(version: FileVersion, now: number): VersionLook {
    const when = relativeTime(version.createdAt, now);
    const tooltip = [
        `${version.title}`,
        vscode.l10n.t('{0} · {1} checkpoint {2}', version.summary || version.change, version.kind, version.checkpointId),
        vscode.l10n.t('session {0} · {1}', version.sessionId, version.createdAt),
        version.exists ? vscode.l10n.t('content {0}', version.hash === null ? vscode.l10n.t('not stored') : version.hash.slice(0, 12)) : vscode.l10n.t('the file does not exist after it'),
    ].join('\n');
    return {
        label: version.title,
        description: [version.summary, when].filter(p => p !== '').join(' · '),
        tooltip,
        icon: CHANGE_ICONS[version.change],
        contextValue: version.exists ? VERSION_CONTEXT_EXISTS : VERSION_CONTEXT,
    };
}

/** A two-sided diff: one `FileChange` for `openChanges`, between checkpoint `left` and `right`. */
export interface DiffRequest {
    readonly file: FileChange;
    readonly left: { readonly id: string; readonly label: string };
    readonly right: { readonly id: string; readonly label: string };
    readonly title: string;
}

function change(path: string, status: FileChange['status'], oldPath: string | null = null): FileChange {
    return { path, status, oldPath, additions: 0, deletions: 0, binary: false, approximate: false, counted: false };
}

const short = (text: string, max = 40): string => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);

/** This version ↔ the file now (`currentExists`: whether it is on disk now). */
export function diffWithCurrent(path: string, version: FileVersion, currentExists: boolean): DiffRequest {
    const label = short(version.title);
    return {
        file: change(path, currentExists ? 'modified' : 'deleted'),
        left: { id: version.checkpointId, label },
        right: { id: 'current', label: vscode.l10n.t('current') },
        title: vscode.l10n.t('Retrace: {0} ({1} ↔ current)', path, label),
    };
}

/** The version before ↔ this version (what the checkpoint did to the file, following a rename);
 *  `undefined` for the first baseline (nothing before it). */
export function diffWithPrevious(path: string, version: FileVersion): DiffRequest | undefined {
    if (version.parentId === null) {
        return undefined;
    }
    const label = short(version.title);
    const file =
        version.renamedTo !== null
            ? change(version.renamedTo, 'renamed', path)
            : change(path, version.renamedFrom !== null ? 'renamed' : 'modified', version.renamedFrom);
    return {
        file,
        left: { id: version.parentId, label: vscode.l10n.t('before') },
        right: { id: version.checkpointId, label },
        title: vscode.l10n.t('Retrace: {0} (before ↔ {1})', path, label),
    };
}
