/**
 * The folder-group layer of the Timeline view (pure, unit-tested). A workspace of one folder
 * shows its sessions at the top level, exactly as always (the same nodes, nothing relabelled). A
 * multi-root workspace shows one node per folder, in workspace order (the first expanded), each
 * holding exactly what that folder's timeline shows alone: its sessions, rows, bookmarks and
 * "Load older…", read from its own store. Under a folder node every node id is prefixed with the
 * folder's (one tool call has its row, with the same session and turn ids, in each folder it wrote
 * in) and carries `folder` (its root): a row's actions send their requests to that folder.
 */
import * as vscode from 'vscode';
import type { TimelineTreeResult } from '../../client/protocol';
import { checkpointsOf, relativeTime, type SessionNode, type TimelineNode } from './timelineModel';
import { CODE_ONLY_CONTEXT } from './agentModel';

export interface FolderInfo {
    readonly name: string;
    /** The folder's root (a file-system path): the `folder` its requests name. */
    readonly root: string;
}

/** A folder of a multi-root workspace: its sessions below it. */
export interface FolderGroupNode {
    readonly kind: 'folder';
    readonly id: string;
    readonly folder: FolderInfo;
    /** "3 sessions · last change 2 min ago" (empty before its timeline was read). */
    readonly description: string;
    /** The workspace's first folder (shown expanded). */
    readonly first: boolean;
    readonly children: readonly SessionNode[];
}

export type ShownNode = TimelineNode | FolderGroupNode;

/** One folder's timeline as its stories layer built it. */
export interface FolderStories {
    readonly folder: FolderInfo;
    readonly roots: readonly SessionNode[];
    readonly tree: TimelineTreeResult | undefined;
}

export const folderNodeId = (root: string): string => `folder:${root}`;

/** A node id as shown: under its folder's node (`root`), else as it is (one folder). */
export function idInFolder(root: string | undefined, id: string): string {
    return root === undefined ? id : `${folderNodeId(root)}|${id}`;
}

/** The top level of the view: the sessions of a lone folder, else one node per folder. */
export function groupRoots(groups: readonly FolderStories[], now: number): ShownNode[] {
    if (groups.length <= 1) {
        return [...(groups[0]?.roots ?? [])];
    }
    return groups.map((g, i): FolderGroupNode => {
        const id = folderNodeId(g.folder.root);
        return {
            kind: 'folder',
            id,
            folder: g.folder,
            description: folderDescription(g.tree, now),
            first: i === 0,
            children: g.roots.map(s => inFolder(s, id, g.folder.root)),
        };
    });
}

/** A node (and everything below it) under the folder node `groupId`. */
export function inFolder<N extends TimelineNode>(node: N, groupId: string, root: string): N {
    const children = 'children' in node ? node.children.map(c => inFolder(c, groupId, root)) : undefined;
    const parentId = node.kind === 'session' ? groupId : `${groupId}|${node.parentId}`;
    return { ...node, id: `${groupId}|${node.id}`, parentId, folder: root, ...(children === undefined ? {} : { children }) };
}

/** "2 sessions · last change 5 min ago": the agent sessions of a folder's store and its newest change. */
export function folderDescription(tree: TimelineTreeResult | undefined, now: number): string {
    if (tree === undefined) {
        return '';
    }
    const sessions = tree.sessions.filter(s => !s.workspace).length;
    if (tree.sessions.length === 0) {
        return vscode.l10n.t('no sessions yet');
    }
    const count = sessions === 1 ? vscode.l10n.t('1 session') : vscode.l10n.t('{0} sessions', sessions);
    const times = [
        ...checkpointsOf(tree).map(c => c.createdAt),
        ...tree.sessions.flatMap(s => [s.session.lastActivityAt ?? null, s.session.createdAt]).filter((t): t is string => t !== null),
    ];
    const newest = times.reduce<string | undefined>((best, t) => (best === undefined || Date.parse(t) > Date.parse(best) ? t : best), undefined);
    const when = relativeTime(newest, now);
    return when === '' ? count : vscode.l10n.t('{0} · last change {1}', count, when);
}

/**
 * A row's context value (its menu) in its folder: another folder's store restores code only (the
 * conversation, the subagents and the summaries are the agent's, the first folder's), so its rows
 * offer what a code-only row does. `folder` undefined (one folder) or the first: as always.
 */
export function rowContext(contextValue: string, folder: string | undefined, firstRoot: string | undefined): string {
    if (folder === undefined || folder === firstRoot || !contextValue.startsWith('checkpoint')) {
        return contextValue;
    }
    return CODE_ONLY_CONTEXT;
}

/** Every node shown, by id. */
export function indexShown(roots: readonly ShownNode[]): Map<string, ShownNode> {
    const out = new Map<string, ShownNode>();
    const visit = (node: ShownNode): void => {
        out.set(node.id, node);
        if ('children' in node) {
            node.children.forEach(visit);
        }
    };
    roots.forEach(visit);
    return out;
}
