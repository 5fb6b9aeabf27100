/**
 * The commands of a `task` row (a subagent): "Apply Subagent Result Again" (`retrace/tasks/apply`:
 * the server merges the child's net change into the workspace again as one checkpoint and says
 * what it wrote and what conflicted; a modal only when a conflict needs the user's attention) and
 * "Discard Subagent Timeline" (`retrace/tasks/discard` after a modal confirmation: the child's
 * workspace copy and timeline are deleted), and "Resume Subagent" on a child the server would
 * resume (`retrace/tasks/resume`: it runs again in its own copy; its progress comes as
 * `taskProgress` events, and its result is merged when it ends well). The server decides; this
 * only asks and reports.
 */
import * as vscode from 'vscode';
import { COMMANDS } from '../constants';
import { METHODS, type TaskRef } from '../client/protocol';
import { log } from '../logging';
import { selectedRow } from '../views/providers/selection';
import type { TimelineProvider } from '../views/providers/timeline/provider';
import type { CheckpointNode, SubagentNode } from '../views/models/timelineModel';
import { serverCommand, type Registration } from './registry';
import { prompter } from '../ui';

const DISCARD = vscode.l10n.t('Discard');

interface Target {
    readonly ref: TaskRef;
    readonly description: string;
}

function isRef(value: unknown): value is TaskRef {
    const v = value as { sessionId?: unknown; taskId?: unknown } | null;
    return typeof v === 'object' && v !== null && typeof v.sessionId === 'string' && typeof v.taskId === 'string';
}

/** The subagent of a task row (the clicked node, the selected row, or a `TaskRef` from tests). */
async function targetOf(timeline: TimelineProvider, arg: unknown): Promise<Target> {
    const node = arg as Partial<CheckpointNode> | Partial<SubagentNode> | undefined;
    if ((node?.kind === 'checkpoint' || node?.kind === 'subagent') && node.task !== undefined) {
        return { ref: node.task.ref, description: node.task.description };
    }
    if (isRef(arg)) {
        return { ref: { sessionId: arg.sessionId, taskId: arg.taskId }, description: arg.taskId };
    }
    const selected = await selectedRow(timeline.view, (n): n is CheckpointNode | SubagentNode => (n.kind === 'checkpoint' || n.kind === 'subagent') && n.task !== undefined);
    if (selected?.task !== undefined) {
        return { ref: selected.task.ref, description: selected.task.description };
    }
    throw new Error(vscode.l10n.t('select a subagent (task) row in the Retrace timeline first'));
}

/** `onWorkspaceChanged`: after an apply wrote files (change highlights follow). */
export function taskCommands(timeline: TimelineProvider, onWorkspaceChanged: () => void): Registration[] {
    return [applyAgain(timeline, onWorkspaceChanged), resume(timeline), discard(timeline)];
}

function applyAgain(timeline: TimelineProvider, onWorkspaceChanged: () => void): Registration {
    return serverCommand(COMMANDS.taskApplyAgain, rpc => async (arg: unknown) => {
        const { ref, description } = await targetOf(timeline, arg);
        const result = await rpc.request(METHODS.taskApply, ref);
        log.info(`subagent ${ref.taskId} applied again: wrote ${JSON.stringify(result.written)}, conflicts ${JSON.stringify(result.conflicts)}`);
        timeline.scheduleRefresh();
        void timeline.reloadTask(ref);
        if (result.checkpoint !== null) {
            onWorkspaceChanged();
        }
        const wrote = result.written.length === 0 ? vscode.l10n.t('nothing was written') : vscode.l10n.t('wrote {0}', result.written.join(', '));
        if (result.conflicts.length > 0) {
            // Conflicting files were left as they are: the user has to look at them.
            await prompter().modal(
                result.conflicts.length === 1
                    ? vscode.l10n.t('Subagent “{0}”: 1 file not applied (conflicts); {1}.', description, wrote)
                    : vscode.l10n.t('Subagent “{0}”: {1} files not applied (conflicts); {2}.', description, result.conflicts.length, wrote),
                result.conflicts.map(c => `${c.path}: ${c.reason}`).join('\n'),
                [],
            );
        } else {
            void prompter().notify('info', vscode.l10n.t("Retrace: applied the subagent “{0}”'s result: {1}.", description, wrote), []);
        }
        return result;
    });
}

function resume(timeline: TimelineProvider): Registration {
    return serverCommand(COMMANDS.taskResume, rpc => async (arg: unknown) => {
        const { ref, description } = await targetOf(timeline, arg);
        const result = await rpc.request(METHODS.taskResume, ref);
        log.info(`subagent ${ref.taskId} resumed: ${result.started}`);
        void timeline.reloadTask(ref);
        void prompter().notify('info', vscode.l10n.t('Retrace: the subagent “{0}” runs again in its own copy; its result is merged when it ends.', description), []);
        return result;
    });
}

function discard(timeline: TimelineProvider): Registration {
    return serverCommand(COMMANDS.taskDiscard, rpc => async (arg: unknown) => {
        const { ref, description } = await targetOf(timeline, arg);
        const pick = await prompter().modal(
            vscode.l10n.t("Discard the subagent “{0}”'s timeline?", description),
            vscode.l10n.t('Its workspace copy and its own checkpoints are deleted. What it merged into your workspace stays (restore the parent to before its task call to take that back).'),
            [DISCARD],
        );
        if (pick !== DISCARD) {
            return undefined;
        }
        const result = await rpc.request(METHODS.taskDiscard, ref);
        log.info(`subagent ${ref.taskId} discarded: ${result.discarded}`);
        await timeline.forgetTask(ref);
        void prompter().notify('info', vscode.l10n.t("Retrace: discarded the subagent “{0}”'s timeline.", description), []);
        return result;
    });
}
