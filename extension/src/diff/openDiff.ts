/**
 * Opening diffs: one file → `vscode.diff`, several → the multi-file `vscode.changes` view.
 * Left and right sides are `retrace-cp:` documents, or the real file for "current" so the user
 * can edit it in place.
 */
import * as vscode from 'vscode';
import type { FileChange, TaskRef } from '../client/protocol';
import { checkpointUri } from './contentProvider';

export interface DiffSide {
    /** A checkpoint id, or `current` for the workspace now. */
    readonly id: string;
    readonly label: string;
}

/** `path` in the first folder, or in the folder at `root` (another folder of the workspace). */
function workspaceFile(path: string, root?: string): vscode.Uri | undefined {
    if (root !== undefined) {
        return vscode.Uri.joinPath(vscode.Uri.file(root), path);
    }
    const folder = vscode.workspace.workspaceFolders?.[0];
    return folder === undefined ? undefined : vscode.Uri.joinPath(folder.uri, path);
}

function sideUri(path: string, side: DiffSide, scope: TaskRef | undefined, root: string | undefined): vscode.Uri {
    if (side.id === 'current' && scope === undefined) {
        return workspaceFile(path, root) ?? checkpointUri(path, 'current', undefined, root);
    }
    return checkpointUri(path, side.id, scope, root);
}

/**
 * Diff `files` between two states; nothing to show is said, not silently ignored. `scope`: the
 * states are a subagent's (its checkpoints, `current` = its workspace copy, never the user's file).
 * `root`: the states are another folder's (its store, its files).
 */
export async function openChanges(files: readonly FileChange[], left: DiffSide, right: DiffSide, title: string, scope?: TaskRef, root?: string): Promise<void> {
    if (files.length === 0) {
        void vscode.window.showInformationMessage(vscode.l10n.t('Retrace: no file changes between {0} and {1}.', left.label, right.label));
        return;
    }
    const triple = (f: FileChange): [vscode.Uri, vscode.Uri, vscode.Uri] => {
        // A file deleted on the right side only exists as checkpoint content there.
        const rightUri = f.status === 'deleted' && right.id === 'current' ? checkpointUri(f.path, 'current', scope, root) : sideUri(f.path, right, scope, root);
        const resource = scope === undefined ? (workspaceFile(f.path, root) ?? rightUri) : rightUri;
        return [resource, checkpointUri(f.oldPath ?? f.path, left.id, scope, root), rightUri];
    };
    if (files.length === 1) {
        const [, l, r] = triple(files[0] as FileChange);
        await vscode.commands.executeCommand('vscode.diff', l, r, `${files[0]?.path ?? ''} (${left.label} ↔ ${right.label})`, { preview: true });
        return;
    }
    openedViews.add(title);
    await vscode.commands.executeCommand('vscode.changes', title, files.map(triple));
}

/** Titles of the multi-file changes views opened since activation (their file lists are live). */
const openedViews = new Set<string>();

/** Forget which changes views this activation opened (tests simulate a window reload). */
export function forgetOpenedChangeViews(): void {
    openedViews.clear();
}

/** A tab this activation opened: its label is the title, or the title with VS Code's file count
 *  appended ("Retrace: Starting point ↔ current (3 files)"). */
function isOpenedView(label: string): boolean {
    return openedViews.has(label) || [...openedViews].some(title => label.startsWith(`${title} (`));
}

function isKnownInput(input: unknown): boolean {
    return (
        input instanceof vscode.TabInputText ||
        input instanceof vscode.TabInputTextDiff ||
        input instanceof vscode.TabInputCustom ||
        input instanceof vscode.TabInputWebview ||
        input instanceof vscode.TabInputNotebook ||
        input instanceof vscode.TabInputNotebookDiff ||
        input instanceof vscode.TabInputTerminal
    );
}

/**
 * After a window reload VS Code restores a multi-file changes tab without its file list, so it
 * shows "No Changed Files". Retrace's changes views (titled "Retrace: …") that this activation did
 * not open are such empty shells: close them (the timeline opens them again on a click).
 * Returns how many were closed.
 */
export async function closeStaleChangeViews(): Promise<number> {
    const stale = vscode.window.tabGroups.all
        .flatMap(g => g.tabs)
        .filter(t => t.label.startsWith('Retrace: ') && !isKnownInput(t.input) && !isOpenedView(t.label));
    if (stale.length > 0) {
        await vscode.window.tabGroups.close(stale, true);
    }
    return stale.length;
}
