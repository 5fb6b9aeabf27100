/**
 * Keep / Undo above each hunk of the agent's last change (like a review of a suggested edit):
 * the hunks are the server's (`retrace/restore/hunks`, base = the state before the highlighted
 * changes, current = the editor's text). *Undo* puts that hunk's lines back
 * (`retrace/restore/hunk`, a restore checkpoint that *Undo Last Restore* takes back); *Keep*
 * accepts it: its lens and highlight go away (kept hunks are remembered by their texts, so they
 * stay kept while other lines move).
 *
 * In a workspace of several folders a file of another folder gets its lenses too: the base is the
 * state before the agent's last turn in that folder's own timeline (`retrace/timeline/get` with
 * `folder`), and every request about it names its folder (`fileInFolders`: the innermost folder
 * holding it, the server's rule). Kept hunks there are keyed by the file's absolute path.
 */
import * as vscode from 'vscode';
import { COMMANDS } from '../constants';
import type { Ctx } from '../ctx';
import { METHODS, type HunksResult } from '../client/protocol';
import { errorMessage, log } from '../logging';
import { highlightRange, type ChangeHighlighter } from './inlineDecorations';
import { hunkKey, hunkLines, lensLine, openHunks } from './hunkModel';
import { fileInFolders, withFolder } from '../paths';

export class HunkLens implements vscode.CodeLensProvider, vscode.Disposable {
    private readonly changed = new vscode.EventEmitter<void>();
    readonly onDidChangeCodeLenses = this.changed.event;
    private readonly kept = new Set<string>();
    /** The last hunks seen per path (what a kept hunk hides from the highlight). */
    private readonly seen = new Map<string, HunksResult>();
    private readonly disposables: vscode.Disposable[] = [];
    /** Another folder's base (the state before the agent's last turn there) and the paths that
     * turn changed, by folder root; forgotten at every timeline change. */
    private readonly folderBases = new Map<string, Promise<{ base: string; paths: ReadonlySet<string> } | undefined>>();

    constructor(
        private readonly ctx: Ctx,
        private readonly highlighter: ChangeHighlighter,
    ) {
        this.disposables.push(
            this.changed,
            vscode.languages.registerCodeLensProvider({ scheme: 'file' }, this),
            highlighter.onDidRefresh(() => this.changed.fire()),
            vscode.workspace.onDidSaveTextDocument(() => this.changed.fire()),
            ctx.onTimelineChange(() => {
                this.folderBases.clear();
                this.changed.fire();
            }),
            ctx.onFolderTimelineChange(() => {
                this.folderBases.clear();
                this.changed.fire();
            }),
        );
        highlighter.setHidden((path, fsPath) => this.hiddenLines(path, fsPath));
    }

    /** Accept a hunk: no lens, no highlight for it any more. */
    keep(key: string): void {
        this.kept.add(key);
        this.highlighter.setHidden((p, fsPath) => this.hiddenLines(p, fsPath));
        this.changed.fire();
    }

    refresh(): void {
        this.changed.fire();
    }

    /** The lines of kept hunks of a file of the folder highlighted (`path` in it, `fsPath` on disk). */
    private hiddenLines(path: string, fsPath: string): ReadonlySet<number> {
        const keyPath = this.keyPath(this.highlighter.folder, path, fsPath);
        const seen = this.seen.get(keyPath);
        const base = this.highlighter.base;
        if (seen === undefined || base === undefined || seen.checkpoint !== base) {
            return new Set();
        }
        return new Set(seen.hunks.filter(h => this.kept.has(hunkKey(keyPath, base, h))).flatMap(hunkLines));
    }

    /** Kept hunks of another folder are keyed by the absolute path (two folders may share a path). */
    private keyPath(folder: string | undefined, path: string, fsPath: string): string {
        return folder === undefined ? path : fsPath;
    }

    /** The agent's last turn in a folder the highlight does not follow: its base and the paths it changed. */
    private folderBase(folder: string | undefined): Promise<{ base: string; paths: ReadonlySet<string> } | undefined> {
        const key = folder ?? '';
        let known = this.folderBases.get(key);
        const rpc = this.ctx.rpc;
        if (known === undefined && rpc !== undefined) {
            known = rpc.request(METHODS.timelineGet, withFolder({}, folder)).then(
                timeline => {
                    const range = highlightRange(timeline, { kind: 'lastTurn' });
                    return range === undefined ? undefined : { base: range.from, paths: new Set(range.checkpoints.flatMap(c => c.files.map(f => f.path))) };
                },
                (err: unknown) => {
                    log.debug(`the last turn in ${folder ?? 'the first folder'} is unavailable: ${errorMessage(err)}`);
                    return undefined;
                },
            );
            this.folderBases.set(key, known);
        }
        return known ?? Promise.resolve(undefined);
    }

    /** The base of `path`'s lenses, when the highlighted change (the folder the highlight follows)
     * or the agent's last turn in its folder (another folder) changed it. */
    private async baseOf(folder: string | undefined, path: string): Promise<string | undefined> {
        if (folder === this.highlighter.folder) {
            return this.highlighter.changedLines.has(path) ? this.highlighter.base : undefined;
        }
        const last = await this.folderBase(folder);
        return last !== undefined && last.paths.has(path) ? last.base : undefined;
    }

    async provideCodeLenses(document: vscode.TextDocument, token: vscode.CancellationToken): Promise<vscode.CodeLens[]> {
        const where = fileInFolders(document.uri.fsPath, (vscode.workspace.workspaceFolders ?? []).map(f => f.uri.fsPath));
        const rpc = this.ctx.rpc;
        if (where === undefined || rpc === undefined) {
            return [];
        }
        const { folder, path } = where;
        const base = await this.baseOf(folder, path);
        if (base === undefined) {
            return [];
        }
        let result: HunksResult;
        try {
            result = await rpc.request(METHODS.restoreHunks, withFolder({ checkpoint: base, path }, folder));
        } catch (err) {
            log.debug(`hunks of ${path} unavailable: ${errorMessage(err)}`);
            return [];
        }
        if (token.isCancellationRequested) {
            return [];
        }
        const keyPath = this.keyPath(folder, path, document.uri.fsPath);
        if (folder === this.highlighter.folder) {
            this.seen.set(keyPath, result);
        }
        const lenses: vscode.CodeLens[] = [];
        for (const hunk of openHunks(keyPath, result.checkpoint, result.hunks, this.kept)) {
            const line = lensLine(hunk, document.lineCount);
            const range = new vscode.Range(line, 0, line, 0);
            const key = hunkKey(keyPath, result.checkpoint, hunk);
            lenses.push(
                new vscode.CodeLens(range, { title: `$(check) ${vscode.l10n.t('Keep')}`, tooltip: vscode.l10n.t("Keep the agent's change here"), command: COMMANDS.hunkKeep, arguments: [path, key] }),
                new vscode.CodeLens(range, {
                    title: `$(discard) ${vscode.l10n.t('Undo')}`,
                    tooltip: vscode.l10n.t('Put these lines back as they were before the change (Undo Last Restore takes it back)'),
                    command: COMMANDS.hunkUndo,
                    arguments: folder === undefined ? [path, result.checkpoint, hunk.id, result.currentHash] : [path, result.checkpoint, hunk.id, result.currentHash, folder],
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
