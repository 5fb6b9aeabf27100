/**
 * Server → client requests that finish a restore in the editor: `retrace/editor/save` (save the
 * documents an applied edit touched, so disk equals the checkpoint) and
 * `retrace/editor/restoreState` (reopen files, selections, scroll position, active editor).
 */
import * as vscode from 'vscode';
import type { EditorSaveParams, EditorSaveResult, EditorState, OpenEditor, RestoreStateResult } from '../client/protocol';
import { errorMessage, log } from '../logging';

export async function saveDocuments(params: EditorSaveParams): Promise<EditorSaveResult> {
    const saved: string[] = [];
    const failed: string[] = [];
    for (const uri of params.uris) {
        const doc = vscode.workspace.textDocuments.find(d => d.uri.toString() === uri || d.uri.toString() === vscode.Uri.parse(uri).toString());
        if (doc === undefined) {
            // Not loaded in the editor: the edit went to disk directly; nothing to save.
            saved.push(uri);
            continue;
        }
        try {
            if (!doc.isDirty || (await doc.save())) {
                saved.push(uri);
            } else {
                failed.push(uri);
            }
        } catch (err) {
            log.warn(`saving ${uri} failed: ${errorMessage(err)}`);
            failed.push(uri);
        }
    }
    log.info(`editor/save: ${saved.length} saved, ${failed.length} failed`);
    return { saved, failed };
}

function toSelection(s: OpenEditor['selections'][number]): vscode.Selection {
    return new vscode.Selection(s.anchor.line, s.anchor.character, s.active.line, s.active.character);
}

async function reopen(e: OpenEditor, preserveFocus: boolean): Promise<vscode.TextEditor | undefined> {
    const uri = vscode.Uri.parse(e.uri);
    if (uri.scheme === 'file') {
        try {
            await vscode.workspace.fs.stat(uri);
        } catch {
            return undefined; // the file does not exist at this checkpoint
        }
    }
    const doc = await vscode.workspace.openTextDocument(uri);
    const editor = await vscode.window.showTextDocument(doc, {
        viewColumn: e.viewColumn ?? vscode.ViewColumn.Active,
        preserveFocus,
        preview: false,
    });
    const lineCount = doc.lineCount;
    const clamp = (s: vscode.Selection): vscode.Selection => new vscode.Selection(doc.validatePosition(s.anchor), doc.validatePosition(s.active));
    if (e.selections.length > 0) {
        editor.selections = e.selections.map(toSelection).map(clamp);
    }
    const visible = e.visibleRanges[0];
    if (visible !== undefined && visible.start.line < lineCount) {
        editor.revealRange(new vscode.Range(visible.start.line, 0, visible.start.line, 0), vscode.TextEditorRevealType.AtTop);
    }
    return editor;
}

export async function restoreEditorState(state: EditorState): Promise<RestoreStateResult> {
    let restored = false;
    const active = state.openEditors.find(e => e.isActive || e.uri === state.activeEditor);
    for (const e of state.openEditors) {
        if (e === active) {
            continue;
        }
        try {
            restored = (await reopen(e, true)) !== undefined || restored;
        } catch (err) {
            log.warn(`could not reopen ${e.uri}: ${errorMessage(err)}`);
        }
    }
    if (active !== undefined) {
        try {
            // Last, so it ends up focused.
            restored = (await reopen(active, false)) !== undefined || restored;
        } catch (err) {
            log.warn(`could not reopen ${active.uri}: ${errorMessage(err)}`);
        }
    }
    log.info(`editor/restoreState: ${state.openEditors.length} editor(s), restored=${restored}`);
    return { restored };
}
