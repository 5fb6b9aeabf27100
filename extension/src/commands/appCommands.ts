/**
 * Retrace itself: the demo, the model key and the editor's language model, the server process
 * (restart, install its dependencies, its logs), the store (verify, collect garbage) and the
 * other agents' integrations (Claude Code, Gemini CLI hooks).
 */
import * as vscode from 'vscode';
import { COMMANDS, SECRET_API_KEY } from '../constants';
import type { Ctx } from '../ctx';
import { log } from '../logging';
import { AGENT_COMMANDS, integrateAgent } from './agents';
import { createDemoFolder } from './demo';
import { collectGarbage } from './health';
import { chooseLanguageModel } from './languageModel';
import type { Parts } from './parts';
import { localCommand, serverCommand, type Registration } from './registry';
import { verifyStore } from './verify';

/** A fresh demo folder from the sample shipped in the extension, opened in a new window. */
async function tryDemo(ctx: Ctx): Promise<string | undefined> {
    const source = vscode.Uri.joinPath(ctx.extension.extensionUri, 'extension', 'media', 'demo-workspace').fsPath;
    const base = vscode.Uri.joinPath(ctx.extension.globalStorageUri, 'demo').fsPath;
    try {
        const folder = await createDemoFolder(source, base);
        log.info(`demo folder created: ${folder}`);
        await vscode.commands.executeCommand('vscode.openFolder', vscode.Uri.file(folder), { forceNewWindow: true });
        return folder;
    } catch (err) {
        log.error('creating the demo folder failed', err);
        void vscode.window.showErrorMessage(vscode.l10n.t('Retrace: cannot create the demo folder: {0}', err instanceof Error ? err.message : String(err)));
        return undefined;
    }
}

/** Ask for the Anthropic API key (empty: remove it); the server restarts with it in its environment. */
async function setApiKey(ctx: Ctx): Promise<void> {
    const key = await vscode.window.showInputBox({ prompt: vscode.l10n.t('Anthropic API key (stored in VS Code secret storage)'), password: true, ignoreFocusOut: true });
    if (key === undefined) {
        return;
    }
    if (key.trim() === '') {
        await ctx.extension.secrets.delete(SECRET_API_KEY);
        log.info('API key removed');
    } else {
        await ctx.extension.secrets.store(SECRET_API_KEY, key.trim());
        log.info('API key stored (not logged)');
    }
    await ctx.restart(); // the key reaches the server through its environment
}

export function appCommands({ ctx }: Parts): Registration[] {
    return [
        localCommand(COMMANDS.tryDemo, () => tryDemo(ctx)),
        localCommand(COMMANDS.chooseLanguageModel, () => chooseLanguageModel()),
        localCommand(COMMANDS.restartServer, () => ctx.restart()),
        localCommand(COMMANDS.installServer, () => ctx.installServerDependencies()),
        localCommand(COMMANDS.showLogs, () => ctx.output.show()),
        localCommand(COMMANDS.setApiKey, () => setApiKey(ctx)),
        serverCommand(COMMANDS.verifyStore, rpc => () => verifyStore(rpc, ctx.output)),
        serverCommand(COMMANDS.collectGarbage, rpc => () => collectGarbage(rpc)),
        ...AGENT_COMMANDS.map(({ command, agent, remove }) => serverCommand(command, rpc => () => integrateAgent(rpc, agent, remove))),
    ];
}
