/**
 * Retrace's VS Code entry point: creates the log, the server context, the views, the commands,
 * and starts the server. Activation failures are shown (VS Code itself would not). Returns an
 * API object the extension-host tests use.
 */
import * as vscode from 'vscode';
import { CHECKPOINT_SCHEME } from './constants';
import { Ctx } from './ctx';
import { registerCommands } from './commands/index';
import { CheckpointContentProvider } from './diff/contentProvider';
import { ChangeHighlighter } from './diff/inlineDecorations';
import { MERGE_SCHEME, mergePreviews } from './diff/mergePreview';
import { closeStaleChangeViews, forgetOpenedChangeViews } from './diff/openDiff';
import { EditorStatePusher } from './editorState/capture';
import { restoreEditorState, saveDocuments } from './editorState/restore';
import { createLog, errorMessage, log } from './logging';
import { setPrompter } from './ui';
import { ChatViewProvider } from './views/chatView';
import { StatusItem } from './views/statusItem';
import { TimelineProvider } from './views/timelineProvider';

export interface RetraceApi {
    readonly ctx: Ctx;
    readonly timeline: TimelineProvider;
    readonly chat: ChatViewProvider;
    readonly highlighter: ChangeHighlighter;
    readonly status: StatusItem;
    readonly editorState: EditorStatePusher;
    readonly contentProvider: CheckpointContentProvider;
    readonly setPrompter: typeof setPrompter;
    /** The extension's own instance of the changes-view bookkeeping (tests simulate a reload). */
    readonly changeViews: { readonly closeStale: typeof closeStaleChangeViews; readonly forget: typeof forgetOpenedChangeViews };
}

let ctxRef: Ctx | undefined;

export function activate(context: vscode.ExtensionContext): RetraceApi | undefined {
    const output = createLog();
    context.subscriptions.push(output);
    try {
        const ctx = new Ctx(context, output);
        ctxRef = ctx;
        const timeline = new TimelineProvider(ctx);
        const chat = new ChatViewProvider(ctx, context.extensionUri);
        const highlighter = new ChangeHighlighter(ctx, () => timeline.timeline, context.extensionUri);
        const status = new StatusItem(ctx);
        const editorState = new EditorStatePusher(ctx);
        const contentProvider = new CheckpointContentProvider(ctx);
        ctx.handlers = {
            permission: request => chat.askPermission(request),
            save: saveDocuments,
            restoreState: restoreEditorState,
        };
        context.subscriptions.push(
            ctx,
            timeline,
            chat,
            highlighter,
            status,
            editorState,
            contentProvider,
            vscode.workspace.registerTextDocumentContentProvider(CHECKPOINT_SCHEME, contentProvider),
            vscode.workspace.registerTextDocumentContentProvider(MERGE_SCHEME, mergePreviews),
            ctx.onTimelineChange(() => contentProvider.refreshCurrent()),
            chat.onDidChangeSession(id => {
                timeline.activeSessionId = id;
                timeline.scheduleRefresh();
            }),
        );
        registerCommands({ ctx, timeline, chat, highlighter });
        void ctx.start();
        void closeStaleChangeViews().then(n => n > 0 && log.info(`closed ${n} restored changes view(s) that had lost their file list`));
        const changeViews = { closeStale: closeStaleChangeViews, forget: forgetOpenedChangeViews };
        return { ctx, timeline, chat, highlighter, status, editorState, contentProvider, setPrompter, changeViews };
    } catch (err) {
        log.error('activation failed', err);
        void vscode.window.showErrorMessage(`Cannot activate Retrace: ${errorMessage(err)}`);
        return undefined;
    }
}

export async function deactivate(): Promise<void> {
    await ctxRef?.stop();
}
