/**
 * What the notification after a restore or an undo offers, decided from the server's answer.
 * Pure (no `vscode`): `restore.ts` and `undo.ts` render these decisions.
 *
 * Rules: the conversation moved when a code-and/or-conversation restore moved its head (or left
 * out the first prompt) and the outcome is not a refusal; *Undo restore* is offered after a
 * workspace restore that can be undone or moved the conversation; *Why?* only when the server
 * asks for a reason and the restore was the first folder's; a subagent's restore offers nothing.
 */
import type { RestoreMode } from './restoreDecision';
import type { RestoreResult } from '../client/protocol';

/** A button of the notification after a restore. */
export type RestoreButton = 'undo' | 'why';

/** Did this restore move the conversation? (A restore to before the first prompt leaves no
 * head, and says which prompt it left out.) */
export function conversationMoved(mode: RestoreMode, result: Pick<RestoreResult, 'outcome' | 'conversationHead' | 'restoredPrompt'>): boolean {
    const moved = result.conversationHead !== null || (result.restoredPrompt ?? null) !== null;
    return mode !== 'code' && moved && result.outcome.kind !== 'failed' && result.outcome.kind !== 'conflict';
}

/** Did this undo move the conversation? (The server words what it undid: "Undid: Restore conversation to …".) */
export function undoMovedConversation(result: Pick<RestoreResult, 'outcome' | 'conversationHead' | 'undid'>): boolean {
    const done = result.outcome.kind === 'applied' || result.outcome.kind === 'nothingToRestore';
    return done && (result.conversationHead !== null || result.outcome.mode !== 'code' || (result.undid ?? '').includes('conversation'));
}

/** What of the agent's terminal could not come back as recorded (secret variables), as the server says. */
export function terminalNote(result: Pick<RestoreResult, 'terminalNotes'>, moved: boolean): string {
    return moved ? result.terminalNotes.map(n => ` Terminal: ${n}.`).join('') : '';
}

export interface ButtonFacts {
    /** The restore was inside a subagent's own timeline. */
    readonly inTask: boolean;
    /** The restore was another folder's (not the agent's first folder). */
    readonly otherFolder: boolean;
    /** The report's undo target (undefined: nothing to undo). */
    readonly undoTarget: string | undefined;
    readonly conversationMoved: boolean;
    /** The server's `askReason`. */
    readonly askReason: boolean;
}

/** The buttons of the notification after a restore, in order. */
export function restoreButtons(facts: ButtonFacts): RestoreButton[] {
    if (facts.inTask) {
        return []; // "undo last restore" is the workspace's; a reason is asked for the workspace only
    }
    const undo = facts.undoTarget !== undefined || facts.conversationMoved;
    const why = !facts.otherFolder && facts.askReason;
    return [...(undo ? (['undo'] as const) : []), ...(why ? (['why'] as const) : [])];
}
