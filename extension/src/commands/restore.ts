/**
 * The restore commands: dry run → confirm (counts, files, conflicts) → real restore → report
 * with "Undo restore". The server applies the edits through `workspace/applyEdit` and asks us to
 * save and to restore the editor layout (handled in editorState/restore.ts). A restore inside a
 * subagent's own timeline (`task`) is the same flow with `task` in every request: the server
 * restores the child's workspace copy on disk (no editor is involved, so no unsaved text of the
 * user's conflicts with it, and the user's "undo last restore" is not offered for it).
 */
import * as vscode from 'vscode';
import { inFolderRpc } from '../client/folderRpc';
import { withFolder } from '../paths';
import { COMMANDS } from '../constants';
import { METHODS, type PlannedFile, type RestoreOutcome, type RestoreResult, type Rpc, type TaskRef } from '../client/protocol';
import { checkpointUri } from '../diff/contentProvider';
import { mergePreviews } from '../diff/mergePreview';
import { askRestoreReason, WHY } from './health';
import { log } from '../logging';
import { prompter } from '../ui';
import { choiceOf, isBackgroundRefusal, restoreQuestion, RESTORE_ANYWAY, STOP_AND_RESTORE, type BackgroundChoice } from '../views/models/backgroundModel';
import { agentTurnQuestion, isAgentRefusal, RESTORE_WHILE_AGENT_RUNS } from '../views/models/agentModel';
import { FILES_ONLY, gitAnswer, gitQuestion, isGitRefusal, parkedNote, PARK_FIRST, type GitChoice } from '../views/models/gitModel';
import {
    MERGE_LABEL,
    OVERWRITE_LABEL,
    SKIP_LABEL,
    conflictButtons,
    decide,
    modeLabel,
    report,
    resolve,
    type ConflictChoice,
    type RestoreMode,
    type RestoreParams,
} from './restoreDecision';

export interface RestoreRequest {
    readonly targetId: string;
    readonly mode: RestoreMode;
    /** How the target is named in dialogs, e.g. “edit_file src/app.py”. */
    readonly targetLabel: string;
    readonly paths?: readonly string[];
    /** The head before the restore (undo target when the server made no restore checkpoint). */
    readonly previousHead: string | undefined;
    /** Skip the overwrite confirmation (undo: the user just asked for exactly this). */
    readonly confirmOverwrite: boolean;
    /** Restore inside this subagent's own timeline (its workspace copy) instead. */
    readonly task?: TaskRef;
    /** Restore in this other folder of the workspace (its root): every request names it, and
     * *Undo* undoes that folder's last restore. */
    readonly folder?: string;
    /** Send each restore request (dry run and real) through another method of the same contract
     * (a chat prompt's restore point: `retrace/restore/toPrompt`); default `retrace/checkpoint/restore`. */
    readonly via?: (params: RestoreParams) => Promise<RestoreResult>;
}

export interface RestoreHooks {
    /** After a restore that moved the conversation. */
    onConversationRestored(): void;
    /** After any applied restore. */
    onRestored(outcome: RestoreOutcome): void;
}

const MERGE = MERGE_LABEL;
const APPLY_MERGE = vscode.l10n.t('Apply merged text');
const OVERWRITE = OVERWRITE_LABEL;
const SKIP = SKIP_LABEL;
const RESTORE = vscode.l10n.t('Restore');
const UNDO = vscode.l10n.t('Undo restore');
const REDO = vscode.l10n.t('Redo');

async function showMerges(conflicts: readonly PlannedFile[], task: TaskRef | undefined, root: string | undefined): Promise<void> {
    const folder = root === undefined ? vscode.workspace.workspaceFolders?.[0] : { uri: vscode.Uri.file(root) };
    for (const f of conflicts) {
        const merged = f.conflict?.mergedText;
        if (merged === null || merged === undefined || folder === undefined) {
            continue;
        }
        const current = task === undefined ? vscode.Uri.joinPath(folder.uri, f.path) : checkpointUri(f.path, 'current', task);
        await vscode.commands.executeCommand('vscode.diff', current, mergePreviews.add(f.path, merged), vscode.l10n.t('{0} (current ↔ merged)', f.path), { preview: false });
    }
    log.info(`opened merge previews for ${conflicts.length} conflicting file(s)`);
}

async function askConflict(message: string, detail: string, conflicts: readonly PlannedFile[], mergeable: readonly string[], task: TaskRef | undefined, root: string | undefined): Promise<ConflictChoice | undefined> {
    const ui = prompter();
    const first = await ui.modal(message, detail, conflictButtons(mergeable.length > 0));
    if (first === MERGE) {
        await showMerges(conflicts, task, root);
        const second = await ui.modal(
            vscode.l10n.t('Apply the merged text to {0} file(s)?', mergeable.length),
            vscode.l10n.t('Files whose merge failed are skipped.\n{0}', mergeable.join('\n')),
            [APPLY_MERGE, SKIP, OVERWRITE],
        );
        return second === APPLY_MERGE ? 'merge' : second === OVERWRITE ? 'overwrite' : second === SKIP ? 'skip' : undefined;
    }
    return first === OVERWRITE ? 'overwrite' : first === SKIP ? 'skip' : undefined;
}

/** Workspace-relative paths of open documents with unsaved changes. */
function dirtyPaths(folderRoot?: string): Set<string> {
    const folder = folderRoot === undefined ? vscode.workspace.workspaceFolders?.[0] : { uri: vscode.Uri.file(folderRoot) };
    const out = new Set<string>();
    if (folder === undefined) {
        return out;
    }
    const root = folder.uri.path.endsWith('/') ? folder.uri.path : `${folder.uri.path}/`;
    for (const doc of vscode.workspace.textDocuments) {
        if (doc.isDirty && doc.uri.scheme === folder.uri.scheme && doc.uri.path.startsWith(root)) {
            out.add(doc.uri.path.slice(root.length));
        }
    }
    return out;
}

/** Run the whole flow; resolves to the server's last answer, or undefined when the user cancelled. */
export async function runRestore(rpc: Rpc, req: RestoreRequest, hooks: RestoreHooks): Promise<RestoreResult | undefined> {
    const send = req.via ?? ((p: RestoreParams) => rpc.request(METHODS.checkpointRestore, withFolder(p, req.folder)));
    const params: RestoreParams = { id: req.targetId, mode: req.mode, ...(req.paths ? { paths: [...req.paths] } : {}), ...(req.task ? { task: req.task } : {}) };
    // A conversation-only restore never touches files: nothing to preview or confirm.
    const dry = req.mode === 'conversation' ? undefined : await send({ ...params, dryRun: true });
    // The editor's unsaved text belongs to the user's workspace, never to a subagent's copy.
    const dirty = req.task === undefined ? dirtyPaths(req.folder) : new Set<string>();
    const decision = dry === undefined ? ({ kind: 'proceed' } as const) : decide(dry.outcome, req.targetLabel, dirty);
    // Git moved since the target, or commands since then touched the world outside: one modal.
    const outside = req.mode === 'conversation' || dry === undefined ? undefined : gitQuestion(dry, req.targetLabel);
    let finalParams: RestoreParams;
    let keptOut: readonly PlannedFile[] = [];
    switch (decision.kind) {
        case 'nothing':
            void prompter().notify('info', vscode.l10n.t('Retrace: {0}', decision.message), []);
            return dry;
        case 'failed':
            void prompter().notify('error', vscode.l10n.t('Retrace: {0}', decision.message), []);
            return dry;
        case 'proceed':
            finalParams = resolve(params, undefined, [], []);
            break;
        case 'confirm': {
            // Git moved or side effects to name: their one modal asks instead (with these words).
            if (req.confirmOverwrite && outside === undefined) {
                const pick = await prompter().modal(decision.message, decision.detail, [RESTORE]);
                if (pick !== RESTORE) {
                    return undefined;
                }
            }
            finalParams = resolve(params, undefined, [], []);
            break;
        }
        case 'conflict': {
            const choice = await askConflict(decision.message, decision.detail, decision.conflicts, decision.mergeable, req.task, req.folder);
            if (choice === undefined) {
                return undefined;
            }
            const conflicting = new Set(decision.conflicts.map(f => f.path));
            const others = (dry?.outcome.plan?.files ?? []).map(f => f.path).filter(p => !conflicting.has(p));
            finalParams = resolve(params, choice, decision.conflicts, decision.mergeable, others);
            keptOut = choice === 'skip' ? decision.conflicts : [];
            break;
        }
    }
    // Running background commands may overwrite what the restore writes: the user says what to do.
    const running = req.mode === 'conversation' ? [] : (dry?.backgroundTasks ?? []);
    if (running.length > 0) {
        const q = restoreQuestion(running);
        const background = choiceOf(await prompter().modal(q.message, q.detail, q.buttons));
        if (background === undefined) {
            return undefined;
        }
        finalParams = { ...finalParams, backgroundTasks: background };
    }
    // Another agent's running turn (Claude Code, Gemini CLI): one modal, the user must act.
    const agents = req.mode === 'conversation' ? [] : (dry?.agentTurns ?? []);
    if (agents.length > 0) {
        const q = agentTurnQuestion(agents);
        if ((await prompter().modal(q.message, q.detail, q.buttons)) !== RESTORE_WHILE_AGENT_RUNS) {
            return undefined;
        }
        finalParams = { ...finalParams, whileAgentRuns: 'proceed' };
    }
    if (outside !== undefined) {
        const what = decision.kind === 'confirm' ? `${decision.message}\n${decision.detail}\n\n` : '';
        const answer = gitAnswer(outside, await prompter().modal(outside.message, `${what}${outside.detail}`, outside.buttons));
        if (answer === 'cancel') {
            return undefined;
        }
        finalParams = answer === 'proceed' ? finalParams : { ...finalParams, gitChoice: answer };
    }
    log.info(`restore ${modeLabel(req.mode)} → ${req.targetId}${req.task ? ` in subagent ${req.task.taskId}` : ''} ${JSON.stringify({ force: finalParams.force, resolutions: finalParams.resolutions, paths: finalParams.paths, backgroundTasks: finalParams.backgroundTasks, gitChoice: finalParams.gitChoice })}`);
    // `skipConflicts` belongs to the restore contract (see restoreDecision.ts).
    const result = await requestRestore(send, finalParams);
    if (result === undefined) {
        return undefined;
    }
    const outcome = result.outcome;
    // A restore to before the first prompt leaves no head, and says which prompt it left out.
    const moved = result.conversationHead !== null || (result.restoredPrompt ?? null) !== null;
    const conversationMoved = req.mode !== 'code' && moved && outcome.kind !== 'failed' && outcome.kind !== 'conflict';
    const r = report(outcome, req.targetLabel, req.previousHead, conversationMoved, keptOut);
    // What of the agent's terminal could not come back as recorded (secret variables), as the server says.
    const terminal = (conversationMoved ? (result.terminalNotes ?? []).map(n => ` Terminal: ${n}.`).join('') : '') + parkedNote(result.git);
    log.info(`restore outcome: ${outcome.kind}${conversationMoved ? ' (conversation moved)' : ''} — ${r.message}${terminal}`);
    if (outcome.kind === 'applied' || conversationMoved) {
        hooks.onRestored(outcome);
    }
    if (conversationMoved) {
        hooks.onConversationRestored();
    }
    const undo = req.task === undefined ? r.undoTarget : undefined; // "undo last restore" is the workspace's
    // The server says when a reason may be asked (rarely); it is one "Why?" on this notification.
    const why = req.task === undefined && req.folder === undefined && result.askReason === true;
    const buttons = [...(undo !== undefined || conversationMoved ? [UNDO] : []), ...(why ? [WHY] : [])];
    void prompter()
        .notify(r.severity, vscode.l10n.t('Retrace: {0}', `${r.message}${terminal}`), req.task === undefined ? buttons : [])
        .then(pick => {
            if (pick === UNDO) {
                // The server undoes exactly its last restore (of that folder), whatever its mode.
                void (req.folder === undefined ? vscode.commands.executeCommand(COMMANDS.undoLastRestore) : undoLastRestore(rpc, hooks, { folder: req.folder }));
            } else if (pick === WHY) {
                void askRestoreReason(rpc, req.targetId, outcome, req.mode); // optional: never awaited
            }
        });
    return result;
}

/**
 * Send the restore; a turn of another agent that began after the dry run makes the server refuse
 * (`agentTurnRunning`, its message names agent, session and since when): the user is asked with
 * one modal and the request sent again with `whileAgentRuns: "proceed"`, or nothing happens.
 */
async function requestRestore(send: (p: RestoreParams) => Promise<RestoreResult>, params: RestoreParams): Promise<RestoreResult | undefined> {
    try {
        return await send(params);
    } catch (err) {
        if (!isAgentRefusal(err) || params.whileAgentRuns === 'proceed') {
            throw err;
        }
        const message = err instanceof Error ? err.message : String(err);
        if ((await prompter().modal(message, vscode.l10n.t('Wait for the turn to end, or restore the code anyway.'), [RESTORE_WHILE_AGENT_RUNS])) !== RESTORE_WHILE_AGENT_RUNS) {
            return undefined;
        }
        return send({ ...params, whileAgentRuns: 'proceed' });
    }
}

/** The server's `gitMoved` refusal of an undo as a question: files only or park first. */
async function askGitForUndo(err: unknown): Promise<GitChoice | undefined> {
    const message = err instanceof Error ? err.message : String(err);
    const detail = 'An undo puts files back, not git. Undo the files only (git stays as it is), or first commit the current state on a new branch retrace/parked-… so nothing is lost.';
    const pick = await prompter().modal(message, detail, [FILES_ONLY, PARK_FIRST]);
    return pick === FILES_ONLY ? 'filesOnly' : pick === PARK_FIRST ? 'parkFirst' : undefined;
}

/** Undo the most recent restore (of another folder's store: `folder`, its root); resolves to the server's answer. */
export async function undoLastRestore(rpc: Rpc, hooks: RestoreHooks, accepted: { readonly whileAgentRuns?: 'proceed'; readonly gitChoice?: GitChoice; readonly folder?: string } = {}): Promise<RestoreResult | undefined> {
    // The server's "undo the last restore" (restores its safety checkpoint, unsaved editor text
    // included); another folder's store when `folder` names one.
    const { folder, ...params } = accepted;
    const inFolder = inFolderRpc(rpc, folder);
    let result: RestoreResult | null;
    try {
        result = await inFolder.request(METHODS.restoreUndoLast, params);
    } catch (err) {
        if (isGitRefusal(err) && accepted.gitChoice === undefined) {
            // Git moved since the state the undo goes back to: ask as a restore does.
            const gitChoice = await askGitForUndo(err);
            return gitChoice === undefined ? undefined : undoLastRestore(rpc, hooks, { ...accepted, gitChoice });
        }
        if (isAgentRefusal(err)) {
            // Another agent's turn runs: the server's message names it; one modal, then again.
            const message = err instanceof Error ? err.message : String(err);
            if ((await prompter().modal(message, vscode.l10n.t('Wait for the turn to end, or undo anyway.'), [RESTORE_WHILE_AGENT_RUNS])) !== RESTORE_WHILE_AGENT_RUNS) {
                return undefined;
            }
            return undoLastRestore(rpc, hooks, { ...accepted, whileAgentRuns: 'proceed' });
        }
        // Background commands run: the server's message names them; the user says what to do.
        if (!isBackgroundRefusal(err)) {
            throw err;
        }
        const message = err instanceof Error ? err.message : String(err);
        const background: BackgroundChoice | undefined = choiceOf(await prompter().modal(message, vscode.l10n.t('Stop them and undo, undo anyway, or cancel.'), [STOP_AND_RESTORE, RESTORE_ANYWAY]));
        if (background === undefined) {
            return undefined;
        }
        result = await inFolder.request(METHODS.restoreUndoLast, { ...params, backgroundTasks: background });
    }
    const outcome = result?.outcome;
    if (outcome === undefined) {
        void prompter().notify('info', vscode.l10n.t('Retrace: there is no restore to undo.'), []);
        return undefined;
    }
    const done = outcome.kind === 'applied' || outcome.kind === 'nothingToRestore';
    const conversationMoved = done && ((result?.conversationHead ?? null) !== null || outcome.mode !== 'code' || (result?.undid ?? '').includes('conversation'));
    const r = report(outcome, vscode.l10n.t('the state before the last restore'), undefined, conversationMoved);
    // The server says what it undid ("Undid: Restore conversation to …", "Redid: …").
    const message = done && result?.undid ? `${result.undid}.` : r.message;
    log.info(`undo last restore: ${outcome.kind} — ${message}`);
    if (outcome.kind === 'applied' || conversationMoved) {
        hooks.onRestored(outcome);
    }
    if (conversationMoved) {
        hooks.onConversationRestored();
    }
    // An undo is a restore too: undoing it again is a redo.
    void prompter()
        .notify(done ? 'info' : r.severity, vscode.l10n.t('Retrace: {0}', message), done ? [REDO] : [])
        .then(pick => {
            if (pick === REDO) {
                // The redo is that folder's too (another folder's undo never redoes in the first).
                void (accepted.folder === undefined ? vscode.commands.executeCommand(COMMANDS.undoLastRestore) : undoLastRestore(rpc, hooks, { folder: accepted.folder }));
            }
        });
    return result ?? undefined;
}
