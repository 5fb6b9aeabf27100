/**
 * The File History view's commands: show a file's history (editor, explorer, palette), open a
 * version ↔ the file now, compare with the previous version, restore the file to a version (the
 * server's per-file restore: `retrace/checkpoint/restore` with `paths`), load older versions and
 * pin. Version commands take the clicked row; tests may pass `{ path, version }` the same way.
 */
import * as vscode from 'vscode';
import { COMMANDS, VIEW_FILE_HISTORY } from '../constants';
import type { Ctx } from '../ctx';
import type { RestoreOutcome } from '../client/protocol';
import { runRestore } from './restore';
import { openChanges } from '../diff/openDiff';
import { prompter } from '../ui';
import { diffWithCurrent, diffWithPrevious, type DiffRequest, type FileHistoryNode, type VersionNode } from '../views/models/fileHistoryModel';
import { selectedRow } from '../views/providers/selection';
import type { FileHistoryProvider } from '../views/providers/fileHistoryProvider';

export interface FileHistoryParts {
    readonly ctx: Ctx;
    readonly fileHistory: FileHistoryProvider;
    /** The timeline's head now (the undo target of a restore). */
    head(): string | undefined;
    /** After an applied restore (refresh the timeline and the highlights). */
    onRestored(outcome: RestoreOutcome): void;
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

export function registerFileHistoryCommands(parts: FileHistoryParts): void {
    const { ctx, fileHistory } = parts;

    ctx.registerCommand(COMMANDS.fileHistoryShow, () => async (arg: unknown) => {
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
    });

    ctx.registerCommand(COMMANDS.fileHistoryOpenVersion, () => async (arg: unknown) => {
        const { path, version, folder } = await versionOf(arg, fileHistory.view);
        await open(diffWithCurrent(path, version, await existsNow(path, folder)), folder);
    });

    ctx.registerCommand(COMMANDS.fileHistoryComparePrevious, () => async (arg: unknown) => {
        const { path, version, folder } = await versionOf(arg, fileHistory.view);
        const diff = diffWithPrevious(path, version);
        if (diff === undefined) {
            void prompter().notify('info', vscode.l10n.t('Retrace: “{0}” is the first checkpoint; there is no earlier version of {1}.', version.title, path), []);
            return;
        }
        await open(diff, folder);
    });

    ctx.registerCommand(COMMANDS.fileHistoryRestoreVersion, rpc => async (arg: unknown) => {
        const { path, version, folder } = await versionOf(arg, fileHistory.view);
        // Another folder's file: that folder's store restores it (and its Undo undoes it there).
        const inFolder = folder === undefined ? {} : { folder };
        const result = await runRestore(
            rpc,
            { targetId: version.checkpointId, mode: 'code', paths: [path], targetLabel: `${path} as of “${version.title}”`, previousHead: folder === undefined ? parts.head() : undefined, confirmOverwrite: true, ...inFolder },
            { onConversationRestored: () => undefined, onRestored: outcome => parts.onRestored(outcome) },
        );
        fileHistory.scheduleRefresh();
        return result;
    });

    ctx.registerCommand(COMMANDS.fileHistoryLoadOlder, () => () => fileHistory.loadOlder());
    ctx.extension.subscriptions.push(vscode.commands.registerCommand(COMMANDS.fileHistoryTogglePin, () => fileHistory.togglePin()));
}
