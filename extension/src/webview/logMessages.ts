/**
 * The chat log's own messages between the webview and the extension (links, copy, a tool call's
 * inline diff, its checkpoint), joined into `HostMessage` / `WebviewMessage` by `messages.ts`.
 */
import type { TurnUsage } from './usageLine';

/** The line under a finished turn (the server's numbers). */
export interface UsageItem {
    readonly kind: 'usage';
    readonly id: string;
    readonly usage: TurnUsage;
}

export type LogHostMessage =
    /** A tool call's change, asked for by `toolDiff` (`text`: a compact unified diff, possibly cut;
     * `note`: what was left out, or why there is none). */
    { readonly type: 'toolDiff'; readonly toolCallId: string; readonly text: string; readonly note: string };

export type LogWebviewMessage =
    /** A link in the assistant's text was clicked (opened by the extension, http/https/mailto only). */
    | { readonly type: 'openLink'; readonly href: string }
    /** Copy a code block (when the webview's clipboard is refused). */
    | { readonly type: 'copy'; readonly text: string }
    /** The diff of what this tool call changed (its checkpoint against the one before). */
    | { readonly type: 'toolDiff'; readonly toolCallId: string; readonly checkpoint: string }
    /** Open this checkpoint's changes (the timeline's "Open Diff"). */
    | { readonly type: 'openCheckpoint'; readonly checkpoint: string };

/** Schemes a link may have (the webview renders only these as links; the extension checks again
 * before it opens one). */
export const LINK_SCHEMES: readonly string[] = ['http:', 'https:', 'mailto:'];

export function isAllowedLink(url: string): boolean {
    const lower = url.trim().toLowerCase();
    return LINK_SCHEMES.some(s => lower.startsWith(s));
}

const STRING_FIELDS = new Map<string, readonly string[]>([
    ['openLink', ['href']],
    ['copy', ['text']],
    ['toolDiff', ['toolCallId', 'checkpoint']],
    ['openCheckpoint', ['checkpoint']],
] satisfies [LogWebviewMessage['type'], readonly string[]][]);

export function isLogWebviewMessage(value: unknown): value is LogWebviewMessage {
    if (typeof value !== 'object' || value === null) {
        return false;
    }
    const v = value as Record<string, unknown>;
    const fields = typeof v['type'] === 'string' ? STRING_FIELDS.get(v['type']) : undefined;
    return fields !== undefined && fields.every(f => typeof v[f] === 'string');
}
