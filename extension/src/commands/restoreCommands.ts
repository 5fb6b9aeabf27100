/**
 * The restore commands of the timeline and the chat: Restore Code / Conversation / Both of a row
 * (or inside a subagent's own timeline), Fork, Restore to Checkpoint… (a pick over the server's
 * whole list), Restore to a chat prompt's restore point, a file restore from the change
 * highlight's hover, and the undos. Each runs the one restore flow (`restore.ts`).
 */
import * as vscode from 'vscode';
import { COMMANDS } from '../constants';
import { METHODS, type RestoreResult, type Rpc, type TaskRef, type TimelineGetResult } from '../client/protocol';
import { inFolderRpc } from '../client/folderRpc';
import { checkpointLabel } from '../labels';
import { log } from '../logging';
import { prompter } from '../ui';
import { codeOnlyReason } from '../views/models/agentModel';
import { isPromptRef } from '../webview/restoreMessages';
import type { CommandKit } from './parts';
import { serverCommand, type Registration } from './registry';
import { runRestore } from './restore';
import type { RestoreMode } from './restoreDecision';
import { checkpointPicks, modePicks } from './restorePick';
import { isRestoreMode, restoreToPrompt } from './restorePrompt';
import type { Target } from './targets';
import { undoLastRestore } from './undo';

/** Restore one mode of the row a command names (its node, id or the selected row). */
type RestoreRow = (rpc: Rpc, arg: unknown) => Promise<RestoreResult | undefined>;

/** Inside a subagent's own timeline: its workspace copy, on disk (the server refuses anything but
 * code there); its timeline reloads after. */
function restoreInTask(kit: CommandKit, { cp, rpc }: Target, task: TaskRef, mode: RestoreMode): Promise<RestoreResult | undefined> {
    const childHooks = { onConversationRestored: (): void => undefined, onRestored: (): void => void kit.timeline.reloadTask(task) };
    const label = vscode.l10n.t("“{0}” in the subagent's copy", checkpointLabel(cp));
    return runRestore(rpc, { targetId: cp.id, mode, targetLabel: label, previousHead: undefined, confirmOverwrite: true, task }, childHooks);
}

/** Restore `mode` of the row a command names; the chat follows a moved conversation. */
function restoreRow(kit: CommandKit, mode: RestoreMode): RestoreRow {
    const { timeline, chat } = kit;
    return async (given, arg) => {
        const target = await kit.targets.of(given, arg);
        if (target.scope !== undefined) {
            return restoreInTask(kit, target, target.scope, mode);
        }
        const { cp, folder, rpc } = target;
        // A row of another folder: its store restores (dry run, dialogs, undo: that folder's).
        // The agent's own folder restores as in a one-folder workspace ("Why?", global Undo).
        const inFolder = folder === undefined || folder === timeline.agentFolder ? {} : { folder };
        // The row's title as the server words it ("Write: notes.txt"), else the checkpoint's label.
        const targetLabel = vscode.l10n.t('“{0}”', timeline.rowOf(cp.id, folder)?.title ?? checkpointLabel(cp));
        const result = await runRestore(rpc, { targetId: cp.id, mode, targetLabel, previousHead: timeline.headOf(folder), confirmOverwrite: true, ...inFolder }, kit.hooks);
        if (mode !== 'code' && result?.conversationHead && chat.sessionId !== cp.sessionId) {
            await chat.showSession(cp.sessionId);
        }
        chat.offerPrompt(result?.restoredPrompt);
        return result;
    };
}

/** The server's list: every checkpoint (not only the loaded pages); the loaded rows if it fails. */
async function pickList(kit: CommandKit, rpc: Rpc): Promise<TimelineGetResult> {
    return rpc.request(METHODS.timelineGet, {}).catch((err: unknown) => {
        log.warn(`restore pick: the loaded rows only (${String(err)})`);
        return kit.timeline.timeline ?? Promise.reject(err instanceof Error ? err : new Error(String(err)));
    });
}

/** Restore to Checkpoint…: pick a checkpoint (bookmarks first), then what goes back. */
function restoreToCheckpoint(kit: CommandKit, restoreMode: (mode: RestoreMode) => RestoreRow): (rpc: Rpc) => () => Promise<unknown> {
    const { timeline } = kit;
    return rpc => async () => {
        const picked = await vscode.window.showQuickPick(checkpointPicks(await pickList(kit, rpc), Date.now(), id => timeline.rowOf(id)?.title), {
            title: vscode.l10n.t('Retrace: Restore to Checkpoint'),
            placeHolder: vscode.l10n.t('Pick a checkpoint (bookmarks first, then newest first)'),
            matchOnDescription: true,
            matchOnDetail: true,
        });
        if (picked === undefined) {
            return undefined;
        }
        const row = timeline.rowOf(picked.checkpointId);
        const modes = modePicks(row === undefined ? undefined : codeOnlyReason(row));
        const mode = await vscode.window.showQuickPick(modes, { title: vscode.l10n.t('Retrace: restore “{0}”', picked.label), placeHolder: vscode.l10n.t('What should go back?') });
        return mode === undefined ? undefined : restoreMode(mode.mode)(rpc, picked.checkpointId);
    };
}

/** Fork: restore both, then the chat continues from there (the old branch stays). */
function fork(kit: CommandKit, both: RestoreRow): (rpc: Rpc) => (arg: unknown) => Promise<unknown> {
    return rpc => async (arg: unknown) => {
        const result = await both(rpc, arg);
        if (result?.outcome.kind === 'applied' || (result?.conversationHead ?? null) !== null) {
            await kit.chat.reveal();
            void prompter().notify('info', vscode.l10n.t('Retrace: forked — your next prompt continues from this checkpoint; the old branch stays in the timeline.'), []);
        }
        return result;
    };
}

/** From the change highlight's hover: `folder`, the root of the file's folder when not the first. */
function restoreFileBefore(kit: CommandKit): (server: Rpc) => (path: unknown, checkpointId: unknown, folder: unknown) => Promise<unknown> {
    return server => async (path, checkpointId, folder) => {
        if (typeof path !== 'string' || typeof checkpointId !== 'string' || (folder !== undefined && typeof folder !== 'string')) {
            throw new Error('restore file needs a path, a checkpoint id and (another folder) its root');
        }
        const rpc = inFolderRpc(server, folder);
        const cp = folder === undefined ? await kit.targets.firstFolder(rpc, checkpointId) : (await rpc.request(METHODS.checkpointGet, { id: checkpointId })).checkpoint;
        if (cp.parent === null) {
            throw new Error(`checkpoint ${cp.id} has no parent to restore to`);
        }
        const target = { targetId: cp.parent, mode: 'code' as const, paths: [path], targetLabel: vscode.l10n.t('before “{0}”', checkpointLabel(cp)), previousHead: kit.timeline.headOf(folder), confirmOverwrite: true };
        return runRestore(rpc, folder === undefined ? target : { ...target, folder }, kit.hooks);
    };
}

/** From the chat: a prompt's restore point (args: a PromptRef and the mode). */
function restoreFromChat(kit: CommandKit): (rpc: Rpc) => (ref: unknown, mode: unknown) => Promise<unknown> {
    return rpc => async (ref, mode) => {
        if (!isPromptRef(ref) || !isRestoreMode(mode)) {
            throw new Error('restore to a prompt needs the prompt and a mode (code, conversation or both)');
        }
        const result = await restoreToPrompt(rpc, ref, mode, kit.hooks, kit.timeline.head);
        kit.chat.offerPrompt(result?.restoredPrompt);
        return result;
    };
}

/** Undo a restore by restoring the state before it (the restore notification's target). */
function undoRestore(kit: CommandKit): (rpc: Rpc) => (targetId: unknown, mode: unknown) => Promise<unknown> {
    return rpc => async (targetId, mode) => {
        if (typeof targetId !== 'string') {
            throw new Error('undo restore needs the checkpoint to go back to');
        }
        const m: RestoreMode = mode === 'conversation' || mode === 'both' ? mode : 'code';
        return runRestore(rpc, { targetId, mode: m, targetLabel: vscode.l10n.t('the state before the restore'), previousHead: kit.timeline.head, confirmOverwrite: false }, kit.hooks);
    };
}

export function restoreCommands(kit: CommandKit): Registration[] {
    const row = (mode: RestoreMode): RestoreRow => restoreRow(kit, mode);
    const command = (mode: RestoreMode) => (rpc: Rpc) => (arg: unknown) => row(mode)(rpc, arg);
    return [
        serverCommand(COMMANDS.restoreToCheckpoint, restoreToCheckpoint(kit, row)),
        serverCommand(COMMANDS.restoreCode, command('code')),
        serverCommand(COMMANDS.restoreConversation, command('conversation')),
        serverCommand(COMMANDS.restoreBoth, command('both')),
        serverCommand(COMMANDS.fork, fork(kit, row('both'))),
        serverCommand(COMMANDS.restoreToPrompt, restoreFromChat(kit)),
        serverCommand(COMMANDS.restoreFileBefore, restoreFileBefore(kit)),
        serverCommand(COMMANDS.undoRestore, undoRestore(kit)),
        serverCommand(COMMANDS.undoLastRestore, rpc => () => undoLastRestore(rpc, kit.hooks)),
    ];
}
