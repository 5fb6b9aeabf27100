/**
 * What a restore's caller refreshes afterwards (the timeline, the chat, change highlights): the
 * hooks every restore flow (`restore.ts`, `undo.ts`, hunks, file history) calls the same way.
 */
import type { RestoreOutcome } from '../client/protocol';

export interface RestoreHooks {
    /** Before a workspace restore asks the server anything (its dry run, an undo): tell it what
     * only the editor knows now (which buffers are dirty), so it decides conflicts from fresh facts. */
    beforeRestore?(): Promise<void>;
    /** After a restore that moved the conversation. */
    onConversationRestored(): void;
    /** After any applied restore. */
    onRestored(outcome: RestoreOutcome): void;
}

/** Call the hooks a finished restore (or undo) owes its caller. */
export function notifyRestored(hooks: RestoreHooks, outcome: RestoreOutcome, conversationMoved: boolean): void {
    if (outcome.kind === 'applied' || conversationMoved) {
        hooks.onRestored(outcome);
    }
    if (conversationMoved) {
        hooks.onConversationRestored();
    }
}
