/**
 * Editor state → the server (`retrace/editor/didChangeState`), debounced, so every checkpoint
 * carries the open editors, the active one, selections, visible ranges and dirty flags.
 * `captureEditorState` is pure over a structural view of editors (unit-tested without VS Code).
 */
import * as vscode from 'vscode';
import { EDITOR_STATE_DEBOUNCE_MS } from '../constants';
import type { Ctx } from '../ctx';
import { METHODS, type EditorRange, type EditorState, type OpenEditor } from '../client/protocol';
import { errorMessage, log } from '../logging';
import { relativeTo } from '../paths';

interface PositionLike {
    readonly line: number;
    readonly character: number;
}
interface RangeLike {
    readonly start: PositionLike;
    readonly end: PositionLike;
}
export interface EditorLike {
    readonly document: { readonly uri: { toString(): string; readonly scheme: string; readonly fsPath: string }; readonly isDirty: boolean };
    readonly selections: readonly { readonly anchor: PositionLike; readonly active: PositionLike }[];
    readonly visibleRanges: readonly RangeLike[];
    readonly viewColumn: number | undefined;
}

const pos = (p: PositionLike): { line: number; character: number } => ({ line: p.line, character: p.character });
const range = (r: RangeLike): EditorRange => ({ start: pos(r.start), end: pos(r.end) });

/** Workspace-relative path with forward slashes (the one rule: `paths.ts`), or null outside the
 * workspace. */
function relativePath(fsPath: string, root: string | undefined): string | null {
    return root === undefined ? null : (relativeTo(root, fsPath) ?? null);
}

/** A tab whose editor is not visible (no selections or ranges to report). */
export interface TabLike {
    readonly uri: { toString(): string; readonly scheme: string; readonly fsPath: string };
    readonly viewColumn: number;
    readonly isDirty: boolean;
}

export function captureEditorState(
    editors: readonly EditorLike[],
    active: EditorLike | undefined,
    root: string | undefined,
    tabs: readonly TabLike[] = [],
): EditorState {
    const visible = new Set(editors.map(e => e.document.uri.toString()));
    const hidden: OpenEditor[] = tabs
        .filter(t => t.uri.scheme === 'file' && !visible.has(t.uri.toString()))
        .map(t => ({
            uri: t.uri.toString(),
            path: relativePath(t.uri.fsPath, root),
            viewColumn: t.viewColumn,
            isActive: false,
            isDirty: t.isDirty,
            selections: [],
            visibleRanges: [],
        }));
    const shown: OpenEditor[] = editors
        .filter(e => e.document.uri.scheme === 'file' || e.document.uri.scheme === 'untitled')
        .map(e => ({
            uri: e.document.uri.toString(),
            path: e.document.uri.scheme === 'file' ? relativePath(e.document.uri.fsPath, root) : null,
            viewColumn: e.viewColumn ?? null,
            isActive: e === active,
            isDirty: e.document.isDirty,
            selections: e.selections.map(s => ({ anchor: pos(s.anchor), active: pos(s.active) })),
            visibleRanges: e.visibleRanges.map(range),
        }));
    const openEditors = [...shown, ...hidden];
    const activeUri = active !== undefined && openEditors.some(o => o.isActive) ? active.document.uri.toString() : null;
    return { openEditors, activeEditor: activeUri };
}

export class EditorStatePusher implements vscode.Disposable {
    private timer: NodeJS.Timeout | undefined;
    private readonly disposables: vscode.Disposable[];
    private last = '';

    constructor(private readonly ctx: Ctx) {
        const schedule = (): void => this.schedule();
        this.disposables = [
            vscode.window.onDidChangeVisibleTextEditors(schedule),
            vscode.window.onDidChangeActiveTextEditor(schedule),
            vscode.window.onDidChangeTextEditorSelection(schedule),
            vscode.window.onDidChangeTextEditorVisibleRanges(schedule),
            vscode.workspace.onDidChangeTextDocument(e => {
                if (e.document.isDirty !== this.lastDirty.get(e.document.uri.toString())) {
                    schedule();
                }
            }),
            vscode.workspace.onDidSaveTextDocument(schedule),
            vscode.window.tabGroups.onDidChangeTabs(schedule),
            ctx.onDidChangeState(s => {
                if (s.kind === 'running') {
                    this.last = '';
                    schedule();
                }
            }),
        ];
    }

    private readonly lastDirty = new Map<string, boolean>();

    schedule(): void {
        if (this.timer !== undefined) {
            clearTimeout(this.timer);
        }
        this.timer = setTimeout(() => {
            this.timer = undefined;
            void this.push();
        }, EDITOR_STATE_DEBOUNCE_MS);
    }

    current(): EditorState {
        const root = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
        const tabs: TabLike[] = vscode.window.tabGroups.all.flatMap(group =>
            group.tabs.flatMap(tab => (tab.input instanceof vscode.TabInputText ? [{ uri: tab.input.uri, viewColumn: group.viewColumn, isDirty: tab.isDirty }] : [])),
        );
        return captureEditorState(vscode.window.visibleTextEditors, vscode.window.activeTextEditor, root, tabs);
    }

    /** Send now (skips when nothing changed since the last push). */
    async push(): Promise<void> {
        const rpc = this.ctx.rpc;
        if (rpc === undefined) {
            return;
        }
        const state = this.current();
        for (const e of state.openEditors) {
            this.lastDirty.set(e.uri, e.isDirty);
        }
        const json = JSON.stringify(state);
        if (json === this.last) {
            return;
        }
        this.last = json;
        try {
            await rpc.notify(METHODS.editorDidChangeState, state);
        } catch (err) {
            log.warn(`editor state push failed: ${errorMessage(err)}`);
        }
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
