/**
 * What the extension does for the chat's restore messages (the webview only posts them): a
 * prompt's restore point through `retrace.restoreToPrompt` (the ordinary restore flow with its
 * dialogs), a tool call's checkpoint through the timeline's Restore commands, and "Edit and
 * resend": the conversation restored to before the prompt (`retrace/restore/toPrompt`, mode
 * `conversation`: files stay as they are, the model is told) and the edited text sent there, on
 * the fork. The commands put the prompt a conversation restore left out back into the input
 * (`restoredPrompt`, named by the server; `ChatViewProvider.offerPrompt`).
 */
import * as vscode from 'vscode';
import { COMMANDS } from '../../constants';
import type { Ctx } from '../../ctx';
import { METHODS } from '../../client/protocol';
import { log } from '../../logging';
import type { PromptRef, RestoreWebviewMessage } from '../../webview/restoreMessages';

export interface ChatRestoreHost {
    readonly sessionId: string | undefined;
    /** Send a prompt in the chat's session (as the input's Send does). */
    send(text: string): Promise<unknown>;
}

const RESTORE_COMMAND = { code: COMMANDS.restoreCode, conversation: COMMANDS.restoreConversation, both: COMMANDS.restoreBoth } as const;

export async function onRestoreMessage(ctx: Ctx, m: RestoreWebviewMessage, host: ChatRestoreHost): Promise<void> {
    log.info(`chat: ${m.type} ${'mode' in m ? m.mode : ''} ${'point' in m ? m.point : ''} ${'prompt' in m ? m.prompt : m.checkpoint}`);
    switch (m.type) {
        case 'restorePrompt': {
            const sessionId = host.sessionId;
            if (sessionId === undefined) {
                return;
            }
            const ref: PromptRef = { sessionId, prompt: m.prompt, point: m.point, text: m.text };
            await vscode.commands.executeCommand(COMMANDS.restoreToPrompt, ref, m.mode);
            return;
        }
        case 'restoreCheckpoint':
            await vscode.commands.executeCommand(RESTORE_COMMAND[m.mode], m.checkpoint);
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
