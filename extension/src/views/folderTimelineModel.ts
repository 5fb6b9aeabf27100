/**
 * The other folders of a multi-root workspace, as the "Other Folders" view shows them (pure, unit
 * tested): a folder level above each folder's stories, the stories' rows newest first. The first
 * folder is the Timeline view's, exactly as in a workspace of one folder; every other folder has
 * its own store on the server, and every request about it names it (`folder`: its root).
 */
import * as vscode from 'vscode';
import type { Checkpoint, RestoreOutcomePayload, RestoreParams, StoryRow, TimelineTreeResult } from '../client/protocol';
import { rowsOf, sessionTitle } from './timelineModel';

export interface FolderInfo {
    readonly name: string;
    /** The folder's root (a file-system path): the `folder` every request about it sends. */
    readonly root: string;
}

export interface FolderNode {
    readonly kind: 'folder';
    readonly id: string;
    readonly folder: FolderInfo;
    readonly children: FolderStoryNode[];
    /** Why its timeline could not be read (the server's one line). */
    readonly error?: string;
}

export interface FolderStoryNode {
    readonly kind: 'folderStory';
    readonly id: string;
    readonly parentId: string;
    readonly title: string;
    readonly children: FolderRowNode[];
}

export interface FolderRowNode {
    readonly kind: 'folderRow';
    readonly id: string;
    readonly parentId: string;
    readonly folder: FolderInfo;
    readonly row: StoryRow;
    readonly checkpoint: Checkpoint;
}

export type FolderTreeNode = FolderNode | FolderStoryNode | FolderRowNode;

/** Every folder but the first (the Timeline view's); none in a workspace of one folder. */
export function otherFolders(all: readonly FolderInfo[]): FolderInfo[] {
    return all.slice(1);
}

/** A request's params, naming the folder it is about (a routing key beside the method's own params). */
export function inFolder<P extends object>(params: P, folder: FolderInfo): P & { folder: string } {
    return { ...params, folder: folder.root };
}

/** One folder's node: its stories (newest first), each with its rows (newest first). */
export function folderNode(folder: FolderInfo, tree: TimelineTreeResult | undefined, error?: string): FolderNode {
    const id = `folder:${folder.root}`;
    const stories = [...(tree?.sessions ?? [])].reverse();
    const children = stories.map((story): FolderStoryNode => {
        const storyId = `${id}|story:${story.session.id}`;
        const rows = [...rowsOf(story)].reverse();
        return {
            kind: 'folderStory',
            id: storyId,
            parentId: id,
            title: sessionTitle(story),
            children: rows.map(row => ({ kind: 'folderRow', id: `${storyId}|cp:${row.checkpoint.id}`, parentId: storyId, folder, row, checkpoint: row.checkpoint })),
        };
    });
    return error === undefined ? { kind: 'folder', id, folder, children } : { kind: 'folder', id, folder, children, error };
}

/** A row's second line: its kind and how many files it changed. */
export function rowDescription(row: StoryRow): string {
    const files = row.checkpoint.files?.length ?? 0;
    const head = row.isHead ? ' · you are here' : '';
    return `${row.checkpoint.kind}${files > 0 ? ` · ${files} file${files === 1 ? '' : 's'}` : ''}${head}`;
}

export type ConflictChoice = 'overwrite' | 'skip';

/** The code restore of a row in its folder (a dry run first; then the user's answer to its conflicts). */
export function restoreParams(node: FolderRowNode, dryRun: boolean, choice?: ConflictChoice): RestoreParams & { folder: string } {
    const base: RestoreParams = { id: node.checkpoint.id, mode: 'code', dryRun };
    const answered: RestoreParams = choice === 'overwrite' ? { ...base, force: true } : choice === 'skip' ? { ...base, skipConflicts: true } : base;
    return inFolder(answered, node.folder);
}

/** The conflicting paths of a dry run (empty: restore as planned). */
export function conflictsOf(outcome: RestoreOutcomePayload): string[] {
    return outcome.kind === 'conflict' || outcome.kind === 'preview' ? outcome.files.filter(f => f.action === 'conflict').map(f => f.path) : [];
}

/** One line for the user after a restore in a folder. */
export function restoreMessage(outcome: RestoreOutcomePayload, folder: FolderInfo): string {
    switch (outcome.kind) {
        case 'applied':
        {
            const restored = outcome.files.length === 1 ? vscode.l10n.t('Restored 1 file in {0}', folder.name) : vscode.l10n.t('Restored {0} files in {1}', outcome.files.length, folder.name);
            const skipped = outcome.skipped.length > 0 ? vscode.l10n.t(' ({0} left as they are)', outcome.skipped.length) : '';
            return vscode.l10n.t('{0}{1}; the other folders are untouched.', restored, skipped);
        }
        case 'nothingToRestore':
            return vscode.l10n.t('Nothing to restore in {0}: its files already match.', folder.name);
        case 'conflict':
            return vscode.l10n.t('Not restored: {0} file(s) in {1} changed since.', outcome.files.filter(f => f.action === 'conflict').length, folder.name);
        case 'failed':
            return vscode.l10n.t('Restore in {0} failed: {1}', folder.name, outcome.error);
        case 'preview':
            return vscode.l10n.t('Restore in {0} would change {1} file(s).', folder.name, outcome.files.length);
    }
}
