/**
 * Every command, registered once. Server-backed commands are factories (see `Ctx.registerCommand`):
 * while the server is down they say so instead of failing obscurely. Tree commands receive the
 * clicked node; tests may pass a checkpoint id instead.
 */
import * as vscode from 'vscode';
import { COMMANDS, SECRET_API_KEY, VIEW_TIMELINE } from '../constants';
import type { Ctx } from '../ctx';
import { METHODS, type Checkpoint, type RestoreOutcome, type Rpc, type TaskRef } from '../client/protocol';
import { inFolderRpc } from '../client/folderRpc';
import type { ChangeHighlighter } from '../diff/inlineDecorations';
import { openChanges } from '../diff/openDiff';
import { log } from '../logging';
import type { ChatViewProvider } from '../views/providers/chatView';
import { selectedRow } from '../views/providers/selection';
import type { TimelineProvider } from '../views/providers/timeline/provider';
import { checkpointLabel } from '../labels';
import type { CheckpointNode } from '../views/models/timelineModel';
import { prompter } from '../ui';
import { createDemoFolder } from './demo';
import { exportToGit } from './exportGit';
import { runRestore, undoLastRestore } from './restore';
import { registerHunkCommands } from './hunks';
import { registerBookmarkCommands } from './bookmarks';
import type { HunkLens } from '../diff/hunkLens';
import { isRestoreMode, restoreToPrompt } from './restorePrompt';
import { isPromptRef } from '../webview/restoreMessages';
import { registerTaskCommands } from './tasks';
import { checkpointPicks, modePicks } from './restorePick';
import { codeOnlyReason } from '../views/models/agentModel';
import { verifyStore } from './verify';
import { collectGarbage, showStorageAlert } from './health';
import { AGENT_COMMANDS, integrateAgent } from './agents';
import { chooseLanguageModel } from './languageModel';
import type { RestoreMode } from './restoreDecision';

export interface Parts {
    readonly ctx: Ctx;
    readonly timeline: TimelineProvider;
    readonly chat: ChatViewProvider;
    readonly highlighter: ChangeHighlighter;
    readonly hunkLens: HunkLens;
}

function isCheckpointNode(value: unknown): value is CheckpointNode {
    return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'checkpoint' && 'checkpoint' in value;
}

/** A fresh demo folder from the sample shipped in the extension, opened in a new window. */
async function tryDemo(ctx: Ctx): Promise<string | undefined> {
    const source = vscode.Uri.joinPath(ctx.extension.extensionUri, 'extension', 'media', 'demo-workspace').fsPath;
    const base = vscode.Uri.joinPath(ctx.extension.globalStorageUri, 'demo').fsPath;
    try {
        const folder = await createDemoFolder(source, base);
        log.info(`demo folder created: ${folder}`);
        await vscode.commands.executeCommand('vscode.openFolder', vscode.Uri.file(folder), { forceNewWindow: true });
        return folder;
    } catch (err) {
        log.error('creating the demo folder failed', err);
        void vscode.window.showErrorMessage(vscode.l10n.t('Retrace: cannot create the demo folder: {0}', err instanceof Error ? err.message : String(err)));
        return undefined;
    }
}

export function registerCommands(parts: Parts): void {
    const { ctx, timeline, chat, highlighter, hunkLens } = parts;
    ctx.extension.subscriptions.push(ctx.onStorageAlert(alert => void showStorageAlert(alert)));

    /**
     * The checkpoint a tree command was invoked on (node, or an id from tests and hovers), the
     * subagent timeline it belongs to (`scope`, for a row nested under a `task` row), and, in a
     * multi-root workspace, the row's folder (`folder`, its root) with `rpc` naming it in every
     * request (the row's own store).
     */
    const targetOf = async (rpc: Rpc, arg: unknown): Promise<{ cp: Checkpoint; scope: TaskRef | undefined; folder: string | undefined; rpc: Rpc }> => {
        const row = (node: CheckpointNode): { cp: Checkpoint; scope: TaskRef | undefined; folder: string | undefined; rpc: Rpc } => ({
            cp: node.checkpoint,
            scope: node.scope,
            folder: node.folder,
            rpc: inFolderRpc(rpc, node.folder),
        });
        if (isCheckpointNode(arg)) {
            return row(arg);
        }
        if (typeof arg === 'string' && arg !== '') {
            return { cp: timeline.checkpoint(arg) ?? (await rpc.request(METHODS.checkpointGet, { id: arg })).checkpoint, scope: undefined, folder: undefined, rpc };
        }
        const selected = await selectedRow(timeline.view, (n): n is CheckpointNode => n.kind === 'checkpoint');
        if (selected !== undefined) {
            return row(selected);
        }
        throw new Error('select a checkpoint in the Retrace timeline first');
    };
    /** The checkpoint (and its folder) of a command that works on a workspace timeline only. */
    const rowTarget = async (rpc: Rpc, arg: unknown): Promise<{ cp: Checkpoint; folder: string | undefined; rpc: Rpc }> => {
        const target = await targetOf(rpc, arg);
        if (target.scope !== undefined) {
            throw new Error("this works on the workspace's timeline, not inside a subagent's");
        }
        return target;
    };
    /** The checkpoint of a command that works on the first folder's timeline only (the agent's). */
    const checkpointOf = async (rpc: Rpc, arg: unknown): Promise<Checkpoint> => {
        const { cp, folder } = await rowTarget(rpc, arg);
        if (folder !== undefined && folder !== timeline.agentFolder) {
            throw new Error(vscode.l10n.t('this works in the first folder of the workspace only'));
        }
        return cp;
    };

    const afterRestore = (): void => {
        timeline.scheduleRefresh();
        highlighter.schedule();
    };
    const hooks = {
        onConversationRestored: (): void => void chat.reload(),
        onRestored: (_outcome: RestoreOutcome): void => afterRestore(),
    };

    const restore = (mode: RestoreMode) => (given: Rpc) => async (arg: unknown) => {
        const { cp, scope, folder, rpc } = await targetOf(given, arg);
        if (scope !== undefined) {
            // Inside a subagent's own timeline: its workspace copy, on disk (the server refuses
            // anything but code there).
            const childHooks = { onConversationRestored: (): void => undefined, onRestored: (): void => void timeline.reloadTask(scope) };
            const label = vscode.l10n.t("“{0}” in the subagent's copy", checkpointLabel(cp));
            return runRestore(rpc, { targetId: cp.id, mode, targetLabel: label, previousHead: undefined, confirmOverwrite: true, task: scope }, childHooks);
        }
        const result = await runRestore(
            rpc,
            // The row's title as the server words it ("Write: notes.txt"), else the checkpoint's label.
            {
                targetId: cp.id,
                mode,
                targetLabel: vscode.l10n.t('“{0}”', timeline.rowOf(cp.id, folder)?.title ?? checkpointLabel(cp)),
                previousHead: timeline.headOf(folder),
                confirmOverwrite: true,
                // A row of another folder: its store restores (dry run, dialogs, undo: that folder's).
                // The agent's own folder restores as in a one-folder workspace ("Why?", global Undo).
                ...(folder === undefined || folder === timeline.agentFolder ? {} : { folder }),
            },
            hooks,
        );
        if (mode !== 'code' && result?.conversationHead && chat.sessionId !== cp.sessionId) {
            await chat.showSession(cp.sessionId);
        }
        chat.offerPrompt(result?.restoredPrompt);
        return result;
    };

    ctx.registerCommand(COMMANDS.restoreToCheckpoint, rpc => async () => {
        // The server's list: every checkpoint (not only the loaded pages), bookmarks first in its order.
        const data = await rpc.request(METHODS.timelineGet, {}).catch((err: unknown) => {
            log.warn(`restore pick: the loaded rows only (${String(err)})`);
            return timeline.timeline ?? Promise.reject(err instanceof Error ? err : new Error(String(err)));
        });
        const picked = await vscode.window.showQuickPick(checkpointPicks(data, Date.now(), id => timeline.rowOf(id)?.title), {
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
        return mode === undefined ? undefined : restore(mode.mode)(rpc)(picked.checkpointId);
    });

    ctx.registerCommand(COMMANDS.restoreCode, restore('code'));
    ctx.registerCommand(COMMANDS.restoreConversation, restore('conversation'));
    ctx.registerCommand(COMMANDS.restoreBoth, restore('both'));

    ctx.registerCommand(COMMANDS.fork, rpc => async (arg: unknown) => {
        const result = await restore('both')(rpc)(arg);
        if (result?.outcome.kind === 'applied' || (result?.conversationHead ?? null) !== null) {
            await chat.reveal();
            void prompter().notify('info', vscode.l10n.t('Retrace: forked — your next prompt continues from this checkpoint; the old branch stays in the timeline.'), []);
        }
        return result;
    });

    ctx.registerCommand(COMMANDS.undoRestore, rpc => async (targetId: unknown, mode: unknown) => {
        if (typeof targetId !== 'string') {
            throw new Error('undo restore needs the checkpoint to go back to');
        }
        const m: RestoreMode = mode === 'conversation' || mode === 'both' ? mode : 'code';
        return runRestore(rpc, { targetId, mode: m, targetLabel: vscode.l10n.t('the state before the restore'), previousHead: timeline.head, confirmOverwrite: false }, hooks);
    });

    ctx.registerCommand(COMMANDS.undoLastRestore, rpc => () => undoLastRestore(rpc, hooks));
    registerHunkCommands({ ctx, lens: hunkLens, hooks, afterRestore, head: () => timeline.head, rowTarget });
    registerBookmarkCommands({ ctx, rowTarget, rowOf: (id, folder) => timeline.rowOf(id, folder), refresh: () => timeline.scheduleRefresh() });

    // From the chat: a prompt's restore point (args: a PromptRef and the mode).
    ctx.registerCommand(COMMANDS.restoreToPrompt, rpc => async (ref: unknown, mode: unknown) => {
        if (!isPromptRef(ref) || !isRestoreMode(mode)) {
            throw new Error('restore to a prompt needs the prompt and a mode (code, conversation or both)');
        }
        const result = await restoreToPrompt(rpc, ref, mode, hooks, timeline.head);
        chat.offerPrompt(result?.restoredPrompt);
        return result;
    });

    // From the change highlight's hover: `folder`, the root of the file's folder when not the first.
    ctx.registerCommand(COMMANDS.restoreFileBefore, server => async (path: unknown, checkpointId: unknown, folder: unknown) => {
        if (typeof path !== 'string' || typeof checkpointId !== 'string' || (folder !== undefined && typeof folder !== 'string')) {
            throw new Error('restore file needs a path, a checkpoint id and (another folder) its root');
        }
        const rpc = inFolderRpc(server, folder);
        const cp = folder === undefined ? await checkpointOf(rpc, checkpointId) : (await rpc.request(METHODS.checkpointGet, { id: checkpointId })).checkpoint;
        if (cp.parent === null) {
            throw new Error(`checkpoint ${cp.id} has no parent to restore to`);
        }
        const target = { targetId: cp.parent, mode: 'code' as const, paths: [path], targetLabel: vscode.l10n.t('before “{0}”', checkpointLabel(cp)), previousHead: timeline.headOf(folder), confirmOverwrite: true };
        return runRestore(rpc, folder === undefined ? target : { ...target, folder }, hooks);
    });

    const summarize = (direction: 'from' | 'upTo') => (rpc: Rpc) => async (arg: unknown) => {
        const cp = await checkpointOf(rpc, arg);
        const summary = await vscode.window.withProgress(
            { location: vscode.ProgressLocation.Notification, title: direction === 'from' ? vscode.l10n.t('Retrace: summarizing the conversation after “{0}”…', checkpointLabel(cp)) : vscode.l10n.t('Retrace: summarizing the conversation up to “{0}”…', checkpointLabel(cp)) },
            () => rpc.request(METHODS.conversationSummarize, { id: cp.id, direction }),
        );
        await chat.reload();
        timeline.scheduleRefresh();
        void prompter().notify('info', vscode.l10n.t('Retrace: conversation summarized (checkpoint {0}).', summary.id.slice(0, 8)), []);
        return summary;
    };
    ctx.registerCommand(COMMANDS.summarizeFrom, summarize('from'));
    ctx.registerCommand(COMMANDS.summarizeUpTo, summarize('upTo'));

    ctx.registerCommand(COMMANDS.openDiff, given => async (arg: unknown) => {
        const { cp, scope, folder } = await targetOf(given, arg);
        if (cp.parent === null) {
            void prompter().notify('info', vscode.l10n.t('Retrace: “{0}” is the first checkpoint; it has nothing to compare with.', checkpointLabel(cp)), []);
            return;
        }
        const title = scope === undefined ? vscode.l10n.t('Retrace: {0}', checkpointLabel(cp)) : vscode.l10n.t('Retrace: {0} (subagent)', checkpointLabel(cp));
        await openChanges(cp.files, { id: cp.parent, label: vscode.l10n.t('before') }, { id: cp.id, label: checkpointLabel(cp) }, title, scope, folder);
    });

    ctx.registerCommand(COMMANDS.compareWithCurrent, given => async (arg: unknown) => {
        const { cp, scope, folder, rpc } = await targetOf(given, arg);
        const diff = await rpc.request(METHODS.checkpointDiff, { from: cp.id, ...(scope === undefined ? {} : { task: scope }) });
        const current = scope === undefined ? vscode.l10n.t('current') : vscode.l10n.t("the subagent's copy");
        await openChanges(diff.files, { id: cp.id, label: checkpointLabel(cp) }, { id: 'current', label: current }, vscode.l10n.t('Retrace: {0} ↔ {1}', checkpointLabel(cp), current), scope, folder);
    });

    ctx.registerCommand(COMMANDS.copyId, rpc => async (arg: unknown) => {
        const { cp } = await targetOf(rpc, arg);
        await vscode.env.clipboard.writeText(cp.id);
        return cp.id;
    });

    ctx.registerCommand(COMMANDS.exportGit, given => async (arg: unknown) => {
        const { cp, rpc } = await rowTarget(given, arg); // another folder's row: that folder's repository
        return exportToGit(rpc, cp);
    });

    ctx.registerCommand(COMMANDS.showChangesSince, rpc => async (arg: unknown) => {
        const cp = await checkpointOf(rpc, arg);
        highlighter.setScope({ kind: 'since', checkpointId: cp.id });
        void prompter().notify('info', vscode.l10n.t('Retrace: highlighting changes since “{0}”.', checkpointLabel(cp)), []);
    });

    ctx.registerCommand(COMMANDS.timelineRefresh, () => () => timeline.refresh());
    registerTaskCommands(ctx, timeline, () => highlighter.schedule());
    ctx.registerCommand(COMMANDS.verifyStore, rpc => () => verifyStore(rpc, ctx.output));
    ctx.registerCommand(COMMANDS.collectGarbage, rpc => () => collectGarbage(rpc));
    for (const { command, agent, remove } of AGENT_COMMANDS) {
        ctx.registerCommand(command, rpc => () => integrateAgent(rpc, agent, remove));
    }

    ctx.registerCommand(COMMANDS.prompt, () => async (text: unknown) => {
        const prompt = typeof text === 'string' ? text : await vscode.window.showInputBox({ prompt: vscode.l10n.t('Ask the Retrace agent'), placeHolder: vscode.l10n.t('What should the agent do?') });
        if (prompt === undefined || prompt.trim() === '') {
            return undefined;
        }
        await chat.reveal();
        return chat.send(prompt);
    });
    ctx.registerCommand(COMMANDS.cancel, () => () => chat.cancel());

    // These work without a running server.
    const direct = (id: string, fn: (...args: unknown[]) => unknown): void => {
        ctx.extension.subscriptions.push(vscode.commands.registerCommand(id, fn));
    };
    direct(COMMANDS.open, async () => {
        await chat.reveal();
        void ctx.start();
    });
    direct(COMMANDS.tryDemo, () => tryDemo(ctx));
    direct(COMMANDS.chooseLanguageModel, () => chooseLanguageModel());
    direct(COMMANDS.newSession, () => chat.newSession());
    direct(COMMANDS.restartServer, () => ctx.restart());
    direct(COMMANDS.installServer, () => ctx.installServerDependencies());
    direct(COMMANDS.showLogs, () => ctx.output.show());
    direct(COMMANDS.timelineReveal, () => vscode.commands.executeCommand(`${VIEW_TIMELINE}.focus`));
    direct(COMMANDS.decorationsLastTurn, () => highlighter.setScope({ kind: 'lastTurn' }));
    direct(COMMANDS.decorationsClear, () => highlighter.setScope({ kind: 'off' }));
    direct(COMMANDS.setApiKey, async () => {
        const key = await vscode.window.showInputBox({ prompt: vscode.l10n.t('Anthropic API key (stored in VS Code secret storage)'), password: true, ignoreFocusOut: true });
        if (key === undefined) {
            return;
        }
        if (key.trim() === '') {
            await ctx.extension.secrets.delete(SECRET_API_KEY);
            log.info('API key removed');
        } else {
            await ctx.extension.secrets.store(SECRET_API_KEY, key.trim());
            log.info('API key stored (not logged)');
        }
        await ctx.restart(); // the key reaches the server through its environment
    });
}
