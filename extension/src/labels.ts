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

/** One line, at most 60 characters (labels of shell commands can be long scripts). */
export function checkpointLabel(cp: Checkpoint): string {
    const labelled = cp.kind === 'tool' || cp.kind === 'manual' || cp.kind === 'summary' || cp.kind === 'background';
    if (cp.label !== '' && labelled) {
        return firstLine(cp.label);
    }
    switch (cp.kind) {
        case 'tool':
            return cp.tool ?? vscode.l10n.t('tool call');
        case 'baseline':
            return STARTING_POINT;
        case 'external':
            return vscode.l10n.t('External changes');
        case 'safety':
            return vscode.l10n.t('Before restore');
        case 'restore':
            return vscode.l10n.t('Restored code');
        case 'manual':
            return vscode.l10n.t('Mark');
        case 'summary':
            return vscode.l10n.t('Summary');
        case 'background':
            return vscode.l10n.t('Background command');
    }
}
