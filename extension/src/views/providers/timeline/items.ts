/**
 * How a Timeline node becomes a `vscode.TreeItem` (label, description, icon, command, hover) and
 * a row's rich hover (its diff preview asked from the row's own store, filled lazily by
 * `resolveTreeItem`). What a node says is `models/timelineLook.ts` (pure); this only turns it into the
 * workbench's objects.
 */
import * as vscode from 'vscode';
import { COMMANDS } from '../../../constants';
import { METHODS, type Rpc } from '../../../client/protocol';
import { previewOmissions, previewPatch } from '../../../diff/hunks';
import { errorMessage } from '../../../logging';
import type { CheckpointNode, TimelineNode } from '../../models/timelineModel';
import { groupHover, lookOf } from '../../models/timelineLook';
import { escapeMd, rowHoverText } from '../../models/rowHover';
import type { FolderGroupNode } from '../../models/folderGroups';

const PREVIEW_LINES = 24;
export const SHOW_EARLIER = 'retrace.timeline.showEarlier';

export function treeItem(node: TimelineNode, expanded: boolean): vscode.TreeItem {
    const look = lookOf(node);
    const item = new vscode.TreeItem(
        look.label,
        look.collapsible
            ? expanded
                ? vscode.TreeItemCollapsibleState.Expanded
                : vscode.TreeItemCollapsibleState.Collapsed
            : vscode.TreeItemCollapsibleState.None,
    );
    item.id = node.id;
    item.description = look.description;
    item.contextValue = look.contextValue;
    item.iconPath = new vscode.ThemeIcon(look.icon, look.iconColor === undefined ? undefined : new vscode.ThemeColor(look.iconColor));
    if (node.kind === 'checkpoint') {
        // No arguments: the command reads the selected row. A command with arguments is held
        // by the workbench per rendered item, and the tree re-renders after every tool call:
        // a click on a row just replaced would do nothing ("command not found").
        item.command = { command: COMMANDS.openDiff, title: vscode.l10n.t('Open Changes') };
        item.accessibilityInformation = { label: `${look.label} ${look.description}` };
    } else if (node.kind === 'more') {
        item.command = { command: SHOW_EARLIER, title: vscode.l10n.t('Load Older Steps') }; // the selected row's page
    } else if (node.kind === 'turn') {
        item.tooltip = new vscode.MarkdownString().appendText(node.turn.prompt || node.title);
    } else if (node.kind === 'group') {
        item.tooltip = new vscode.MarkdownString().appendText(groupHover(node));
    } else if (node.kind === 'subagent') {
        item.tooltip = new vscode.MarkdownString().appendText(
            vscode.l10n.t(
                "Subagent “{0}” ({1}): its task call made no checkpoint here; its own timeline is kept. Resume it, apply its result or discard it from this row's menu.",
                node.task.description,
                node.task.status ?? vscode.l10n.t('unknown'),
            ),
        );
    }
    return item;
}

/** A folder of a multi-root workspace: its name, how many sessions and when it last changed. */
export function folderItem(node: FolderGroupNode): vscode.TreeItem {
    const item = new vscode.TreeItem(node.folder.name, node.first ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed);
    item.id = node.id;
    item.description = node.description;
    item.tooltip = node.folder.root;
    item.iconPath = new vscode.ThemeIcon('root-folder');
    item.contextValue = 'folder';
    return item;
}

/** A row's hover: what it did, why it is safe, and its diff (from `rpc`: the row's own store). */
export async function rowTooltip(node: CheckpointNode, rpc: Rpc | undefined, token: vscode.CancellationToken): Promise<vscode.MarkdownString> {
    const md = new vscode.MarkdownString('', true);
    md.appendMarkdown(rowHoverText({ node, icon: lookOf(node).icon, when: new Date(node.checkpoint.createdAt).toLocaleString() }));
    const cp = node.checkpoint;
    if (rpc !== undefined && cp.parent !== null && cp.parent !== undefined && (cp.files ?? []).length > 0) {
        await appendDiff(md, node, cp.parent, rpc, token);
    }
    return md;
}

/** The row's diff from its parent, cut to a preview (what was left out said). */
async function appendDiff(md: vscode.MarkdownString, node: CheckpointNode, parent: string, rpc: Rpc, token: vscode.CancellationToken): Promise<void> {
    try {
        const diff = await rpc.request(METHODS.checkpointDiff, { from: parent, to: node.checkpoint.id, ...(node.scope === undefined ? {} : { task: node.scope }) });
        if (token.isCancellationRequested) {
            return;
        }
        const preview = previewPatch(diff.patch, PREVIEW_LINES);
        if (preview.text !== '') {
            md.appendCodeblock(preview.text, 'diff');
        }
        const more = previewOmissions(preview, diff.truncated);
        if (more.length > 0) {
            md.appendMarkdown(`\n… ${more.join(' / ')}`);
        }
    } catch (err) {
        md.appendMarkdown(`_${vscode.l10n.t('diff unavailable: {0}', escapeMd(errorMessage(err)))}_`);
    }
}
