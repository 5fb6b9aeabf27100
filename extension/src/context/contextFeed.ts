/**
 * The chat host's side of the input's context: keeps the webview's editor chip current (active
 * editor, selection, scroll, settings; coalesced), builds a prompt's `context` and `mentions`
 * at send time, and answers the `@` completion through `retrace/workspace/files`.
 */
import * as vscode from 'vscode';
import { METHODS, type PromptParams, type Rpc } from '../client/protocol';
import { parseMentions, type EditorSnapshot } from '../webview/composerModel';
import { contextSettings, editorContext, editorSnapshot } from './editorContext';

const SETTLE_MS = 120;

export class ContextFeed implements vscode.Disposable {
    private readonly disposables: vscode.Disposable[];
    private timer: ReturnType<typeof setTimeout> | undefined;

    constructor(private readonly post: (editor: EditorSnapshot | undefined) => void) {
        const changed = (): void => this.schedule();
        this.disposables = [
            vscode.window.onDidChangeActiveTextEditor(changed),
            vscode.window.onDidChangeTextEditorSelection(changed),
            vscode.window.onDidChangeTextEditorVisibleRanges(changed),
            vscode.window.tabGroups.onDidChangeTabs(changed),
            vscode.workspace.onDidChangeConfiguration(e => {
                if (e.affectsConfiguration('retrace.context')) {
                    changed();
                }
            }),
        ];
    }

    private schedule(): void {
        if (this.timer !== undefined) {
            clearTimeout(this.timer);
        }
        this.timer = setTimeout(() => {
            this.timer = undefined;
            this.postNow();
        }, SETTLE_MS);
    }

    postNow(): void {
        this.post(editorSnapshot());
    }

    /**
     * A prompt's parameters: the editor context (unless switched off for it) and its `@path`
     * mentions. A retry (`retryOf`) carries neither: the server attaches what the failed prompt carried.
     */
    static params(text: string, session: string | undefined, includeEditor: boolean, retryOf?: string): PromptParams {
        const context = includeEditor && retryOf === undefined ? editorContext(contextSettings()) : undefined;
        const mentions = retryOf === undefined ? parseMentions(text) : [];
        return {
            text,
            ...(session !== undefined ? { sessionId: session } : {}),
            ...(retryOf !== undefined ? { retryOf } : {}),
            ...(context !== undefined ? { context } : {}),
            ...(mentions.length > 0 ? { mentions } : {}),
        };
    }

    static async files(rpc: Rpc, query: string): Promise<string[]> {
        const result = await rpc.request(METHODS.workspaceFiles, { query, limit: 20 });
        return result.paths;
    }

    dispose(): void {
        if (this.timer !== undefined) {
            clearTimeout(this.timer);
        }
        for (const d of this.disposables) {
            d.dispose();
        }
    }
}
