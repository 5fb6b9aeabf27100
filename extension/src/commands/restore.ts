/**
 * The restore commands: dry run → confirm (counts, files, conflicts) → real restore → report
 * with "Undo restore". The server applies the edits through `workspace/applyEdit` and asks us to
 * save and to restore the editor layout (handled in editorState/restore.ts).
 */
import * as vscode from 'vscode';
import { COMMANDS } from '../constants';
import { METHODS, type PlannedFile, type RestoreOutcome, type RestoreParams, type RestoreResult, type Rpc } from '../client/protocol';
import { mergePreviews } from '../diff/mergePreview';
import { log } from '../logging';
import { prompter } from '../ui';
import { decide, modeLabel, report, resolve, type ConflictChoice, type RestoreMode } from './restoreDecision';

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
}

export interface RestoreHooks {
    /** After a restore that moved the conversation. */
    onConversationRestored(): void;
    /** After any applied restore. */
    onRestored(outcome: RestoreOutcome): void;
}

const MERGE = 'Open 3-way merge';
const APPLY_MERGE = 'Apply merged text';
const OVERWRITE = 'Overwrite';
const SKIP = 'Skip conflicting files';
const RESTORE = 'Restore';

async function showMerges(conflicts: readonly PlannedFile[]): Promise<void> {
    const folder = vscode.workspace.workspaceFolders?.[0];
    for (const f of conflicts) {
        const merged = f.conflict?.mergedText;
        if (merged === null || merged === undefined || folder === undefined) {
            continue;
        }
        const current = vscode.Uri.joinPath(folder.uri, f.path);
        await vscode.commands.executeCommand('vscode.diff', current, mergePreviews.add(f.path, merged), `${f.path} (current ↔ merged)`, { preview: false });
    }
    log.info(`opened merge previews for ${conflicts.length} conflicting file(s)`);
}

async function askConflict(message: string, detail: string, conflicts: readonly PlannedFile[], mergeable: readonly string[]): Promise<ConflictChoice | undefined> {
    const ui = prompter();
    const first = await ui.modal(message, detail, mergeable.length > 0 ? [MERGE, OVERWRITE, SKIP] : [OVERWRITE, SKIP]);
    if (first === MERGE) {
        await showMerges(conflicts);
        const second = await ui.modal(
            `Apply the merged text to ${mergeable.length} file(s)?`,
            `Files whose merge failed are skipped.\n${mergeable.join('\n')}`,
            [APPLY_MERGE, OVERWRITE, SKIP],
        );
        return second === APPLY_MERGE ? 'merge' : second === OVERWRITE ? 'overwrite' : second === SKIP ? 'skip' : undefined;
    }
    return first === OVERWRITE ? 'overwrite' : first === SKIP ? 'skip' : undefined;
}

/** Run the whole flow; resolves to the server's last answer, or undefined when the user cancelled. */
export async function runRestore(rpc: Rpc, req: RestoreRequest, hooks: RestoreHooks): Promise<RestoreResult | undefined> {
    const params: RestoreParams = { id: req.targetId, mode: req.mode, ...(req.paths ? { paths: [...req.paths] } : {}) };
    // A conversation-only restore never touches files: nothing to preview or confirm.
    const dry = req.mode === 'conversation' ? undefined : await rpc.request(METHODS.checkpointRestore, { ...params, dryRun: true });
    const decision = dry === undefined ? ({ kind: 'proceed' } as const) : decide(dry.outcome, req.targetLabel);
    let finalParams: RestoreParams;
    switch (decision.kind) {
        case 'nothing':
            void prompter().notify('info', `Retrace: ${decision.message}`, []);
            return dry;
        case 'failed':
            void prompter().notify('error', `Retrace: ${decision.message}`, []);
            return dry;
        case 'proceed':
            finalParams = resolve(params, undefined, [], []);
            break;
        case 'confirm': {
            if (req.confirmOverwrite) {
                const pick = await prompter().modal(decision.message, decision.detail, [RESTORE]);
                if (pick !== RESTORE) {
                    return undefined;
                }
            }
            finalParams = resolve(params, undefined, [], []);
            break;
        }
        case 'conflict': {
            const choice = await askConflict(decision.message, decision.detail, decision.conflicts, decision.mergeable);
            if (choice === undefined) {
                return undefined;
            }
            finalParams = resolve(params, choice, decision.conflicts, decision.mergeable);
            break;
        }
    }
    log.info(`restore ${modeLabel(req.mode)} → ${req.targetId} ${JSON.stringify({ force: finalParams.force, resolutions: finalParams.resolutions, paths: finalParams.paths })}`);
    const result = await rpc.request(METHODS.checkpointRestore, finalParams);
    const outcome = result.outcome;
    const conversationMoved = req.mode !== 'code' && result.conversationHead !== null && outcome.kind !== 'failed' && outcome.kind !== 'conflict';
    const r = report(outcome, req.targetLabel, req.previousHead, conversationMoved);
    log.info(`restore outcome: ${outcome.kind}${conversationMoved ? ' (conversation moved)' : ''} — ${r.message}`);
    if (outcome.kind === 'applied' || conversationMoved) {
        hooks.onRestored(outcome);
    }
    if (conversationMoved) {
        hooks.onConversationRestored();
    }
    const undo = r.undoTarget;
    void prompter()
        .notify(r.severity, `Retrace: ${r.message}`, undo !== undefined ? ['Undo restore'] : [])
        .then(pick => {
            if (pick === 'Undo restore' && undo !== undefined) {
                void vscode.commands.executeCommand(COMMANDS.undoRestore, undo, req.mode);
            }
        });
    return result;
}
