/**
 * What a timeline row offers besides restoring: its changes (Open Changes, Compare with Current,
 * Show Changes Since), the conversation summaries from or up to it, Copy Id and Export to Git.
 * A subagent's row opens its own copy's changes; another folder's row asks that folder's store.
 */
import * as vscode from 'vscode';
import { COMMANDS } from '../constants';
import { METHODS, type Rpc } from '../client/protocol';
import { openChanges } from '../diff/openDiff';
import { checkpointLabel } from '../labels';
import { prompter } from '../ui';
import { exportToGit } from './exportGit';
import type { CommandKit } from './parts';
import { serverCommand, type Registration } from './registry';

/** Summarize the conversation after (`from`) or up to (`upTo`) a checkpoint of the first folder. */
function summarize(kit: CommandKit, direction: 'from' | 'upTo'): (rpc: Rpc) => (arg: unknown) => Promise<unknown> {
    return rpc => async (arg: unknown) => {
        const cp = await kit.targets.firstFolder(rpc, arg);
        const title =
            direction === 'from'
                ? vscode.l10n.t('Retrace: summarizing the conversation after “{0}”…', checkpointLabel(cp))
                : vscode.l10n.t('Retrace: summarizing the conversation up to “{0}”…', checkpointLabel(cp));
        const summary = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title }, () => rpc.request(METHODS.conversationSummarize, { id: cp.id, direction }));
        await kit.chat.reload();
        kit.timeline.scheduleRefresh();
        void prompter().notify('info', vscode.l10n.t('Retrace: conversation summarized (checkpoint {0}).', summary.id.slice(0, 8)), []);
        return summary;
    };
}

/** The row's own changes, against its parent. */
function openDiff(kit: CommandKit): (rpc: Rpc) => (arg: unknown) => Promise<void> {
    return given => async (arg: unknown) => {
        const { cp, scope, folder } = await kit.targets.of(given, arg);
        if (cp.parent === null) {
            void prompter().notify('info', vscode.l10n.t('Retrace: “{0}” is the first checkpoint; it has nothing to compare with.', checkpointLabel(cp)), []);
            return;
        }
        const title = scope === undefined ? vscode.l10n.t('Retrace: {0}', checkpointLabel(cp)) : vscode.l10n.t('Retrace: {0} (subagent)', checkpointLabel(cp));
        await openChanges(cp.files, { id: cp.parent, label: vscode.l10n.t('before') }, { id: cp.id, label: checkpointLabel(cp) }, title, scope, folder);
    };
}

/** The row against the files as they are now (a subagent's: its copy). */
function compareWithCurrent(kit: CommandKit): (rpc: Rpc) => (arg: unknown) => Promise<void> {
    return given => async (arg: unknown) => {
        const { cp, scope, folder, rpc } = await kit.targets.of(given, arg);
        const diff = await rpc.request(METHODS.checkpointDiff, { from: cp.id, ...(scope === undefined ? {} : { task: scope }) });
        const current = scope === undefined ? vscode.l10n.t('current') : vscode.l10n.t("the subagent's copy");
        const title = vscode.l10n.t('Retrace: {0} ↔ {1}', checkpointLabel(cp), current);
        await openChanges(diff.files, { id: cp.id, label: checkpointLabel(cp) }, { id: 'current', label: current }, title, scope, folder);
    };
}

export function checkpointCommands(kit: CommandKit): Registration[] {
    const { targets, highlighter } = kit;
    return [
        serverCommand(COMMANDS.summarizeFrom, summarize(kit, 'from')),
        serverCommand(COMMANDS.summarizeUpTo, summarize(kit, 'upTo')),
        serverCommand(COMMANDS.openDiff, openDiff(kit)),
        serverCommand(COMMANDS.compareWithCurrent, compareWithCurrent(kit)),
        serverCommand(COMMANDS.copyId, rpc => async (arg: unknown) => {
            const { cp } = await targets.of(rpc, arg);
            await vscode.env.clipboard.writeText(cp.id);
            return cp.id;
        }),
        serverCommand(COMMANDS.exportGit, given => async (arg: unknown) => {
            const { cp, rpc } = await targets.row(given, arg); // another folder's row: that folder's repository
            return exportToGit(rpc, cp);
        }),
        serverCommand(COMMANDS.showChangesSince, rpc => async (arg: unknown) => {
            const cp = await targets.firstFolder(rpc, arg);
            highlighter.setScope({ kind: 'since', checkpointId: cp.id });
            void prompter().notify('info', vscode.l10n.t('Retrace: highlighting changes since “{0}”.', checkpointLabel(cp)), []);
        }),
    ];
}
