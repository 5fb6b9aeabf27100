/**
 * "Retrace: Checkpoint Claude Code / Gemini CLI in this workspace" (and "Stop checkpointing …"):
 * the server writes (or takes out) Retrace's hooks in the agent's project settings
 * (`retrace/agents/integrate`, the same work as `retrace integrate <agent>`); this module only
 * asks and renders the answer, as an information message since the user acted. An untrusted
 * workspace is refused here and by the server. The table and the wording are pure (unit-tested).
 */
import * as vscode from 'vscode';
import { COMMANDS, type CommandId } from '../constants';
import { METHODS, type AgentIntegrateResult, type Rpc } from '../client/protocol';
import { prompter } from '../ui';

export type IntegratedAgent = AgentIntegrateResult['agent'];

export interface AgentCommand {
    readonly command: CommandId;
    readonly agent: IntegratedAgent;
    readonly remove: boolean;
}

/** Every agent command: one to start checkpointing an agent, one to stop. */
export const AGENT_COMMANDS: readonly AgentCommand[] = [
    { command: COMMANDS.integrateClaudeCode, agent: 'claude-code', remove: false },
    { command: COMMANDS.removeClaudeCode, agent: 'claude-code', remove: true },
    { command: COMMANDS.integrateGeminiCli, agent: 'gemini-cli', remove: false },
    { command: COMMANDS.removeGeminiCli, agent: 'gemini-cli', remove: true },
];

export const OPEN_SETTINGS = vscode.l10n.t('Open Settings File');

export const UNTRUSTED_MESSAGE = vscode.l10n.t("Retrace: another agent's tool calls are checkpointed only in a trusted workspace (Manage Workspace Trust).");

/** The file's name as the user knows it (`.claude/settings.local.json`). */
export function settingsName(file: string): string {
    const parts = file.split(/[\\/]/);
    return parts.slice(-2).join('/');
}

/** What the information message says about a result (pure). */
export function integrateMessage(result: AgentIntegrateResult): string {
    const file = settingsName(result.file);
    const said: Record<AgentIntegrateResult['action'], string> = {
        added: vscode.l10n.t('Retrace: every {0} tool call in this workspace now becomes a checkpoint (hooks added to {1}). Restart {0} sessions that are already running.', result.title, file),
        updated: vscode.l10n.t("Retrace: {0}'s Retrace hooks in {1} are up to date again.", result.title, file),
        removed: vscode.l10n.t("Retrace: {0} tool calls are no longer checkpointed (Retrace's hooks taken out of {1}; your other settings are kept).", result.title, file),
        unchanged: vscode.l10n.t('Retrace: nothing to change in {0}.', file),
    };
    const notes = result.notes.length > 0 ? vscode.l10n.t(' Note: {0}.', result.notes.join('; ')) : '';
    return said[result.action] + notes;
}

/** Run one agent command: ask the server, then say what changed. */
export async function integrateAgent(rpc: Rpc, agent: IntegratedAgent, remove: boolean): Promise<AgentIntegrateResult | undefined> {
    if (!vscode.workspace.isTrusted) {
        void prompter().notify('warning', UNTRUSTED_MESSAGE, []);
        return undefined;
    }
    const result = await rpc.request(METHODS.agentsIntegrate, { agent, remove });
    const buttons = result.action === 'removed' && remove ? [] : [OPEN_SETTINGS];
    void prompter()
        .notify('info', integrateMessage(result), buttons)
        .then(async pick => {
            if (pick === OPEN_SETTINGS) {
                await vscode.window.showTextDocument(vscode.Uri.file(result.file));
            }
        });
    return result;
}
