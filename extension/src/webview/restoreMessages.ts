/**
 * The chat's restore messages (webview ↔ extension): restore to a prompt's restore point, edit a
 * prompt and send it again on a fork of the conversation, restore a tool call's checkpoint, and
 * the extension's answer that puts a restored-away prompt back in the input. The webview only
 * posts these; the extension checks every field again (`isRestoreWebviewMessage`) and forwards.
 */

export type ChatRestoreMode = 'code' | 'conversation' | 'both';
export type ChatPromptPoint = 'before' | 'end';

export type RestoreWebviewMessage =
    /** Restore `mode` to before the prompt (`point: before`) or to the end of its turn. */
    | { readonly type: 'restorePrompt'; readonly prompt: string; readonly text: string; readonly point: ChatPromptPoint; readonly mode: ChatRestoreMode }
    /** Fork the conversation from the prompt's parent and send `text` there. */
    | { readonly type: 'editResend'; readonly prompt: string; readonly text: string }
    /** Restore a tool call's checkpoint (the timeline's Restore commands). */
    | { readonly type: 'restoreCheckpoint'; readonly checkpoint: string; readonly mode: ChatRestoreMode };

/** Which prompt, in which session, and where relative to it: the argument of the
 * `retrace.restoreToPrompt` command that a `restorePrompt` message becomes. */
export interface PromptRef {
    readonly sessionId: string;
    /** The prompt's message id or turn id. */
    readonly prompt: string;
    readonly point: ChatPromptPoint;
    /** The prompt's words, for the dialogs. */
    readonly text: string;
}

export function isPromptRef(value: unknown): value is PromptRef {
    if (typeof value !== 'object' || value === null) {
        return false;
    }
    const v = value as Record<string, unknown>;
    return typeof v['sessionId'] === 'string' && typeof v['prompt'] === 'string' && typeof v['text'] === 'string' && (v['point'] === 'before' || v['point'] === 'end');
}

export type RestoreHostMessage =
    /** Put these words in the prompt input (a conversation restore left that prompt out). */
    { readonly type: 'setPrompt'; readonly text: string };

const MODES: readonly unknown[] = ['code', 'conversation', 'both'];
const POINTS: readonly unknown[] = ['before', 'end'];
/** A prompt's text is the user's own; anything longer than this is not one the chat sent. */
export const MAX_PROMPT_CHARS = 1_000_000;

function str(v: unknown, max = 512): v is string {
    return typeof v === 'string' && v !== '' && v.length <= max;
}

/** The field checks of each restore message, by type. */
const CHECKS: Readonly<Record<RestoreWebviewMessage['type'], (v: Record<string, unknown>) => boolean>> = {
    restorePrompt: v => str(v['prompt']) && typeof v['text'] === 'string' && v['text'].length <= MAX_PROMPT_CHARS && POINTS.includes(v['point']) && MODES.includes(v['mode']),
    editResend: v => str(v['prompt']) && str(v['text'], MAX_PROMPT_CHARS) && v['text'].trim() !== '',
    restoreCheckpoint: v => str(v['checkpoint']) && MODES.includes(v['mode']),
};

export function isRestoreWebviewMessage(value: unknown): value is RestoreWebviewMessage {
    if (typeof value !== 'object' || value === null) {
        return false;
    }
    const v = value as Record<string, unknown>;
    const type = v['type'];
    return typeof type === 'string' && Object.hasOwn(CHECKS, type) && CHECKS[type as RestoreWebviewMessage['type']](v);
}
