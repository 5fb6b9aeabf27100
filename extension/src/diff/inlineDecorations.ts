/**
 * Inline change highlights: lines the agent changed in the last turn (default) or since a chosen
 * checkpoint get a gutter bar, a line background and an overview-ruler mark; hovering such a line
 * names the checkpoint that last changed the file and offers "Restore this file to before this
 * change". Line numbers come from the server's unified patch (`retrace/checkpoint/diff` against
 * the current workspace), parsed by `hunks.ts`.
 */
import * as vscode from 'vscode';
import { COMMANDS } from '../constants';
import type { Ctx } from '../ctx';
import { METHODS, type Checkpoint, type Rpc, type TimelineGetResult } from '../client/protocol';
import { errorMessage, log } from '../logging';
import { inFolderRpc } from '../client/folderRpc';
import { activeFile, folderRoots } from './editorFolder';
import { followedFolder } from './hunkModel';
import { fileInFolders } from '../paths';
import { checkpointLabel } from '../labels';
import { parseUnifiedDiff, type FileLines } from './hunks';

export type HighlightScope = { readonly kind: 'lastTurn' } | { readonly kind: 'since'; readonly checkpointId: string } | { readonly kind: 'off' };

export interface HighlightRange {
    /** Diff base: the state before the highlighted changes. */
    readonly from: string;
    /** Checkpoints whose changes are highlighted, in commit order. */
    readonly checkpoints: readonly Checkpoint[];
}

/** Which checkpoints a scope covers. Pure; exported for tests. */
export function highlightRange(timeline: TimelineGetResult, scope: HighlightScope): HighlightRange | undefined {
    const cps = timeline.checkpoints;
    switch (scope.kind) {
        case 'off':
            return undefined;
        case 'since': {
            const index = cps.findIndex(c => c.id === scope.checkpointId);
            return index < 0 ? undefined : { from: scope.checkpointId, checkpoints: cps.slice(index + 1) };
        }
        case 'lastTurn': {
            const last = [...cps].reverse().find(c => c.turnId !== null && c.kind === 'tool');
            if (last === undefined) {
                return undefined;
            }
            const inTurn = cps.filter(c => c.turnId === last.turnId);
            const first = inTurn[0];
            if (first === undefined || first.parent === null) {
                return undefined;
            }
            return { from: first.parent, checkpoints: inTurn };
        }
    }
}

/** The most recent checkpoint in the range that changed `path`. */
export function attribute(range: HighlightRange, path: string): Checkpoint | undefined {
    return [...range.checkpoints].reverse().find(c => c.files.some(f => f.path === path || f.oldPath === path));
}

/** The workspace folders' roots, first first. */
function roots(): string[] {
    return folderRoots().map(f => f.root);
}

export class ChangeHighlighter implements vscode.Disposable, vscode.HoverProvider {
    private scope: HighlightScope = { kind: 'lastTurn' };
    private range: HighlightRange | undefined;
    private lines = new Map<string, FileLines>();
    private timer: NodeJS.Timeout | undefined;
    private readonly decoration: vscode.TextEditorDecorationType;
    private readonly removal: vscode.TextEditorDecorationType;
    private readonly disposables: vscode.Disposable[] = [];

    /** The folder whose changes are highlighted: the active editor's (undefined: the first). */
    private followed: string | undefined;

    constructor(
        private readonly ctx: Ctx,
        private readonly timeline: (folder: string | undefined) => TimelineGetResult | undefined,
        extensionUri: vscode.Uri,
    ) {
        this.decoration = vscode.window.createTextEditorDecorationType({
            isWholeLine: true,
            backgroundColor: new vscode.ThemeColor('diffEditor.insertedLineBackground'),
            overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.addedForeground'),
            overviewRulerLane: vscode.OverviewRulerLane.Left,
            gutterIconPath: vscode.Uri.joinPath(extensionUri, 'extension', 'media', 'gutter-changed.svg'),
            gutterIconSize: 'contain',
        });
        this.removal = vscode.window.createTextEditorDecorationType({
            isWholeLine: true,
            borderColor: new vscode.ThemeColor('editorOverviewRuler.deletedForeground'),
            borderStyle: 'solid',
            borderWidth: '0 0 1px 0',
            overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.deletedForeground'),
            overviewRulerLane: vscode.OverviewRulerLane.Left,
        });
        this.disposables.push(
            this.decoration,
            this.removal,
            vscode.languages.registerHoverProvider({ scheme: 'file' }, this),
            vscode.window.onDidChangeVisibleTextEditors(() => this.apply()),
            vscode.workspace.onDidSaveTextDocument(() => this.schedule()),
            ctx.onTimelineChange(() => this.followed === undefined && this.schedule()),
            ctx.onFolderTimelineChange(c => c.folder === this.followed && this.schedule()),
            vscode.window.onDidChangeActiveTextEditor(() => this.follow()),
            vscode.workspace.onDidChangeWorkspaceFolders(() => this.follow()),
        );
        this.follow();
    }

    /** The folder whose changes are highlighted (undefined: the first, as with one folder). */
    get folder(): string | undefined {
        return this.followed;
    }

    /** Highlight the changes of the active editor's folder (another folder: its own store). */
    private follow(): void {
        const next = followedFolder(activeFile(), roots(), this.followed);
        if (next !== this.followed) {
            this.followed = next;
            this.range = undefined;
            this.lines = new Map();
            this.apply();
            this.schedule(0);
        }
    }

    /** The diff base of the highlighted changes (the state before them), when there are some. */
    get base(): string | undefined {
        return this.range?.from;
    }

    /** Lines the user kept (hidden from the highlight): path → new-file lines, set by the hunk lens. */
    private hidden: (path: string, fsPath: string) => ReadonlySet<number> = () => new Set();

    setHidden(hidden: (path: string, fsPath: string) => ReadonlySet<number>): void {
        this.hidden = hidden;
        this.apply();
    }

    private readonly refreshed = new vscode.EventEmitter<void>();
    /** Fired after every refresh of the changed lines. */
    readonly onDidRefresh = this.refreshed.event;

    setScope(scope: HighlightScope): void {
        this.scope = scope;
        this.schedule(0);
    }

    /** Changed lines per path (for tests and the hover). */
    get changedLines(): ReadonlyMap<string, FileLines> {
        return this.lines;
    }

    schedule(delay = 250): void {
        if (this.timer !== undefined) {
            clearTimeout(this.timer);
        }
        this.timer = setTimeout(() => {
            this.timer = undefined;
            void this.refresh();
        }, delay);
    }

    async refresh(): Promise<void> {
        const folder = this.followed;
        const server = this.ctx.rpc;
        const rpc = server === undefined ? undefined : inFolderRpc(server, folder);
        const data = await this.findRange(folder, rpc);
        this.lines = new Map();
        if (this.range !== undefined && rpc !== undefined) {
            try {
                await this.loadLines(rpc, this.range.from, data?.head ?? null);
            } catch (err) {
                log.warn(`change highlights unavailable: ${errorMessage(err)}`);
            }
        }
        if (folder !== this.followed) {
            return; // the active editor moved to another folder meanwhile: its refresh follows
        }
        this.apply();
        this.refreshed.fire();
    }

    /** Set the range to highlight; the timeline it was found in (the whole one when the view's
     * pages do not hold the checkpoint: another page or session). */
    private async findRange(folder: string | undefined, rpc: Rpc | undefined): Promise<TimelineGetResult | undefined> {
        const shown = this.timeline(folder);
        this.range = shown === undefined ? undefined : highlightRange(shown, this.scope);
        if (this.range !== undefined || this.scope.kind !== 'since' || rpc === undefined) {
            return shown;
        }
        const whole = await rpc.request(METHODS.timelineGet, {});
        this.range = highlightRange(whole, this.scope);
        return whole;
    }

    private async loadLines(rpc: Rpc, from: string, head: string | null): Promise<void> {
        if (head === null) {
            this.lines = parseUnifiedDiff((await rpc.request(METHODS.checkpointDiff, { from })).patch);
            return;
        }
        // Lines come from the recorded states (base → head) so edits the user made since are
        // never attributed to the agent; files edited since the head fall back to base → current
        // so the line numbers still match the editor.
        const [recorded, since] = await Promise.all([rpc.request(METHODS.checkpointDiff, { from, to: head }), rpc.request(METHODS.checkpointDiff, { from: head, maxPatchBytes: 1 })]);
        this.lines = parseUnifiedDiff(recorded.patch);
        const drifted = since.files.map(f => f.path).filter(p => this.lines.has(p));
        if (drifted.length === 0) {
            return;
        }
        const current = parseUnifiedDiff((await rpc.request(METHODS.checkpointDiff, { from, paths: drifted })).patch);
        for (const path of drifted) {
            const lines = current.get(path);
            if (lines === undefined) {
                this.lines.delete(path);
            } else {
                this.lines.set(path, lines);
            }
        }
    }

    /** A file's path in the folder followed; null for a file of another folder or none. */
    private pathOf(uri: vscode.Uri): string | null {
        const where = fileInFolders(uri.fsPath, roots());
        return where !== undefined && where.folder === this.followed ? where.path : null;
    }

    private apply(): void {
        for (const editor of vscode.window.visibleTextEditors) {
            const path = editor.document.uri.scheme === 'file' ? this.pathOf(editor.document.uri) : null;
            const file = path === null ? undefined : this.lines.get(path);
            const hidden = path === null ? new Set<number>() : this.hidden(path, editor.document.uri.fsPath);
            const toRanges = (lines: readonly number[]): vscode.Range[] =>
                lines.filter(l => l < editor.document.lineCount && !hidden.has(l)).map(l => new vscode.Range(l, 0, l, 0));
            editor.setDecorations(this.decoration, file ? toRanges(file.changed) : []);
            editor.setDecorations(this.removal, file ? toRanges(file.removedAfter) : []);
        }
    }

    provideHover(document: vscode.TextDocument, position: vscode.Position): vscode.Hover | undefined {
        const path = this.pathOf(document.uri);
        const file = path === null ? undefined : this.lines.get(path);
        if (path === null || file === undefined || this.range === undefined) {
            return undefined;
        }
        if (!file.changed.includes(position.line) && !file.removedAfter.includes(position.line)) {
            return undefined;
        }
        const cp = attribute(this.range, path);
        if (cp === undefined) {
            return undefined;
        }
        const md = new vscode.MarkdownString('', true);
        md.appendMarkdown(`$(history) ${vscode.l10n.t('**Retrace** — changed by checkpoint {0}', `*${checkpointLabel(cp)}*`)}`);
        md.appendMarkdown(` (${cp.tool ?? cp.kind}, ${new Date(cp.createdAt).toLocaleTimeString()})\n\n`);
        if (cp.parent !== null) {
            const args = encodeURIComponent(JSON.stringify(this.followed === undefined ? [path, cp.id] : [path, cp.id, this.followed]));
            md.appendMarkdown(`[$(discard) ${vscode.l10n.t('Restore this file to before this change')}](command:${COMMANDS.restoreFileBefore}?${args})`);
            md.isTrusted = { enabledCommands: [COMMANDS.restoreFileBefore] };
        }
        return new vscode.Hover(md);
    }

    dispose(): void {
        if (this.timer !== undefined) {
            clearTimeout(this.timer);
        }
        this.refreshed.dispose();
        for (const d of this.disposables) {
            d.dispose();
        }
    }
}
