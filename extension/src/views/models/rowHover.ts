/**
 * The words of a timeline row's hover, as Markdown (pure: of `vscode` only `l10n`; table-tested):
 * what the row did, where (a subagent's copy), why it is safe or not, the server's notes (terminal,
 * git, side effects, why no conversation restore). `providers/timeline/items.ts` appends the diff
 * preview it asks the row's store for.
 */
import * as vscode from 'vscode';
import { firstLine } from '../../labels';
import { codeOnlyReason } from './agentModel';
import { rowMarks } from './gitModel';
import { recoverabilityNote, safetyNote } from './timelineLook';
import type { CheckpointNode } from './timelineModel';

/** Markdown's special characters escaped: the server's words are shown as text. */
export function escapeMd(text: string): string {
    return text.replace(/[\\`*_{}[\]()#+\-.!|<>]/g, c => `\\${c}`);
}

/** What a hover section draws on: the row, its look's icon, its time as the user reads it. */
export interface HoverFacts {
    readonly node: CheckpointNode;
    readonly icon: string;
    readonly when: string;
}

/** A paragraph, or nothing for empty text. */
function para(text: string | undefined): string {
    return text === undefined || text === '' ? '' : `${text}\n\n`;
}

const SECTIONS: readonly ((f: HoverFacts) => string)[] = [
    ({ node, icon }) => para(`$(${icon}) **${escapeMd(node.row.title)}**${node.isHead ? vscode.l10n.t(' — you are here') : ''}`),
    ({ node }) => escapeMd(safetyNote(node)),
    ({ node: { checkpoint: cp }, when }) => para(`${cp.kind}${cp.tool ? ` · ${escapeMd(cp.tool)}` : ''} · ${when} · \`${cp.id.slice(0, 12)}\``),
    ({ node }) => para(node.scope && vscode.l10n.t("In the subagent's own copy ({0})", `\`${escapeMd(node.scope.taskId)}\``)),
    ({ node: { task } }) =>
        para(task && `Subagent “${escapeMd(task.description)}”: **${escapeMd(task.status ?? 'unknown')}**${task.conflicts.length > 0 ? ` — conflicts: ${task.conflicts.map(escapeMd).join(', ')}` : ''}`),
    ({ node }) => para(promptLine(node)),
    ({ node }) => para(node.toolStatus === undefined ? undefined : vscode.l10n.t('Tool call: {0}', `**${escapeMd(node.toolStatus)}**`)),
    ({ node }) => para(escapeMd(node.row.summary)),
    ({ node }) => para(escapeMd(node.row.terminal ?? '')), // the server's words: cwd and env changes
    ({ node }) => rowMarks(node.row).hover.map(line => para(escapeMd(line))).join(''), // the server's words: git's move, side effects
    ({ node }) => para(codeOnlyLine(node)),
    ({ node }) => para(recoverabilityNote(node.checkpoint) && `**${escapeMd(recoverabilityNote(node.checkpoint))}**`),
];

/** The prompt that led to the row (a subagent's: its brief), first line, in italics. */
function promptLine(node: CheckpointNode): string | undefined {
    if (node.prompt === undefined || node.prompt === '') {
        return undefined;
    }
    const quoted = `_${escapeMd(firstLine(node.prompt, 200))}_`;
    return node.scope === undefined ? vscode.l10n.t('Prompt: {0}', quoted) : vscode.l10n.t('Brief: {0}', quoted);
}

/** The server's reason a conversation restore is not offered. */
function codeOnlyLine(node: CheckpointNode): string | undefined {
    const reason = codeOnlyReason(node.row);
    return reason === undefined ? undefined : vscode.l10n.t('Conversation restore not offered: {0}', escapeMd(reason));
}

/** The hover's Markdown before the diff preview. */
export function rowHoverText(facts: HoverFacts): string {
    return SECTIONS.map(section => section(facts)).join('');
}
