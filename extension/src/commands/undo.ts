/**
 * *Undo Last Restore*: the server undoes exactly its last restore (of that folder's store),
 * whatever its mode, restoring its safety checkpoint (unsaved editor text included). A refusal
 * the user can answer — git moved, another agent's turn runs, background commands run — is one
 * modal, then the request is sent again with the answer. An undo is a restore too: its
 * notification offers *Redo* (undoing it again).
 */
import * as vscode from 'vscode';
import { inFolderRpc } from '../client/folderRpc';
import { COMMANDS } from '../constants';
import { METHODS, type RestoreResult, type Rpc } from '../client/protocol';
import { log } from '../logging';
import { prompter } from '../ui';
import { choiceOf, isBackgroundRefusal, RESTORE_ANYWAY, STOP_AND_RESTORE } from '../views/models/backgroundModel';
import { isAgentRefusal, RESTORE_WHILE_AGENT_RUNS } from '../views/models/agentModel';
import { FILES_ONLY, isGitRefusal, PARK_FIRST, type GitChoice } from '../views/models/gitModel';
import { report } from './restoreDecision';
import { undoMovedConversation } from './restoreNotice';
import { notifyRestored, type RestoreHooks } from './restoreHooks';

const REDO = vscode.l10n.t('Redo');

/** What the user accepted for an undo (and another folder's store: `folder`, its root). */
export interface UndoAccepted {
    readonly whileAgentRuns?: 'proceed';
    readonly gitChoice?: GitChoice;
    readonly folder?: string;
}

/** The server's answer, a request to send again with the user's answer, or cancelled. */
type UndoAnswer = { readonly result: RestoreResult | null } | { readonly retry: UndoAccepted } | undefined;

function messageOf(err: unknown): string {
    return err instanceof Error ? err.message : String(err);
}

/** The server's `gitMoved` refusal of an undo as a question: files only or park first. */
async function askGitForUndo(err: unknown): Promise<GitChoice | undefined> {
    const detail = 'An undo puts files back, not git. Undo the files only (git stays as it is), or first commit the current state on a new branch retrace/parked-… so nothing is lost.';
    const pick = await prompter().modal(messageOf(err), detail, [FILES_ONLY, PARK_FIRST]);
    return pick === FILES_ONLY ? 'filesOnly' : pick === PARK_FIRST ? 'parkFirst' : undefined;
}

/** A refusal as a question to the user; anything else is thrown on. */
async function answerRefusal(err: unknown, accepted: UndoAccepted, again: (extra: object) => Promise<RestoreResult | null>): Promise<UndoAnswer> {
    if (isGitRefusal(err) && accepted.gitChoice === undefined) {
        // Git moved since the state the undo goes back to: ask as a restore does.
        const gitChoice = await askGitForUndo(err);
        return gitChoice === undefined ? undefined : { retry: { ...accepted, gitChoice } };
    }
    if (isAgentRefusal(err)) {
        // Another agent's turn runs: the server's message names it; one modal, then again.
        const pick = await prompter().modal(messageOf(err), vscode.l10n.t('Wait for the turn to end, or undo anyway.'), [RESTORE_WHILE_AGENT_RUNS]);
        return pick === RESTORE_WHILE_AGENT_RUNS ? { retry: { ...accepted, whileAgentRuns: 'proceed' } } : undefined;
    }
    if (!isBackgroundRefusal(err)) {
        throw err;
    }
    // Background commands run: the server's message names them; the user says what to do.
    const background = choiceOf(await prompter().modal(messageOf(err), vscode.l10n.t('Stop them and undo, undo anyway, or cancel.'), [STOP_AND_RESTORE, RESTORE_ANYWAY]));
    return background === undefined ? undefined : { result: await again({ backgroundTasks: background }) };
}

async function requestUndo(rpc: Rpc, accepted: UndoAccepted): Promise<UndoAnswer> {
    const { folder, ...params } = accepted;
    const inFolder = inFolderRpc(rpc, folder);
    try {
        return { result: await inFolder.request(METHODS.restoreUndoLast, params) };
    } catch (err) {
        return answerRefusal(err, accepted, extra => inFolder.request(METHODS.restoreUndoLast, { ...params, ...extra }));
    }
}

/** Undo the last restore again: the first folder's through its command, another folder's here. */
export function undoAgain(rpc: Rpc, hooks: RestoreHooks, folder: string | undefined): void {
    void (folder === undefined ? vscode.commands.executeCommand(COMMANDS.undoLastRestore) : undoLastRestore(rpc, hooks, { folder }));
}

function tellUndone(rpc: Rpc, hooks: RestoreHooks, folder: string | undefined, result: RestoreResult): void {
    const outcome = result.outcome;
    const done = outcome.kind === 'applied' || outcome.kind === 'nothingToRestore';
    const moved = undoMovedConversation(result);
    const r = report(outcome, vscode.l10n.t('the state before the last restore'), undefined, moved);
    // The server says what it undid ("Undid: Restore conversation to …", "Redid: …").
    const message = done && result.undid ? `${result.undid}.` : r.message;
    log.info(`undo last restore: ${outcome.kind} — ${message}`);
    notifyRestored(hooks, outcome, moved);
    void prompter()
        .notify(done ? 'info' : r.severity, vscode.l10n.t('Retrace: {0}', message), done ? [REDO] : [])
        // The redo is that folder's too (another folder's undo never redoes in the first).
        .then(pick => pick === REDO && undoAgain(rpc, hooks, folder));
}

/** Undo the most recent restore (of another folder's store: `folder`, its root); resolves to the server's answer. */
export async function undoLastRestore(rpc: Rpc, hooks: RestoreHooks, accepted: UndoAccepted = {}): Promise<RestoreResult | undefined> {
    await hooks.beforeRestore?.();
    let given = accepted;
    let answer = await requestUndo(rpc, given);
    while (answer !== undefined && 'retry' in answer) {
        given = answer.retry;
        answer = await requestUndo(rpc, given);
    }
    if (answer === undefined) {
        return undefined;
    }
    if (answer.result === null) {
        void prompter().notify('info', vscode.l10n.t('Retrace: there is no restore to undo.'), []);
        return undefined;
    }
    tellUndone(rpc, hooks, given.folder, answer.result);
    return answer.result;
}
