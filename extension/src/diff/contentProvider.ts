/**
 * Read-only documents for checkpoint contents: `retrace-cp:/<path>?cp=<id>` (id `current` =
 * the workspace on disk now) → `retrace/checkpoint/fileContent`. A subagent's own timeline adds
 * `&session=<parent session>&task=<task id>` (its checkpoints, `current` = its workspace copy).
 * Another folder of a multi-root workspace adds `&folder=<its root>` (its own store).
 * Absent files read as empty so a diff shows an addition or deletion; binary or unstored content
 * says so in one line.
 */
import * as vscode from 'vscode';
import { CHECKPOINT_SCHEME } from '../constants';
import type { Ctx } from '../ctx';
import { METHODS, type TaskRef } from '../client/protocol';
import { withFolder } from '../paths';

export function checkpointUri(path: string, checkpointId: string, scope?: TaskRef, folder?: string): vscode.Uri {
    const params = new URLSearchParams({
        cp: checkpointId,
        ...(scope === undefined ? {} : { session: scope.sessionId, task: scope.taskId }),
        ...(folder === undefined ? {} : { folder }),
    });
    return vscode.Uri.from({ scheme: CHECKPOINT_SCHEME, path: `/${path}`, query: params.toString() });
}

export function parseCheckpointUri(uri: vscode.Uri): { path: string; checkpointId: string; scope: TaskRef | undefined; folder: string | undefined } {
    const params = new URLSearchParams(uri.query);
    const checkpointId = params.get('cp');
    if (checkpointId === null || checkpointId === '') {
        throw new Error(`not a checkpoint URI (no cp=…): ${uri.toString()}`);
    }
    const sessionId = params.get('session');
    const taskId = params.get('task');
    const scope = sessionId !== null && taskId !== null ? { sessionId, taskId } : undefined;
    return { path: uri.path.replace(/^\//, ''), checkpointId, scope, folder: params.get('folder') ?? undefined };
}

export class CheckpointContentProvider implements vscode.TextDocumentContentProvider {
    private readonly changed = new vscode.EventEmitter<vscode.Uri>();
    readonly onDidChange = this.changed.event;

    constructor(private readonly ctx: Ctx) {}

    async provideTextDocumentContent(uri: vscode.Uri, token: vscode.CancellationToken): Promise<string> {
        const { path, checkpointId, scope, folder } = parseCheckpointUri(uri);
        const rpc = await this.ctx.ready();
        const params = { id: checkpointId, path, ...(scope === undefined ? {} : { task: scope }) };
        const r = await rpc.request(METHODS.checkpointFileContent, withFolder(params, folder));
        if (token.isCancellationRequested || !r.exists) {
            return '';
        }
        if (r.text !== null) {
            return r.text;
        }
        if (r.unstored !== null) {
            return vscode.l10n.t('(content not stored: {0})', r.unstored);
        }
        return r.binary ? vscode.l10n.t('(binary file, {0} bytes)', r.size) : '';
    }

    /** `current` documents change whenever the workspace does. */
    refreshCurrent(): void {
        for (const doc of vscode.workspace.textDocuments) {
            if (doc.uri.scheme === CHECKPOINT_SCHEME && doc.uri.query.includes('cp=current')) {
                this.changed.fire(doc.uri);
            }
        }
    }

    dispose(): void {
        this.changed.dispose();
    }
}
