/**
 * Read-only documents for checkpoint contents: `retrace-cp:/<path>?cp=<id>` (id `current` =
 * the workspace on disk now) → `retrace/checkpoint/fileContent`. Absent files read as empty so a
 * diff shows an addition or deletion; binary or unstored content says so in one line.
 */
import * as vscode from 'vscode';
import { CHECKPOINT_SCHEME } from '../constants';
import type { Ctx } from '../ctx';
import { METHODS } from '../client/protocol';

export function checkpointUri(path: string, checkpointId: string): vscode.Uri {
    return vscode.Uri.from({ scheme: CHECKPOINT_SCHEME, path: `/${path}`, query: `cp=${encodeURIComponent(checkpointId)}` });
}

export function parseCheckpointUri(uri: vscode.Uri): { path: string; checkpointId: string } {
    const params = new URLSearchParams(uri.query);
    const checkpointId = params.get('cp');
    if (checkpointId === null || checkpointId === '') {
        throw new Error(`not a checkpoint URI (no cp=…): ${uri.toString()}`);
    }
    return { path: uri.path.replace(/^\//, ''), checkpointId };
}

export class CheckpointContentProvider implements vscode.TextDocumentContentProvider {
    private readonly changed = new vscode.EventEmitter<vscode.Uri>();
    readonly onDidChange = this.changed.event;

    constructor(private readonly ctx: Ctx) {}

    async provideTextDocumentContent(uri: vscode.Uri, token: vscode.CancellationToken): Promise<string> {
        const { path, checkpointId } = parseCheckpointUri(uri);
        const rpc = await this.ctx.ready();
        const r = await rpc.request(METHODS.checkpointFileContent, { id: checkpointId, path });
        if (token.isCancellationRequested || !r.exists) {
            return '';
        }
        if (r.text !== null) {
            return r.text;
        }
        if (r.unstored !== null) {
            return `(content not stored: ${r.unstored})`;
        }
        return r.binary ? `(binary file, ${r.size} bytes)` : '';
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
