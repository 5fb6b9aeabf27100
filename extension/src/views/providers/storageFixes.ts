/**
 * The two fixes a storage alert offers, shared by the alert (`commands/health.ts`) and the Health
 * panel's banner (`healthPanel.ts`): collect garbage now, open the retention settings.
 */
import * as vscode from 'vscode';
import { COMMANDS } from '../../constants';

/** The alert's first fix (also the Health panel's banner button). */
export async function runGarbageCollection(): Promise<void> {
    await vscode.commands.executeCommand(COMMANDS.collectGarbage);
}

/** The alert's second fix (also the Health panel's banner button). */
export async function openRetentionSettings(): Promise<void> {
    await vscode.commands.executeCommand('workbench.action.openSettings', 'retrace.retention');
}
