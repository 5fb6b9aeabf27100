/**
 * Restore to a chat prompt's restore point ("before this prompt", or the end of its turn): the
 * server resolves the checkpoint and the conversation head (`retrace/restore/toPrompt`), and the
 * flow is the ordinary restore's (`runRestore`: preview, conflicts, unsaved buffers, background
 * commands, report with Undo). The answer names the prompt the conversation restore left out
 * (`restoredPrompt`), which the chat puts back in its input.
 */
import * as vscode from 'vscode';
import { METHODS, type RestoreToPromptResult, type Rpc } from '../client/protocol';
import { runRestore } from './restore';
import type { RestoreHooks } from './restoreHooks';
import type { RestoreMode, RestoreParams } from './restoreDecision';
import type { PromptRef } from '../webview/restoreMessages';

export function isRestoreMode(value: unknown): value is RestoreMode {
    return value === 'code' || value === 'conversation' || value === 'both';
}

/** How dialogs name the point: `before “fix the parser…”`, `the end of the turn “…”`. */
export function pointLabel(ref: PromptRef): string {
    const words = ref.text.replace(/\s+/g, ' ').trim();
    const short = words.length > 48 ? `${words.slice(0, 47)}…` : words;
    return ref.point === 'before' ? vscode.l10n.t('before the prompt “{0}”', short) : vscode.l10n.t('the end of the turn “{0}”', short);
}

export async function restoreToPrompt(rpc: Rpc, ref: PromptRef, mode: RestoreMode, hooks: RestoreHooks, previousHead: string | undefined): Promise<RestoreToPromptResult | undefined> {
    const at = { sessionId: ref.sessionId, prompt: ref.prompt, point: ref.point };
    // Where the point is (a dry run moves nothing): the checkpoint names the restore in reports.
    const where = await rpc.request(METHODS.restoreToPrompt, { ...at, mode: 'conversation', dryRun: true });
    let last: RestoreToPromptResult | undefined;
    const via = async (params: RestoreParams): Promise<RestoreToPromptResult> => {
        last = await rpc.request(METHODS.restoreToPrompt, { ...params, ...at });
        return last;
    };
    const result = await runRestore(rpc, { targetId: where.checkpoint, mode, targetLabel: pointLabel(ref), previousHead, confirmOverwrite: true, via }, hooks);
    return result === undefined ? undefined : last;
}
