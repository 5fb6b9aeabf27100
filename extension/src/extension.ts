/**
 * Retrace's VS Code entry point: creates the log, the server context, the views and the commands.
 * Activation is cheap: the server starts only when this workspace already has a Retrace store
 * (a stat), in a demo folder, or when a Retrace view opens or a Retrace command runs; a window
 * that never uses Retrace starts no process. Activation failures are shown (VS Code itself would
 * not). Returns an API object the extension-host tests use.
 */
import * as vscode from 'vscode';
import { CHECKPOINT_SCHEME, COMMANDS } from './constants';
import { anyStoreHasSessions, isDemoFolder } from './commands/demo';
import { Ctx } from './ctx';
import { registerCommands } from './commands/index';
import { CheckpointContentProvider } from './diff/contentProvider';
import { ChangeHighlighter } from './diff/inlineDecorations';
import { HunkLens } from './diff/hunkLens';
import { MERGE_SCHEME, mergePreviews } from './diff/mergePreview';
import { closeStaleChangeViews, forgetOpenedChangeViews } from './diff/openDiff';
import { EditorStatePusher } from './editorState/capture';
import { restoreEditorState, saveDocuments } from './editorState/restore';
import { createLog, errorMessage, log } from './logging';
import { describeIgnored, onIgnoredSettings, type IgnoredValue } from './settings';
import { setPrompter } from './ui';
import { ChatViewProvider } from './views/providers/chatView';
import { BackgroundItem } from './views/providers/backgroundItem';
import { StatusItem } from './views/providers/statusItem';
import { RemoteItem } from './views/providers/remoteItem';
import { RemoteSessionsProvider } from './views/providers/remoteSessions';
import { watchCopilotModels } from './commands/modelProvider';
import { TimelineProvider } from './views/providers/timeline/provider';
import { HealthPanel } from './views/providers/healthPanel';
import { FileHistoryProvider } from './views/providers/fileHistoryProvider';
import { TerminalCommand } from './client/terminalHost';

export interface RetraceApi {
    readonly ctx: Ctx;
    readonly timeline: TimelineProvider;
    readonly fileHistory: FileHistoryProvider;
    readonly chat: ChatViewProvider;
    readonly health: HealthPanel;
    readonly highlighter: ChangeHighlighter;
    readonly status: StatusItem;
    readonly remote: RemoteItem;
    readonly remoteSessions: RemoteSessionsProvider;
    readonly background: BackgroundItem;
    readonly terminal: TerminalCommand;
    readonly editorState: EditorStatePusher;
    readonly contentProvider: CheckpointContentProvider;
    readonly setPrompter: typeof setPrompter;
    /** The extension's own instance of the changes-view bookkeeping (tests simulate a reload). */
    readonly changeViews: { readonly closeStale: typeof closeStaleChangeViews; readonly forget: typeof forgetOpenedChangeViews };
}

let ctxRef: Ctx | undefined;

/** Ignored workspace settings: one log line each and one non-modal note per batch. */
function reportIgnoredSettings(ignored: readonly IgnoredValue[]): void {
    for (const i of ignored) {
        log.warn(`settings: ${describeIgnored(i)}`);
    }
    const keys = [...new Set(ignored.map(i => `retrace.${i.key}`))].join(', ');
    const open = vscode.l10n.t('Open User Settings');
    void vscode.window
        .showInformationMessage(vscode.l10n.t("Retrace ignored this workspace's value of {0}: it may only be set in your user settings (permissions may only be made stricter).", keys), open)
        .then(pick => pick === open && vscode.commands.executeCommand('workbench.action.openGlobalSettings'));
}

/** Start the server at activation only where Retrace is already in use (no process otherwise). */
async function startIfUsed(ctx: Ctx, reveal: () => Promise<void>): Promise<void> {
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    if (folder !== undefined && (await isDemoFolder(folder))) {
        log.info('demo folder: starting Retrace');
        await reveal();
        await ctx.start();
    } else if (await anyStoreHasSessions(ctx.knownStoreDirs)) {
        log.info('this workspace has Retrace sessions: starting the server');
        await ctx.start();
    } else {
        log.info(`Retrace is idle until you open it (${COMMANDS.open})`);
    }
}

/** Every view and editor feature, built once over the one connection (`ctx`). */
function createParts(context: vscode.ExtensionContext, ctx: Ctx): Omit<RetraceApi, 'setPrompter' | 'changeViews'> & { readonly hunkLens: HunkLens } {
    const timeline = new TimelineProvider(ctx);
    const chat = new ChatViewProvider(ctx, context.extensionUri);
    const highlighter = new ChangeHighlighter(ctx, folder => timeline.timelineOf(folder), context.extensionUri);
    const health = new HealthPanel(ctx, context.extensionUri, {
        openCheckpoint: async (id, sessionId) => {
            await timeline.showCheckpoint(id, sessionId);
            await vscode.commands.executeCommand(COMMANDS.openDiff, id);
        },
    });
    return {
        ctx,
        timeline,
        fileHistory: new FileHistoryProvider(ctx),
        chat,
        health,
        highlighter,
        hunkLens: new HunkLens(ctx, highlighter),
        status: new StatusItem(ctx),
        remote: new RemoteItem(ctx),
        remoteSessions: new RemoteSessionsProvider(ctx),
        background: new BackgroundItem(ctx),
        terminal: new TerminalCommand(context),
        editorState: new EditorStatePusher(ctx),
        contentProvider: new CheckpointContentProvider(ctx),
    };
}

/** The parts' lifetimes and the wiring between them (events, content providers). */
function wire(context: vscode.ExtensionContext, parts: ReturnType<typeof createParts>): void {
    const { ctx, timeline, chat, terminal, contentProvider } = parts;
    ctx.handlers = {
        permission: request => chat.askPermission(request),
        save: saveDocuments,
        restoreState: restoreEditorState,
    };
    const { fileHistory, health, highlighter, hunkLens, status, remote, remoteSessions, background, editorState } = parts;
    context.subscriptions.push(
        ctx,
        ...[timeline, fileHistory, chat, health, highlighter, hunkLens, status, remote, remoteSessions, background, editorState, contentProvider, terminal],
        ctx.onDidChangeState(state => state.kind === 'running' && void terminal.serverStarted(state.interpreter.path)),
        vscode.workspace.registerTextDocumentContentProvider(CHECKPOINT_SCHEME, contentProvider),
        vscode.workspace.registerTextDocumentContentProvider(MERGE_SCHEME, mergePreviews),
        ctx.onTimelineChange(() => contentProvider.refreshCurrent()),
        chat.onDidChangeSession(id => {
            timeline.activeSessionId = id;
            timeline.scheduleRefresh();
        }),
    );
}

export function activate(context: vscode.ExtensionContext): RetraceApi | undefined {
    const output = createLog();
    context.subscriptions.push(output);
    try {
        onIgnoredSettings(reportIgnoredSettings);
        const ctx = new Ctx(context, output);
        ctxRef = ctx;
        const parts = createParts(context, ctx);
        wire(context, parts);
        registerCommands(parts);
        watchCopilotModels(ctx);
        void startIfUsed(ctx, () => parts.chat.reveal());
        void closeStaleChangeViews().then(n => n > 0 && log.info(`closed ${n} restored changes view(s) that had lost their file list`));
        const { hunkLens: _lens, ...api } = parts;
        return { ...api, setPrompter, changeViews: { closeStale: closeStaleChangeViews, forget: forgetOpenedChangeViews } };
    } catch (err) {
        log.error('activation failed', err);
        void vscode.window.showErrorMessage(vscode.l10n.t('Cannot activate Retrace: {0}', errorMessage(err)));
        return undefined;
    }
}

export async function deactivate(): Promise<void> {
    await ctxRef?.stop();
}
