/**
 * Other agents' sessions (Claude Code, Gemini CLI, recorded through their hooks) as the extension
 * shows them. Pure (of `vscode` only `l10n`; unit-tested). The server decides everything: which rows
 * offer no conversation restore and why (`StoryRow.conversationRestore`), which turns run
 * (`StoryTurn.state`, `RestoreResult.agentTurns`), and refuses a code restore racing a running
 * turn with the error code `agentTurnRunning`; this module only words the question and reads
 * the refusal.
 */
import * as vscode from 'vscode';
import type { RunningAgentTurn, StoryRow } from '../../client/protocol';

/** Context value of a row whose conversation cannot be restored (only code restores are offered). */
export const CODE_ONLY_CONTEXT = 'checkpoint.codeOnly';

/** The server's error code for a code restore refused while another agent's turn runs. */
export const AGENT_RUNNING_CODE = 'agentTurnRunning';

export const RESTORE_WHILE_AGENT_RUNS = vscode.l10n.t('Restore Anyway');

/** The reason the server gives for not offering conversation restores on a row, if it does. */
export function codeOnlyReason(row: StoryRow): string | undefined {
    const restore = row.conversationRestore ?? null;
    return restore !== null && !restore.available ? (restore.reason ?? vscode.l10n.t('Only the code of this checkpoint can be restored')) : undefined;
}

function clock(iso: string | null): string {
    if (iso === null) {
        return vscode.l10n.t('an unknown time');
    }
    const d = new Date(iso);
    if (Number.isNaN(d.getTime())) {
        return iso;
    }
    const pad = (n: number): string => String(n).padStart(2, '0');
    return `${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

function oneLine(text: string, limit: number): string {
    const line = text.split(/\s+/).filter(Boolean).join(' ');
    return line.length <= limit ? line : `${line.slice(0, limit - 1)}…`;
}

/** The one modal a code restore asks while other agents' turns run (the user must act). */
export function agentTurnQuestion(turns: readonly RunningAgentTurn[]): { message: string; detail: string; buttons: readonly string[] } {
    const first = turns[0];
    const message =
        turns.length === 1 && first !== undefined
            ? vscode.l10n.t('{0} is running a turn in this workspace: its tools may overwrite restored files.', first.agentTitle)
            : vscode.l10n.t('{0} agents are running a turn in this workspace: its tools may overwrite restored files.', turns.length);
    const lines = turns.map(t => `${vscode.l10n.t('{0} — session {1}, since {2}', t.agentTitle, t.sessionId, clock(t.since))}${t.prompt !== '' ? `: “${oneLine(t.prompt, 80)}”` : ''}`);
    const detail = `${lines.join('\n')}\n\n${vscode.l10n.t('Wait for the turn to end, or restore the code anyway.')}`;
    return { message, detail, buttons: [RESTORE_WHILE_AGENT_RUNS] };
}

/** Whether a request failed because another agent's turn runs (the server's error `data.code`). */
export function isAgentRefusal(err: unknown): boolean {
    const data = typeof err === 'object' && err !== null ? (err as { data?: unknown }).data : undefined;
    return typeof data === 'object' && data !== null && (data as { code?: unknown }).code === AGENT_RUNNING_CODE;
}
