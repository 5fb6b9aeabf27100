/**
 * The "Other Folders" view of a multi-root workspace: a folder level above each other folder's
 * stories and rows, read from that folder's own store (`retrace/timeline/tree` naming the folder),
 * refreshed by that folder's `timeline/didChange`; a row's "Restore Code in This Folder" restores
 * that folder only (a dry run first; conflicts are the user's choice). The Timeline view is the
 * first folder's and looks exactly as in a workspace of one folder. Pure parts: `folderTimelineModel`.
 */
import * as vscode from 'vscode';
import { COMMANDS, VIEW_FOLDERS } from '../constants';
import type { Ctx } from '../ctx';
import { METHODS, type Rpc } from '../client/protocol';
import { checkpointUri } from '../diff/contentProvider';
import { errorMessage, log } from '../logging';
import { conflictsOf, folderNode, inFolder, otherFolders, restoreMessage, restoreParams, rowDescription } from './folderTimelineModel';
import type { ConflictChoice, FolderInfo, FolderNode, FolderRowNode, FolderTreeNode } from './folderTimelineModel';

const PAGE_ROWS = 200;

export class FolderTimelineProvider implements vscode.TreeDataProvider<FolderTreeNode>, vscode.Disposable {
    private readonly changed = new vscode.EventEmitter<FolderTreeNode | undefined>();
    readonly onDidChangeTreeData = this.changed.event;
    private roots: FolderNode[] = [];
    private readonly nodes = new Map<string, FolderTreeNode>();
    private timer: NodeJS.Timeout | undefined;
    private readonly disposables: vscode.Disposable[] = [];
    readonly view: vscode.TreeView<FolderTreeNode>;

    constructor(private readonly ctx: Ctx) {
        this.view = vscode.window.createTreeView(VIEW_FOLDERS, { treeDataProvider: this, showCollapseAll: true });
        this.disposables.push(
            this.view,
            this.changed,
            ctx.onFolderTimelineChange(() => this.scheduleRefresh()),
            ctx.onDidChangeState(s => s.kind === 'running' && this.scheduleRefresh()),
            vscode.workspace.onDidChangeWorkspaceFolders(() => this.scheduleRefresh(500)),
            this.view.onDidChangeVisibility(e => e.visible && this.scheduleRefresh()),
        );
        ctx.registerCommand(COMMANDS.foldersRefresh, () => () => this.refresh());
        ctx.registerCommand(COMMANDS.foldersRestoreCode, rpc => (node?: unknown) => this.restore(rpc, node));
        ctx.registerCommand(COMMANDS.foldersOpenDiff, () => (node?: unknown) => this.openDiff(node));
    }

    /** The other folders, as VS Code lists them now. */
    folders(): FolderInfo[] {
        return otherFolders((vscode.workspace.workspaceFolders ?? []).map(f => ({ name: f.name, root: f.uri.fsPath })));
    }

    scheduleRefresh(delayMs = 60): void {
        if (this.timer !== undefined) {
            clearTimeout(this.timer);
        }
        this.timer = setTimeout(() => {
            this.timer = undefined;
            void this.refresh();
        }, delayMs);
    }

    /** Read every other folder's timeline; resolves when the view shows them. */
    async refresh(): Promise<void> {
        const rpc = this.ctx.rpc;
        const folders = this.folders();
        if (rpc === undefined || folders.length === 0) {
            this.setRoots([]);
            return;
        }
        const roots = await Promise.all(folders.map(folder => this.read(rpc, folder)));
        this.setRoots(roots);
    }

    /** The roots shown now (tests read them). */
    get shown(): readonly FolderNode[] {
        return this.roots;
    }

    private async read(rpc: Rpc, folder: FolderInfo): Promise<FolderNode> {
        try {
            return folderNode(folder, await rpc.request(METHODS.timelineTree, inFolder({ maxRows: PAGE_ROWS }, folder)));
        } catch (err) {
            log.warn(`timeline of folder ${folder.root}: ${errorMessage(err)}`);
            return folderNode(folder, undefined, errorMessage(err));
        }
    }

    private setRoots(roots: FolderNode[]): void {
        this.roots = roots;
        this.nodes.clear();
        const index = (node: FolderTreeNode): void => {
            this.nodes.set(node.id, node);
            if (node.kind !== 'folderRow') {
                node.children.forEach(index);
            }
        };
        roots.forEach(index);
        this.changed.fire(undefined);
    }

    /** Restore a row's folder (code only) to that row: a dry run, the user's answer to conflicts, then the restore. */
    async restore(rpc: Rpc, given: unknown): Promise<void> {
        const node = this.rowOf(given) ?? this.rowOf(this.view.selection[0]);
        if (node === undefined) {
            return;
        }
        const plan = await rpc.request(METHODS.checkpointRestore, restoreParams(node, true));
        const conflicts = conflictsOf(plan.outcome);
        let choice: ConflictChoice | undefined;
        if (conflicts.length > 0) {
            const overwrite = vscode.l10n.t('Overwrite Them');
            const skip = vscode.l10n.t('Keep Them, Restore the Rest');
            const pick = await vscode.window.showWarningMessage(
                vscode.l10n.t('{0} file(s) in {1} changed since this checkpoint: {2}', conflicts.length, node.folder.name, `${conflicts.slice(0, 5).join(', ')}${conflicts.length > 5 ? ', …' : ''}`),
                { modal: true },
                overwrite,
                skip,
            );
            if (pick === undefined) {
                return;
            }
            choice = pick === overwrite ? 'overwrite' : 'skip';
        }
        const result = await rpc.request(METHODS.checkpointRestore, restoreParams(node, false, choice));
        void vscode.window.showInformationMessage(vscode.l10n.t('Retrace: {0}', restoreMessage(result.outcome, node.folder)));
        await this.refresh();
    }

    /** A row's changes in its folder: its checkpoint against the one before it, read from that folder's store. */
    async openDiff(given: unknown): Promise<void> {
        const node = this.rowOf(given) ?? this.rowOf(this.view.selection[0]);
        const cp = node?.checkpoint;
        if (node === undefined || cp === undefined) {
            return;
        }
        const files = cp.files ?? [];
        if (cp.parent === null || cp.parent === undefined || files.length === 0) {
            void vscode.window.showInformationMessage(vscode.l10n.t('Retrace: “{0}” changed no file in {1}.', node.row.title, node.folder.name));
            return;
        }
        const parent = cp.parent;
        const triples = files.map((f): [vscode.Uri, vscode.Uri, vscode.Uri] => [
            vscode.Uri.file(`${node.folder.root}/${f.path}`),
            checkpointUri(f.oldPath ?? f.path, parent, undefined, node.folder.root),
            checkpointUri(f.path, cp.id, undefined, node.folder.root),
        ]);
        const [first] = triples;
        if (triples.length === 1 && first !== undefined) {
            await vscode.commands.executeCommand('vscode.diff', first[1], first[2], `${node.folder.name}/${files[0]?.path ?? ''} (${node.row.title})`, { preview: true });
            return;
        }
        await vscode.commands.executeCommand('vscode.changes', `Retrace: ${node.folder.name}: ${node.row.title}`, triples);
    }

    private rowOf(value: unknown): FolderRowNode | undefined {
        const id = typeof value === 'object' && value !== null && 'id' in value && typeof value.id === 'string' ? value.id : undefined;
        const node = id === undefined ? undefined : this.nodes.get(id);
        return node?.kind === 'folderRow' ? node : undefined;
    }

    getChildren(given?: FolderTreeNode): FolderTreeNode[] {
        if (given === undefined) {
            return this.roots;
        }
        const node = this.nodes.get(given.id);
        return node === undefined || node.kind === 'folderRow' ? [] : [...node.children];
    }

    getParent(node: FolderTreeNode): FolderTreeNode | undefined {
        return node.kind === 'folder' ? undefined : this.nodes.get(node.parentId);
    }

    getTreeItem(node: FolderTreeNode): vscode.TreeItem {
        if (node.kind === 'folder') {
            const item = new vscode.TreeItem(node.folder.name, vscode.TreeItemCollapsibleState.Expanded);
            item.id = node.id;
            item.description = node.error ?? node.folder.root;
            item.iconPath = new vscode.ThemeIcon(node.error === undefined ? 'root-folder' : 'warning');
            item.contextValue = 'retraceFolder';
            return item;
        }
        if (node.kind === 'folderStory') {
            const item = new vscode.TreeItem(node.title, vscode.TreeItemCollapsibleState.Collapsed);
            item.id = node.id;
            item.description = `${node.children.length} step${node.children.length === 1 ? '' : 's'}`;
            item.iconPath = new vscode.ThemeIcon('history');
            return item;
        }
        const item = new vscode.TreeItem(node.row.title, vscode.TreeItemCollapsibleState.None);
        item.id = node.id;
        item.description = rowDescription(node.row);
        item.tooltip = `${node.checkpoint.kind} · ${new Date(node.checkpoint.createdAt).toLocaleString()} · ${node.checkpoint.id.slice(0, 12)}`;
        item.iconPath = new vscode.ThemeIcon(node.row.isHead ? 'circle-filled' : 'circle-outline');
        item.contextValue = 'retraceFolderRow';
        // No arguments: the command reads the selected row (the tree re-renders; see the Timeline view).
        item.command = { command: COMMANDS.foldersOpenDiff, title: 'Open Changes' };
        return item;
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
