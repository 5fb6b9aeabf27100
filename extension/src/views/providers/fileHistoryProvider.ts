/**
 * The File History tree view: the checkpoints that changed one file (`retrace/file/history`,
 * newest first, paged), for the active editor's file or a pinned one. A click opens that version
 * ↔ the file now; context actions compare with the previous version or restore the file (see
 * `commands/fileHistory.ts`). The view only renders what the server sends (`models/fileHistoryModel.ts`).
 */
import * as vscode from 'vscode';
import { COMMANDS, VIEW_FILE_HISTORY } from '../../constants';
import type { Ctx } from '../../ctx';
import { METHODS } from '../../client/protocol';
import { errorMessage, log } from '../../logging';
import { fileInFolders, withFolder } from '../../paths';
import { nodesOf, versionLook, withPage, type FileHistoryNode, type FileHistoryState, type FileTarget } from '../models/fileHistoryModel';

/** Versions per request; older ones come on demand ("Load older versions"). */
const PAGE_VERSIONS = 100;
const REFRESH_DELAY_MS = 250;

/** The name VS Code shows for the folder at `root`. */
function folderName(root: string): string {
    return vscode.workspace.workspaceFolders?.find(f => f.uri.fsPath === root)?.name ?? root;
}

export class FileHistoryProvider implements vscode.TreeDataProvider<FileHistoryNode>, vscode.Disposable {
    private readonly changed = new vscode.EventEmitter<FileHistoryNode | undefined>();
    readonly onDidChangeTreeData = this.changed.event;
    private state: FileHistoryState | undefined;
    private current: FileTarget | undefined;
    private refreshTimer: NodeJS.Timeout | undefined;
    private generation = 0;
    private readonly disposables: vscode.Disposable[] = [];
    readonly view: vscode.TreeView<FileHistoryNode>;

    constructor(private readonly ctx: Ctx) {
        this.view = vscode.window.createTreeView(VIEW_FILE_HISTORY, { treeDataProvider: this });
        this.disposables.push(
            this.view,
            this.changed,
            vscode.window.onDidChangeActiveTextEditor(editor => this.follow(editor)),
            // A new checkpoint may have changed the file: the first page again (cheap, server-side paged).
            ctx.onTimelineChange(() => this.scheduleRefresh()),
            ctx.onDidChangeState(s => {
                if (s.kind === 'running') {
                    this.scheduleRefresh();
                }
            }),
            this.view.onDidChangeVisibility(e => {
                if (e.visible) {
                    void ctx.start();
                    this.scheduleRefresh();
                }
            }),
        );
        this.follow(vscode.window.activeTextEditor);
    }

    /** The file the view shows (`undefined`: no workspace file is active). */
    get target(): FileTarget | undefined {
        return this.current;
    }

    /** The versions loaded so far, newest first. */
    get versions(): FileHistoryState['versions'] {
        return this.state?.versions ?? [];
    }

    /** Where `uri` lives: its folder (`undefined`: the first) and the path relative to it, when it
     * is a file of a workspace folder (the innermost holding it). */
    locate(uri: vscode.Uri): { path: string; folder: string | undefined } | undefined {
        const folders = vscode.workspace.workspaceFolders ?? [];
        if (uri.scheme !== 'file' || folders.length === 0) {
            return undefined;
        }
        return fileInFolders(uri.fsPath, folders.map(f => f.uri.fsPath), process.platform === 'win32' ? '\\' : '/');
    }

    /** Show `path` (in the folder at `folder` when not the first; pinned: stays when another
     * editor becomes active); loads its first page. */
    async show(path: string, pinned: boolean, folder?: string): Promise<void> {
        this.current = { path, pinned, ...(folder === undefined ? {} : { folder }) };
        this.state = undefined;
        this.describe();
        await this.refresh();
    }

    /** Toggle between following the active editor and keeping the current file. */
    async togglePin(): Promise<void> {
        if (this.current === undefined) {
            return;
        }
        this.current = { ...this.current, pinned: !this.current.pinned };
        this.describe();
        if (!this.current.pinned) {
            this.follow(vscode.window.activeTextEditor);
        }
        await vscode.commands.executeCommand('setContext', 'retrace.fileHistory.pinned', this.current.pinned);
    }

    private follow(editor: vscode.TextEditor | undefined): void {
        if (this.current?.pinned === true || editor === undefined) {
            return; // a diff or output editor keeps the file the view shows
        }
        const where = this.locate(editor.document.uri);
        if (where !== undefined && (where.path !== this.current?.path || where.folder !== this.current.folder)) {
            this.current = { path: where.path, pinned: false, ...(where.folder === undefined ? {} : { folder: where.folder }) };
            this.describe();
            this.state = undefined;
            this.changed.fire(undefined);
            this.scheduleRefresh();
        }
    }

    private describe(): void {
        const shown = this.current === undefined ? '' : this.current.folder === undefined ? this.current.path : `${folderName(this.current.folder)}/${this.current.path}`;
        this.view.description = this.current === undefined ? '' : this.current.pinned ? vscode.l10n.t('{0} (pinned)', shown) : shown;
    }

    scheduleRefresh(): void {
        if (this.refreshTimer !== undefined) {
            clearTimeout(this.refreshTimer);
        }
        this.refreshTimer = setTimeout(() => {
            this.refreshTimer = undefined;
            if (this.view.visible) {
                void this.refresh();
            }
        }, REFRESH_DELAY_MS);
    }

    /** The first page of the current file's history (replaces what was loaded). */
    refresh(): Promise<void> {
        return this.load(undefined);
    }

    /** The next older page, appended. */
    loadOlder(): Promise<void> {
        return this.load(this.state?.nextCursor ?? undefined);
    }

    private async load(cursor: string | undefined): Promise<void> {
        const target = this.current;
        const rpc = this.ctx.rpc;
        if (target === undefined || rpc === undefined) {
            this.changed.fire(undefined);
            return;
        }
        const generation = ++this.generation;
        try {
            const page = await rpc.request(METHODS.fileHistory, withFolder({ path: target.path, limit: PAGE_VERSIONS, ...(cursor !== undefined ? { cursor } : {}) }, target.folder));
            if (generation !== this.generation) {
                return; // a newer request (another file, a refresh) answers instead
            }
            this.state = withPage(this.state, page, cursor !== undefined);
            this.view.message = '';
        } catch (err) {
            if (generation !== this.generation) {
                return;
            }
            log.warn(`file history of ${target.path}: ${errorMessage(err)}`);
            this.state = undefined;
            this.view.message = vscode.l10n.t('Cannot list the history of {0}: {1}', target.path, errorMessage(err));
        }
        this.changed.fire(undefined);
    }

    getChildren(element?: FileHistoryNode): FileHistoryNode[] {
        return element === undefined ? nodesOf(this.state, this.current) : [];
    }

    /** A flat list: every row is a root (the workbench needs this to reveal and select one). */
    getParent(): FileHistoryNode | undefined {
        return undefined;
    }

    getTreeItem(node: FileHistoryNode): vscode.TreeItem {
        if (node.kind === 'message') {
            return new vscode.TreeItem(node.text, vscode.TreeItemCollapsibleState.None);
        }
        if (node.kind === 'more') {
            const item = new vscode.TreeItem(vscode.l10n.t('Load older versions…'), vscode.TreeItemCollapsibleState.None);
            item.command = { command: COMMANDS.fileHistoryLoadOlder, title: vscode.l10n.t('Load Older Versions') };
            item.iconPath = new vscode.ThemeIcon('ellipsis');
            return item;
        }
        const look = versionLook(node.version, Date.now());
        const item = new vscode.TreeItem(look.label, vscode.TreeItemCollapsibleState.None);
        item.id = node.folder === undefined ? `fileVersion:${node.path}:${node.version.checkpointId}` : `fileVersion:${node.folder}:${node.path}:${node.version.checkpointId}`;
        item.description = look.description;
        item.tooltip = look.tooltip;
        item.iconPath = new vscode.ThemeIcon(look.icon);
        item.contextValue = look.contextValue;
        // No arguments: the command reads the selected row. A command with arguments is held by
        // the workbench per rendered item, so a click on a row the view just re-rendered would be
        // lost ("command not found") while the agent keeps changing files.
        item.command = { command: COMMANDS.fileHistoryOpenVersion, title: vscode.l10n.t('Compare with Current File') };
        return item;
    }

    dispose(): void {
        if (this.refreshTimer !== undefined) {
            clearTimeout(this.refreshTimer);
        }
        for (const d of this.disposables) {
            d.dispose();
        }
    }
}
