/**
 * Which checkpoint a timeline command works on: the clicked row (a node), a checkpoint id (tests,
 * hovers, keybindings) or the row selected in the Retrace timeline (row commands carry no
 * arguments: the workbench drops them when the tree re-renders). A row nested under a `task` row
 * is a subagent's (`scope`); a row of another folder of a multi-root workspace carries that
 * folder's root (`folder`), and `rpc` names it in every request (its own store).
 */
import * as vscode from 'vscode';
import { METHODS, type Checkpoint, type Rpc, type TaskRef } from '../client/protocol';
import { inFolderRpc } from '../client/folderRpc';
import { selectedRow } from '../views/providers/selection';
import type { TimelineProvider } from '../views/providers/timeline/provider';
import type { CheckpointNode } from '../views/models/timelineModel';

export interface Target {
    readonly cp: Checkpoint;
    readonly scope: TaskRef | undefined;
    readonly folder: string | undefined;
    readonly rpc: Rpc;
}

/** A target on a workspace timeline (never a subagent's). */
export type RowTarget = Omit<Target, 'scope'>;

function isCheckpointNode(value: unknown): value is CheckpointNode {
    return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'checkpoint' && 'checkpoint' in value;
}

function rowOf(rpc: Rpc, node: CheckpointNode): Target {
    return { cp: node.checkpoint, scope: node.scope, folder: node.folder, rpc: inFolderRpc(rpc, node.folder) };
}

export class Targets {
    constructor(private readonly timeline: TimelineProvider) {}

    /** The checkpoint a tree command was invoked on (node, id or the selected row). */
    async of(rpc: Rpc, arg: unknown): Promise<Target> {
        if (isCheckpointNode(arg)) {
            return rowOf(rpc, arg);
        }
        if (typeof arg === 'string' && arg !== '') {
            const cp = this.timeline.checkpoint(arg) ?? (await rpc.request(METHODS.checkpointGet, { id: arg })).checkpoint;
            return { cp, scope: undefined, folder: undefined, rpc };
        }
        const selected = await selectedRow(this.timeline.view, (n): n is CheckpointNode => n.kind === 'checkpoint');
        if (selected !== undefined) {
            return rowOf(rpc, selected);
        }
        throw new Error('select a checkpoint in the Retrace timeline first');
    }

    /** The checkpoint (and its folder) of a command that works on a workspace timeline only. */
    async row(rpc: Rpc, arg: unknown): Promise<RowTarget> {
        const target = await this.of(rpc, arg);
        if (target.scope !== undefined) {
            throw new Error("this works on the workspace's timeline, not inside a subagent's");
        }
        return target;
    }

    /** The checkpoint of a command that works on the first folder's timeline only (the agent's). */
    async firstFolder(rpc: Rpc, arg: unknown): Promise<Checkpoint> {
        const { cp, folder } = await this.row(rpc, arg);
        if (folder !== undefined && folder !== this.timeline.agentFolder) {
            throw new Error(vscode.l10n.t('this works in the first folder of the workspace only'));
        }
        return cp;
    }
}
