/**
 * What the extension does for the chat's restore messages (the webview only posts them): a
 * prompt's restore point through `retrace.restoreToPrompt` (the ordinary restore flow with its
 * dialogs), a tool call's checkpoint through the timeline's Restore commands, and "Edit and
 * resend": the conversation restored to before the prompt (`retrace/restore/toPrompt`, mode
 * `conversation`: files stay as they are, the model is told) and the edited text sent there, on
 * the fork. After a conversation restore the prompt it left out goes back into the input
 * (`restoredPrompt`, named by the server).
 */
import * as vscode from 'vscode';
import { COMMANDS } from '../constants';
import type { Ctx } from '../ctx';
import { METHODS, type RestoreResult } from '../client/protocol';
import type { PromptRef } from '../commands/restorePrompt';
import { log } from '../logging';
import type { RestoreHostMessage, RestoreWebviewMessage } from '../webview/restoreMessages';

export interface ChatRestoreHost {
    readonly sessionId: string | undefined;
    /** Send a prompt in the chat's session (as the input's Send does). */
    send(text: string): Promise<unknown>;
    post(m: RestoreHostMessage): void;
}

const RESTORE_COMMAND = { code: COMMANDS.restoreCode, conversation: COMMANDS.restoreConversation, both: COMMANDS.restoreBoth } as const;

function offer(host: ChatRestoreHost, result: RestoreResult | undefined): void {
    const text = result?.restoredPrompt;
    if (typeof text === 'string' && text !== '') {
        host.post({ type: 'setPrompt', text });
    }
}

export async function onRestoreMessage(ctx: Ctx, m: RestoreWebviewMessage, host: ChatRestoreHost): Promise<void> {
    log.info(`chat: ${m.type} ${'mode' in m ? m.mode : ''} ${'point' in m ? m.point : ''} ${'prompt' in m ? m.prompt : m.checkpoint}`);
    switch (m.type) {
        case 'restorePrompt': {
            const sessionId = host.sessionId;
            if (sessionId === undefined) {
                return;
            }
            const ref: PromptRef = { sessionId, prompt: m.prompt, point: m.point, text: m.text };
            offer(host, await vscode.commands.executeCommand<RestoreResult | undefined>(COMMANDS.restoreToPrompt, ref, m.mode));
            return;
        }
        case 'restoreCheckpoint':
            offer(host, await vscode.commands.executeCommand<RestoreResult | undefined>(RESTORE_COMMAND[m.mode], m.checkpoint));
            return;
        case 'editResend': {
            const sessionId = host.sessionId;
            if (sessionId === undefined) {
                throw new Error('this prompt belongs to no open session');
            }
            const rpc = await ctx.ready();
            await rpc.request(METHODS.restoreToPrompt, { sessionId, prompt: m.prompt, point: 'before', mode: 'conversation' });
            await host.send(m.text);
            return;
        }
    }
}
