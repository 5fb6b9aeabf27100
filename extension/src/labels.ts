/**
 * How the extension names a checkpoint in one line (tree rows, pickers, dialogs, the change
 * highlight's "since" text): one owner, below every view and command that shows one.
 */
import * as vscode from 'vscode';
import type { Checkpoint } from './client/protocol';

export const STARTING_POINT = vscode.l10n.t('Starting point');

/** The first non-blank line of ``text``, at most ``max`` characters. */
export function firstLine(text: string, max = 60): string {
    const line = text.split('\n').find(l => l.trim() !== '')?.trim() ?? '';
    return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** Kinds whose own label (a tool's input summary, a mark's name…) names them best. */
const LABELLED: ReadonlySet<Checkpoint['kind']> = new Set<Checkpoint['kind']>(['tool', 'manual', 'summary', 'background']);

/** What a checkpoint without a label of its own is called, by kind. */
const KIND_LABELS: Readonly<Record<Checkpoint['kind'], (cp: Checkpoint) => string>> = {
    tool: cp => cp.tool ?? vscode.l10n.t('tool call'),
    baseline: () => STARTING_POINT,
    external: () => vscode.l10n.t('External changes'),
    safety: () => vscode.l10n.t('Before restore'),
    restore: () => vscode.l10n.t('Restored code'),
    manual: () => vscode.l10n.t('Mark'),
    summary: () => vscode.l10n.t('Summary'),
    background: () => vscode.l10n.t('Background command'),
};

/** One line, at most 60 characters (labels of shell commands can be long scripts). */
export function checkpointLabel(cp: Checkpoint): string {
    return cp.label !== '' && LABELLED.has(cp.kind) ? firstLine(cp.label) : KIND_LABELS[cp.kind](cp);
}
