/**
 * The restore commands: dry run → confirm (counts, files, conflicts) → real restore → report
 * with "Undo restore". The server applies the edits through `workspace/applyEdit` and asks us to
 * save and to restore the editor layout (handled in editorState/restore.ts). A restore inside a
 * subagent's own timeline (`task`) is the same flow with `task` in every request: the server
 * restores the child's workspace copy on disk (no editor is involved, so no unsaved text of the
 * user's conflicts with it, and the user's "undo last restore" is not offered for it). Every dialog
 * renders the server's dry run (`restoreAsk.ts`); the report is the server's outcome worded
 * (`restoreDecision.ts`, `restoreNotice.ts`).
 */
import * as vscode from 'vscode';
import { withFolder } from '../paths';
import { METHODS, type RestoreResult, type Rpc, type TaskRef } from '../client/protocol';
import { askRestoreReason, WHY } from './health';
import { log } from '../logging';
import { prompter } from '../ui';
import { isAgentRefusal, RESTORE_WHILE_AGENT_RUNS } from '../views/models/agentModel';
import { parkedNote } from '../views/models/gitModel';
import { decide, modeLabel, report, type RestoreMode, type RestoreParams } from './restoreDecision';
import { askBeforeRestore } from './restoreAsk';
import { conversationMoved, restoreButtons, terminalNote } from './restoreNotice';
import { notifyRestored, type RestoreHooks } from './restoreHooks';
import { undoAgain } from './undo';

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

const UNDO = vscode.l10n.t('Undo restore');

function paramsOf(req: RestoreRequest): RestoreParams {
    return { id: req.targetId, mode: req.mode, ...(req.paths ? { paths: [...req.paths] } : {}), ...(req.task ? { task: req.task } : {}) };
}

function describe(req: RestoreRequest, p: RestoreParams): string {
    const where = req.task ? ` in subagent ${req.task.taskId}` : '';
    return `restore ${modeLabel(req.mode)} → ${req.targetId}${where} ${JSON.stringify({ force: p.force, resolutions: p.resolutions, paths: p.paths, backgroundTasks: p.backgroundTasks, gitChoice: p.gitChoice })}`;
}

/** The server's dry run. A conversation-only restore never touches files: nothing to preview or
 * confirm. A workspace restore first brings the server the editor's facts (its dirty buffers;
 * a subagent's copy is nobody's editor). */
async function preview(req: RestoreRequest, hooks: RestoreHooks, send: (p: RestoreParams) => Promise<RestoreResult>, params: RestoreParams): Promise<RestoreResult | undefined> {
    if (req.mode === 'conversation') {
        return undefined;
    }
    if (req.task === undefined) {
        await hooks.beforeRestore?.();
    }
    return send({ ...params, dryRun: true });
}

/** Run the whole flow; resolves to the server's last answer, or undefined when the user cancelled. */
export async function runRestore(rpc: Rpc, req: RestoreRequest, hooks: RestoreHooks): Promise<RestoreResult | undefined> {
    const send = req.via ?? ((p: RestoreParams) => rpc.request(METHODS.checkpointRestore, withFolder(p, req.folder)));
    const params = paramsOf(req);
    const dry = await preview(req, hooks, send, params);
    const decision = dry === undefined ? ({ kind: 'proceed' } as const) : decide(dry.outcome, req.targetLabel);
    if (decision.kind === 'nothing' || decision.kind === 'failed') {
        void prompter().notify(decision.kind === 'nothing' ? 'info' : 'error', vscode.l10n.t('Retrace: {0}', decision.message), []);
        return dry;
    }
    const finalParams = await askBeforeRestore(req, dry, decision, params);
    if (finalParams === undefined) {
        return undefined;
    }
    log.info(describe(req, finalParams));
    const result = await requestRestore(send, finalParams);
    if (result !== undefined) {
        tellRestored(rpc, req, hooks, result);
    }
    return result;
}

/** The report of a finished restore, with *Undo restore* and (rarely, when the server asks) *Why?*. */
function tellRestored(rpc: Rpc, req: RestoreRequest, hooks: RestoreHooks, result: RestoreResult): void {
    const outcome = result.outcome;
    const moved = conversationMoved(req.mode, result);
    const r = report(outcome, req.targetLabel, req.previousHead, moved);
    const terminal = terminalNote(result, moved) + parkedNote(result.git);
    log.info(`restore outcome: ${outcome.kind}${moved ? ' (conversation moved)' : ''} — ${r.message}${terminal}`);
    notifyRestored(hooks, outcome, moved);
    const buttons = restoreButtons({ inTask: req.task !== undefined, otherFolder: req.folder !== undefined, undoTarget: r.undoTarget, conversationMoved: moved, askReason: result.askReason });
    void prompter()
        .notify(r.severity, vscode.l10n.t('Retrace: {0}', `${r.message}${terminal}`), buttons.map(b => (b === 'undo' ? UNDO : WHY)))
        .then(pick => {
            if (pick === UNDO) {
                // The server undoes exactly its last restore (of that folder), whatever its mode.
                undoAgain(rpc, hooks, req.folder);
            } else if (pick === WHY) {
                void askRestoreReason(rpc, req.targetId, outcome, req.mode); // optional: never awaited
            }
        });
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
