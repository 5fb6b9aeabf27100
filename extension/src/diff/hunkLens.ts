/**
 * Keep / Undo above each hunk of the agent's last change (like a review of a suggested edit):
 * the hunks are the server's (`retrace/restore/hunks`, base = the state before the highlighted
 * changes, current = the editor's text). *Undo* puts that hunk's lines back
 * (`retrace/restore/hunk`, a restore checkpoint that *Undo Last Restore* takes back); *Keep*
 * accepts it: its lens and highlight go away (kept hunks are remembered by their texts, so they
 * stay kept while other lines move).
 */
import * as vscode from 'vscode';
import { COMMANDS } from '../constants';
import type { Ctx } from '../ctx';
import { METHODS, type HunksResult } from '../client/protocol';
import { relativePath } from '../editorState/capture';
import { errorMessage, log } from '../logging';
import type { ChangeHighlighter } from './inlineDecorations';
import { hunkKey, hunkLines, lensLine, openHunks } from './hunkModel';

export class HunkLens implements vscode.CodeLensProvider, vscode.Disposable {
    private readonly changed = new vscode.EventEmitter<void>();
    readonly onDidChangeCodeLenses = this.changed.event;
    private readonly kept = new Set<string>();
    /** The last hunks seen per path (what a kept hunk hides from the highlight). */
    private readonly seen = new Map<string, HunksResult>();
    private readonly disposables: vscode.Disposable[] = [];

    constructor(
        private readonly ctx: Ctx,
        private readonly highlighter: ChangeHighlighter,
    ) {
        this.disposables.push(
            this.changed,
            vscode.languages.registerCodeLensProvider({ scheme: 'file' }, this),
            highlighter.onDidRefresh(() => this.changed.fire()),
            vscode.workspace.onDidSaveTextDocument(() => this.changed.fire()),
        );
        highlighter.setHidden(path => this.hiddenLines(path));
    }

    /** Accept a hunk: no lens, no highlight for it any more. */
    keep(key: string): void {
        this.kept.add(key);
        this.highlighter.setHidden(p => this.hiddenLines(p));
        this.changed.fire();
    }

    refresh(): void {
        this.changed.fire();
    }

    private hiddenLines(path: string): ReadonlySet<number> {
        const seen = this.seen.get(path);
        const base = this.highlighter.base;
        if (seen === undefined || base === undefined || seen.checkpoint !== base) {
            return new Set();
        }
        return new Set(seen.hunks.filter(h => this.kept.has(hunkKey(path, base, h))).flatMap(hunkLines));
    }

    async provideCodeLenses(document: vscode.TextDocument, token: vscode.CancellationToken): Promise<vscode.CodeLens[]> {
        const path = relativePath(document.uri.fsPath, vscode.workspace.workspaceFolders?.[0]?.uri.fsPath);
        const base = this.highlighter.base;
        const rpc = this.ctx.rpc;
        if (path === null || base === undefined || rpc === undefined || !this.highlighter.changedLines.has(path)) {
            return [];
        }
        let result: HunksResult;
        try {
            result = await rpc.request(METHODS.restoreHunks, { checkpoint: base, path });
        } catch (err) {
            log.debug(`hunks of ${path} unavailable: ${errorMessage(err)}`);
            return [];
        }
        if (token.isCancellationRequested) {
            return [];
        }
        this.seen.set(path, result);
        const lenses: vscode.CodeLens[] = [];
        for (const hunk of openHunks(path, result.checkpoint, result.hunks, this.kept)) {
            const line = lensLine(hunk, document.lineCount);
            const range = new vscode.Range(line, 0, line, 0);
            const key = hunkKey(path, result.checkpoint, hunk);
            lenses.push(
                new vscode.CodeLens(range, { title: `$(check) ${vscode.l10n.t('Keep')}`, tooltip: vscode.l10n.t("Keep the agent's change here"), command: COMMANDS.hunkKeep, arguments: [path, key] }),
                new vscode.CodeLens(range, {
                    title: `$(discard) ${vscode.l10n.t('Undo')}`,
                    tooltip: vscode.l10n.t('Put these lines back as they were before the change (Undo Last Restore takes it back)'),
                    command: COMMANDS.hunkUndo,
                    arguments: [path, result.checkpoint, hunk.id, result.currentHash],
                }),
            );
        }
        return lenses;
    }

    dispose(): void {
        for (const d of this.disposables) {
            d.dispose();
        }
    }
}
