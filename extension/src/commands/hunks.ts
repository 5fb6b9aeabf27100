/**
 * Restore one hunk or one file, from the editor's Keep/Undo lenses, from a checkpoint's diff view
 * (`retrace-cp:` documents) and from a timeline row. Hunks and patches are the server's
 * (`retrace/restore/hunks`, `retrace/restore/hunk`: hash-checked, a restore checkpoint, undone by
 * *Undo Last Restore*); a file goes through the ordinary restore flow with `paths`.
 */
import * as vscode from 'vscode';
import { CHECKPOINT_SCHEME, COMMANDS } from '../constants';
import { METHODS, type Checkpoint, type RestoreHunkResult, type Rpc } from '../client/protocol';
import { parseCheckpointUri } from '../diff/contentProvider';
import type { HunkLens } from '../diff/hunkLens';
import { hunkPick } from '../diff/hunkModel';
import { withFolder } from '../paths';
import { prompter } from '../ui';
import { choiceOf, isBackgroundRefusal, RESTORE_ANYWAY, STOP_AND_RESTORE, type BackgroundChoice } from '../views/models/backgroundModel';
import { checkpointLabel } from '../labels';
import { runRestore } from './restore';
import type { RestoreHooks } from './restoreHooks';
import { undoLastRestore } from './undo';
import { serverCommand, type Registration } from './registry';

export interface HunkCommandParts {
    readonly lens: HunkLens;
    readonly hooks: RestoreHooks;
    /** Refresh what a restore moves (timeline, highlights). */
    readonly afterRestore: () => void;
    readonly head: () => string | undefined;
    /** The checkpoint of a timeline row command (node, id or the selected row). */
    readonly rowTarget: (rpc: Rpc, arg: unknown) => Promise<{ readonly cp: Checkpoint; readonly folder: string | undefined }>;
}

/** One hunk restore; background commands running: the server's refusal names them, the user says
 * what to do (as for a code restore), then it is asked again. `undefined`: cancelled. */
async function requestHunk(rpc: Rpc, params: { checkpoint: string; path: string; hunk: string; expectedHash: string }, folder: string | undefined): Promise<RestoreHunkResult | undefined> {
    try {
        return await rpc.request(METHODS.restoreHunk, withFolder(params, folder));
    } catch (err) {
        if (!isBackgroundRefusal(err)) {
            throw err;
        }
        const message = err instanceof Error ? err.message : String(err);
        const background: BackgroundChoice | undefined = choiceOf(await prompter().modal(message, vscode.l10n.t('Stop them and restore the hunk, restore it anyway, or cancel.'), [STOP_AND_RESTORE, RESTORE_ANYWAY]));
        return background === undefined ? undefined : rpc.request(METHODS.restoreHunk, withFolder({ ...params, backgroundTasks: background }, folder));
    }
}

/** One hunk restore; `folder`: the root of the folder the file is in when not the first (its
 * store records the restore, and *Undo restore* undoes that folder's last restore). */
async function restoreHunk(rpc: Rpc, parts: HunkCommandParts, checkpoint: string, path: string, hunk: string, expectedHash: string, folder?: string): Promise<RestoreHunkResult | undefined> {
    const result = await requestHunk(rpc, { checkpoint, path, hunk, expectedHash }, folder);
    if (result === undefined) {
        return undefined;
    }
    parts.lens.refresh();
    parts.afterRestore();
    void prompter()
        .notify('info', vscode.l10n.t('Retrace: restored a hunk of {0}.', path), [vscode.l10n.t('Undo restore')])
        .then(choice => {
            if (choice !== vscode.l10n.t('Undo restore')) {
                return undefined;
            }
            return folder === undefined ? vscode.commands.executeCommand(COMMANDS.undoLastRestore) : undoLastRestore(rpc, parts.hooks, { folder });
        });
    return result;
}

/** Pick one of `path`'s hunks against `cp` (of the folder at `folder` when not the first) and restore it. */
async function pickAndRestoreHunk(rpc: Rpc, parts: HunkCommandParts, cp: string, path: string, folder?: string): Promise<RestoreHunkResult | undefined> {
    const listed = await rpc.request(METHODS.restoreHunks, withFolder({ checkpoint: cp, path }, folder));
    if (listed.hunks.length === 0) {
        void prompter().notify('info', vscode.l10n.t('Retrace: {0} is the same as at that checkpoint: no hunk to restore.', path), []);
        return undefined;
    }
    const picked = await vscode.window.showQuickPick(
        listed.hunks.map(h => ({ ...hunkPick(h), id: h.id })),
        { title: vscode.l10n.t('Restore a hunk of {0} as it was at {1}', path, cp.slice(0, 8)), placeHolder: vscode.l10n.t('Which hunk?') },
    );
    return picked === undefined ? undefined : restoreHunk(rpc, parts, listed.checkpoint, path, picked.id, listed.currentHash, folder);
}

async function pickFile(cp: Checkpoint, what: string): Promise<string | undefined> {
    const paths = [...new Set(cp.files.map(f => f.path))];
    if (paths.length === 0) {
        throw new Error(vscode.l10n.t('“{0}” changed no file', checkpointLabel(cp)));
    }
    return paths.length === 1 ? paths[0] : vscode.window.showQuickPick(paths, { title: vscode.l10n.t('{0} as it was at “{1}”', what, checkpointLabel(cp)), placeHolder: vscode.l10n.t('Which file?') });
}

/** The checkpoint side of the diff editor (or checkpoint document) a title-bar command came from;
 * `folder`: the diff is another folder's (its store answers, its files are restored). */
export function diffSide(arg: unknown): { path: string; checkpointId: string; folder?: string } {
    const uris: vscode.Uri[] = [];
    if (arg instanceof vscode.Uri) {
        uris.push(arg);
    }
    const input = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
    if (input instanceof vscode.TabInputTextDiff) {
        uris.push(input.modified, input.original);
    } else if (input instanceof vscode.TabInputText) {
        uris.push(input.uri);
    }
    for (const uri of uris) {
        if (uri.scheme === CHECKPOINT_SCHEME) {
            const side = parseCheckpointUri(uri);
            // A subagent's diff restores in its own timeline; another folder's (`folder=`) in that folder.
            if (side.checkpointId !== 'current' && side.scope === undefined) {
                const { path, checkpointId, folder } = side;
                return folder === undefined ? { path, checkpointId } : { path, checkpointId, folder };
            }
        }
    }
    throw new Error(vscode.l10n.t("open a checkpoint's diff first (timeline row → Open Changes or Compare with Current)"));
}

function str(v: unknown, what: string): string {
    if (typeof v !== 'string' || v === '') {
        throw new Error(`missing ${what}`);
    }
    return v;
}

/** One file of a checkpoint, through the ordinary restore flow with `paths`. */
function restoreFile(rpc: Rpc, parts: HunkCommandParts, cp: Checkpoint, path: string, folder?: string): Promise<unknown> {
    const inFolder = folder === undefined ? {} : { folder };
    const previousHead = folder === undefined ? parts.head() : undefined;
    return runRestore(rpc, { targetId: cp.id, mode: 'code', paths: [path], targetLabel: vscode.l10n.t('“{0}”', checkpointLabel(cp)), previousHead, confirmOverwrite: true, ...inFolder }, parts.hooks);
}

export function hunkCommands(parts: HunkCommandParts): Registration[] {
    const { lens } = parts;
    return [
        serverCommand(COMMANDS.hunkKeep, () => (_path: unknown, key: unknown) => lens.keep(str(key, 'hunk'))),
        serverCommand(COMMANDS.hunkUndo, rpc => (path: unknown, cp: unknown, hunk: unknown, hash: unknown, folder: unknown) =>
            restoreHunk(rpc, parts, str(cp, 'checkpoint'), str(path, 'path'), str(hunk, 'hunk'), str(hash, 'hash'), folder === undefined ? undefined : str(folder, 'folder')),
        ),
        serverCommand(COMMANDS.rowRestoreFile, rpc => async (arg: unknown, given: unknown) => {
            const { cp, folder } = await parts.rowTarget(rpc, arg);
            const path = typeof given === 'string' ? given : await pickFile(cp, vscode.l10n.t('Restore a file'));
            return path === undefined ? undefined : restoreFile(rpc, parts, cp, path, folder);
        }),
        serverCommand(COMMANDS.rowRestoreHunk, rpc => async (arg: unknown, given: unknown) => {
            const { cp, folder } = await parts.rowTarget(rpc, arg);
            const path = typeof given === 'string' ? given : await pickFile(cp, vscode.l10n.t('Restore a hunk of a file'));
            return path === undefined ? undefined : pickAndRestoreHunk(rpc, parts, cp.id, path, folder);
        }),
        serverCommand(COMMANDS.diffRestoreFile, rpc => async (arg: unknown) => {
            const side = diffSide(arg);
            const cp = (await rpc.request(METHODS.checkpointGet, withFolder({ id: side.checkpointId }, side.folder))).checkpoint;
            return restoreFile(rpc, parts, cp, side.path, side.folder);
        }),
        serverCommand(COMMANDS.diffRestoreHunk, rpc => async (arg: unknown) => {
            const side = diffSide(arg);
            return pickAndRestoreHunk(rpc, parts, side.checkpointId, side.path, side.folder);
        }),
    ];
}
