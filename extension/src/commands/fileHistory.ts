/**
 * The File History view's commands: show a file's history (editor, explorer, palette), open a
 * version ↔ the file now, compare with the previous version, restore the file to a version (the
 * server's per-file restore: `retrace/checkpoint/restore` with `paths`), load older versions and
 * pin. Version commands take the clicked row; tests may pass `{ path, version }` the same way.
 */
import * as vscode from 'vscode';
import { COMMANDS, VIEW_FILE_HISTORY } from '../constants';
import type { Rpc } from '../client/protocol';
import type { RestoreHooks } from './restoreHooks';
import { runRestore } from './restore';
import { openChanges } from '../diff/openDiff';
import { prompter } from '../ui';
import { diffWithCurrent, diffWithPrevious, type DiffRequest, type FileHistoryNode, type VersionNode } from '../views/models/fileHistoryModel';
import { selectedRow } from '../views/providers/selection';
import { localCommand, serverCommand, type Registration } from './registry';
import type { FileHistoryProvider } from '../views/providers/fileHistoryProvider';

export interface FileHistoryParts {
    readonly fileHistory: FileHistoryProvider;
    /** The timeline's head now (the undo target of a restore). */
    head(): string | undefined;
    /** The workspace restore's hooks (the server hears of dirty buffers first; the timeline and
     * the highlights refresh after). */
    readonly hooks: RestoreHooks;
}

/** The version a command was invoked on: its argument (a row's context menu, tests), else the
 * row selected in the view (a click: see `selectedRow`). */
async function versionOf(arg: unknown, view: vscode.TreeView<FileHistoryNode>): Promise<VersionNode> {
    const node = (arg ?? (await selectedRow(view, (n): n is VersionNode => n.kind === 'version'))) as Partial<VersionNode> | undefined;
    if (typeof node?.path !== 'string' || typeof node.version?.checkpointId !== 'string') {
        throw new Error(vscode.l10n.t('pick a version in the Retrace File History view first'));
    }
    const folder = typeof node.folder === 'string' ? { folder: node.folder } : {};
    return { kind: 'version', path: node.path, version: node.version, ...folder };
}

/** Whether `path` exists now in the first folder, or in the folder at `root`. */
async function existsNow(path: string, root: string | undefined): Promise<boolean> {
    const folder = root === undefined ? vscode.workspace.workspaceFolders?.[0] : { uri: vscode.Uri.file(root) };
    if (folder === undefined) {
        return false;
    }
    try {
        await vscode.workspace.fs.stat(vscode.Uri.joinPath(folder.uri, path));
        return true;
    } catch {
        return false;
    }
}

function open(diff: DiffRequest, root: string | undefined): Promise<void> {
    return openChanges([diff.file], diff.left, diff.right, diff.title, undefined, root);
}

/** Restore the file as it was at the picked version (another folder's: that folder's store). */
async function restoreVersion(rpc: Rpc, parts: FileHistoryParts, arg: unknown): Promise<unknown> {
    const { fileHistory } = parts;
    const { path, version, folder } = await versionOf(arg, fileHistory.view);
    // Another folder's file: that folder's store restores it (and its Undo undoes it there).
    const inFolder = folder === undefined ? {} : { folder };
    const result = await runRestore(
        rpc,
        { targetId: version.checkpointId, mode: 'code', paths: [path], targetLabel: `${path} as of “${version.title}”`, previousHead: folder === undefined ? parts.head() : undefined, confirmOverwrite: true, ...inFolder },
        parts.hooks,
    );
    fileHistory.scheduleRefresh();
    return result;
}

/** Show the checkpoints that touched the file given (explorer) or the active editor's. */
async function showFileHistory(fileHistory: FileHistoryProvider, arg: unknown): Promise<unknown> {
    const active = vscode.window.activeTextEditor?.document.uri;
    const uri = arg instanceof vscode.Uri ? arg : active;
    const where = uri === undefined ? undefined : fileHistory.locate(uri);
    if (where === undefined) {
        throw new Error(vscode.l10n.t('open or pick a file of the workspace to see the checkpoints that touched it'));
    }
    await vscode.commands.executeCommand(`${VIEW_FILE_HISTORY}.focus`);
    // A file picked in the explorer (not the active editor) stays while other editors open.
    await fileHistory.show(where.path, active === undefined || uri?.toString() !== active.toString(), where.folder);
    return fileHistory.versions;
}

export function fileHistoryCommands(parts: FileHistoryParts): Registration[] {
    const { fileHistory } = parts;
    return [
        serverCommand(COMMANDS.fileHistoryShow, () => (arg: unknown) => showFileHistory(fileHistory, arg)),
        serverCommand(COMMANDS.fileHistoryOpenVersion, () => async (arg: unknown) => {
            const { path, version, folder } = await versionOf(arg, fileHistory.view);
            await open(diffWithCurrent(path, version, await existsNow(path, folder)), folder);
        }),
        serverCommand(COMMANDS.fileHistoryComparePrevious, () => async (arg: unknown) => {
            const { path, version, folder } = await versionOf(arg, fileHistory.view);
            const diff = diffWithPrevious(path, version);
            if (diff === undefined) {
                void prompter().notify('info', vscode.l10n.t('Retrace: “{0}” is the first checkpoint; there is no earlier version of {1}.', version.title, path), []);
                return;
            }
            await open(diff, folder);
        }),
        serverCommand(COMMANDS.fileHistoryRestoreVersion, rpc => (arg: unknown) => restoreVersion(rpc, parts, arg)),
        serverCommand(COMMANDS.fileHistoryLoadOlder, () => () => fileHistory.loadOlder()),
        localCommand(COMMANDS.fileHistoryTogglePin, () => fileHistory.togglePin()),
    ];
}
