/**
 * What the extension does for the chat log's own requests: open a link (http/https/mailto only,
 * through `vscode.env.openExternal`), copy a code block, fetch a tool call's diff (the server's
 * `retrace/checkpoint/diff` of its checkpoint against the one before, shortened as the timeline's
 * hover does) and open a checkpoint's changes (the timeline's Open Diff command).
 */
import * as vscode from 'vscode';
import { COMMANDS } from '../../constants';
import type { Ctx } from '../../ctx';
import { METHODS } from '../../client/protocol';
import { previewOmissions, previewPatch } from '../../diff/hunks';
import { errorMessage, log } from '../../logging';
import { isAllowedLink, type LogHostMessage, type LogWebviewMessage } from '../../webview/logMessages';

/** Lines of a tool call's inline diff; the rest is counted, and the full diff is one click away. */
export const INLINE_DIFF_LINES = 80;
const INLINE_DIFF_BYTES = 64_000;

export async function onLogMessage(ctx: Ctx, m: LogWebviewMessage, post: (m: LogHostMessage) => void): Promise<void> {
    switch (m.type) {
        case 'openLink':
            if (isAllowedLink(m.href)) {
                await vscode.env.openExternal(vscode.Uri.parse(m.href, true));
            } else {
                log.warn(`chat: refused to open a link that is not http, https or mailto: ${m.href}`);
            }
            return;
        case 'copy':
            await vscode.env.clipboard.writeText(m.text);
            return;
        case 'toolDiff':
            post({ type: 'toolDiff', toolCallId: m.toolCallId, ...(await toolDiff(ctx, m.checkpoint)) });
            return;
        case 'openCheckpoint':
            await vscode.commands.executeCommand(COMMANDS.openDiff, m.checkpoint);
            return;
    }
}

async function toolDiff(ctx: Ctx, id: string): Promise<{ text: string; note: string }> {
    const rpc = ctx.rpc;
    if (rpc === undefined) {
        return { text: '', note: vscode.l10n.t('The Retrace server is not running.') };
    }
    try {
        const { checkpoint } = await rpc.request(METHODS.checkpointGet, { id });
        if (checkpoint.parent === null) {
            return { text: '', note: vscode.l10n.t('The first checkpoint: nothing to compare with.') };
        }
        const diff = await rpc.request(METHODS.checkpointDiff, { from: checkpoint.parent, to: checkpoint.id, maxPatchBytes: INLINE_DIFF_BYTES });
        const preview = previewPatch(diff.patch, INLINE_DIFF_LINES);
        const more = previewOmissions(preview, diff.truncated);
        const note = preview.text === '' ? vscode.l10n.t('No file changes.') : more.length > 0 ? vscode.l10n.t('… {0} (Checkpoint opens the whole diff)', more.join(' / ')) : '';
        return { text: preview.text, note };
    } catch (err) {
        return { text: '', note: vscode.l10n.t('Diff unavailable: {0}', errorMessage(err)) };
    }
}
