/**
 * What the user is looking at, collected from VS Code when a prompt is sent (and for the chat
 * input's context chip): the active editor's workspace-relative path, language, non-empty
 * selections with their text and 1-based line ranges, the first visible range and, when
 * `retrace.context.openEditors` is on, the other open editors' paths. Files outside the
 * workspace (and untitled documents) are never offered. Settings: `retrace.context.editor`
 * (default on) and `retrace.context.openEditors` (default off).
 */
import * as vscode from 'vscode';
import type { EditorContext } from '../client/protocol';
import { relativeTo } from '../paths';
import type { EditorSnapshot, LineRange } from '../webview/composerModel';

export interface ContextSettings {
    readonly editor: boolean;
    readonly openEditors: boolean;
}

export function contextSettings(): ContextSettings {
    const c = vscode.workspace.getConfiguration('retrace.context');
    return { editor: c.get<boolean>('editor', true), openEditors: c.get<boolean>('openEditors', false) };
}

/** The POSIX path of a file inside a folder of the workspace, relative to that folder (the one
 * path rule, `paths.ts`; undefined otherwise). */
function relativePath(uri: vscode.Uri): string | undefined {
    const folder = uri.scheme === 'file' ? vscode.workspace.getWorkspaceFolder(uri) : undefined;
    return folder === undefined ? undefined : relativeTo(folder.uri.fsPath, uri.fsPath);
}

function range(r: vscode.Range): LineRange {
    // A selection ending at column 0 of a line does not select that line.
    const end = r.end.line > r.start.line && r.end.character === 0 ? r.end.line - 1 : r.end.line;
    return { start: r.start.line + 1, end: end + 1 };
}

function openEditorPaths(active: string): string[] {
    const out: string[] = [];
    for (const group of vscode.window.tabGroups.all) {
        for (const tab of group.tabs) {
            const input = tab.input;
            const path = input instanceof vscode.TabInputText ? relativePath(input.uri) : undefined;
            if (path !== undefined && path !== active && !out.includes(path)) {
                out.push(path);
            }
        }
    }
    return out;
}

function current(settings: ContextSettings): { editor: vscode.TextEditor; path: string } | undefined {
    const editor = vscode.window.activeTextEditor;
    const path = editor !== undefined && settings.editor ? relativePath(editor.document.uri) : undefined;
    return editor !== undefined && path !== undefined ? { editor, path } : undefined;
}

/** The chip's view of the active editor (undefined: none in the workspace, or the setting is off). */
export function editorSnapshot(settings: ContextSettings = contextSettings()): EditorSnapshot | undefined {
    const found = current(settings);
    if (found === undefined) {
        return undefined;
    }
    const { editor, path } = found;
    const visible = editor.visibleRanges[0];
    return {
        path,
        language: editor.document.languageId,
        selections: editor.selections.filter(s => !s.isEmpty).map(range),
        ...(visible !== undefined ? { visible: range(visible) } : {}),
        openEditors: settings.openEditors ? openEditorPaths(path) : [],
    };
}

/** The editor context sent with a prompt (undefined: nothing to send). */
export function editorContext(settings: ContextSettings = contextSettings()): EditorContext | undefined {
    const found = current(settings);
    const snap = editorSnapshot(settings);
    if (found === undefined || snap === undefined) {
        return undefined;
    }
    const selections = found.editor.selections
        .filter(s => !s.isEmpty)
        .map(s => ({ lines: range(s), text: found.editor.document.getText(s) }));
    return {
        path: snap.path,
        language: snap.language ?? null,
        selections,
        visible: snap.visible ?? null,
        openEditors: [...snap.openEditors],
    };
}
