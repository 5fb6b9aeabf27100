/**
 * The chat's commands: open Retrace (the chat, and the server), send a prompt (from a keybinding,
 * a test or an input box), cancel the running turn, start a new session.
 */
import * as vscode from 'vscode';
import { COMMANDS } from '../constants';
import type { Parts } from './parts';
import { localCommand, serverCommand, type Registration } from './registry';

export function chatCommands({ ctx, chat }: Parts): Registration[] {
    return [
        localCommand(COMMANDS.open, async () => {
            await chat.reveal();
            void ctx.start();
        }),
        serverCommand(COMMANDS.prompt, () => async (text: unknown) => {
            const prompt = typeof text === 'string' ? text : await vscode.window.showInputBox({ prompt: vscode.l10n.t('Ask the Retrace agent'), placeHolder: vscode.l10n.t('What should the agent do?') });
            if (prompt === undefined || prompt.trim() === '') {
                return undefined;
            }
            await chat.reveal();
            return chat.send(prompt);
        }),
        serverCommand(COMMANDS.cancel, () => () => chat.cancel()),
        localCommand(COMMANDS.newSession, () => chat.newSession()),
    ];
}
