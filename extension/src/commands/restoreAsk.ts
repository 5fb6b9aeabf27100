/**
 * The questions before a restore, each rendering the server's dry-run answer (`decide` in
 * `restoreDecision.ts` words it): the plan (a confirmation, or the conflict dialog with its 3-way
 * merge previews), running background commands, another agent's running turn, git that moved or
 * side effects outside the workspace. Each question takes the restore parameters so far and
 * returns them with the user's answer, or `undefined` when the user cancelled.
 */
import * as vscode from 'vscode';
import { type PlannedFile, type RestoreResult, type TaskRef } from '../client/protocol';
import { checkpointUri } from '../diff/contentProvider';
import { mergePreviews } from '../diff/mergePreview';
import { log } from '../logging';
import { prompter } from '../ui';
import { choiceOf, restoreQuestion } from '../views/models/backgroundModel';
import { agentTurnQuestion, RESTORE_WHILE_AGENT_RUNS } from '../views/models/agentModel';
import { gitAnswer, gitQuestion, type GitQuestion } from '../views/models/gitModel';
import { MERGE_LABEL, OVERWRITE_LABEL, SKIP_LABEL, conflictButtons, resolve, type Confirmation, type ConflictChoice, type RestoreMode, type RestoreParams } from './restoreDecision';

const APPLY_MERGE = vscode.l10n.t('Apply merged text');
export const RESTORE = vscode.l10n.t('Restore');

/** What the questions need to know of the restore. */
export interface AskContext {
    readonly mode: RestoreMode;
    readonly targetLabel: string;
    /** Ask before overwriting (false for an undo: the user just asked for exactly this). */
    readonly confirmOverwrite: boolean;
    readonly task?: TaskRef;
    readonly folder?: string;
}

/** One question: the parameters so far → with the user's answer, or undefined (cancelled). */
type Question = (params: RestoreParams) => Promise<RestoreParams | undefined>;

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

function choiceOfLabel(pick: string | undefined): ConflictChoice | undefined {
    return pick === APPLY_MERGE ? 'merge' : pick === OVERWRITE_LABEL ? 'overwrite' : pick === SKIP_LABEL ? 'skip' : undefined;
}

async function askConflict(decision: Extract<Confirmation, { kind: 'conflict' }>, ctx: AskContext): Promise<ConflictChoice | undefined> {
    const ui = prompter();
    const first = await ui.modal(decision.message, decision.detail, conflictButtons(decision.mergeable.length > 0));
    if (first !== MERGE_LABEL) {
        return choiceOfLabel(first);
    }
    await showMerges(decision.conflicts, ctx.task, ctx.folder);
    const second = await ui.modal(
        vscode.l10n.t('Apply the merged text to {0} file(s)?', decision.mergeable.length),
        vscode.l10n.t('Files whose merge failed are skipped.\n{0}', decision.mergeable.join('\n')),
        [APPLY_MERGE, SKIP_LABEL, OVERWRITE_LABEL],
    );
    return choiceOfLabel(second);
}

/** The plan's question: none, a confirmation (unless git's modal asks instead), or the conflicts. */
function askPlan(decision: Confirmation, ctx: AskContext, outside: GitQuestion | undefined): Question {
    return async params => {
        if (decision.kind === 'conflict') {
            const choice = await askConflict(decision, ctx);
            return choice === undefined ? undefined : resolve(params, choice, decision.conflicts, decision.mergeable);
        }
        // Git moved or side effects to name: their one modal asks instead (with these words).
        if (decision.kind === 'confirm' && ctx.confirmOverwrite && outside === undefined) {
            const pick = await prompter().modal(decision.message, decision.detail, [RESTORE]);
            return pick === RESTORE ? resolve(params, undefined, [], []) : undefined;
        }
        return resolve(params, undefined, [], []);
    };
}

/** Running background commands may overwrite what the restore writes: the user says what to do. */
function askBackground(dry: RestoreResult | undefined): Question {
    return async params => {
        const running = dry?.backgroundTasks ?? [];
        if (running.length === 0) {
            return params;
        }
        const q = restoreQuestion(running);
        const background = choiceOf(await prompter().modal(q.message, q.detail, q.buttons));
        return background === undefined ? undefined : { ...params, backgroundTasks: background };
    };
}

/** Another agent's running turn (Claude Code, Gemini CLI): one modal, the user must act. */
function askAgents(dry: RestoreResult | undefined): Question {
    return async params => {
        const agents = dry?.agentTurns ?? [];
        if (agents.length === 0) {
            return params;
        }
        const q = agentTurnQuestion(agents);
        return (await prompter().modal(q.message, q.detail, q.buttons)) === RESTORE_WHILE_AGENT_RUNS ? { ...params, whileAgentRuns: 'proceed' } : undefined;
    };
}

/** Git moved since the target, or commands since then touched the world outside: one modal
 * (carrying the confirmation's words when it stands in for it). */
function askOutside(outside: GitQuestion | undefined, decision: Confirmation): Question {
    return async params => {
        if (outside === undefined) {
            return params;
        }
        const what = decision.kind === 'confirm' ? `${decision.message}\n${decision.detail}\n\n` : '';
        const answer = gitAnswer(outside, await prompter().modal(outside.message, `${what}${outside.detail}`, outside.buttons));
        if (answer === 'cancel') {
            return undefined;
        }
        return answer === 'proceed' ? params : { ...params, gitChoice: answer };
    };
}

/**
 * Every question before the real restore, in order, from the server's dry run (`dry`: none for a
 * conversation-only restore) and its decision; the real restore's parameters, or undefined when
 * the user cancelled one.
 */
export async function askBeforeRestore(ctx: AskContext, dry: RestoreResult | undefined, decision: Confirmation, params: RestoreParams): Promise<RestoreParams | undefined> {
    const outside = dry === undefined ? undefined : gitQuestion(dry, ctx.targetLabel);
    const questions = [askPlan(decision, ctx, outside), askBackground(dry), askAgents(dry), askOutside(outside, decision)];
    let answered: RestoreParams | undefined = params;
    for (const question of questions) {
        answered = await question(answered);
        if (answered === undefined) {
            return undefined;
        }
    }
    return answered;
}
