/**
 * The chat webview's own message protocol (extension ↔ webview via postMessage). Local to the
 * extension: the server's protocol types never reach the webview directly.
 */

import { isLogWebviewMessage, type LogHostMessage, type LogWebviewMessage, type UsageItem } from './logMessages';
import type { EditorSnapshot } from './composerModel';
import { isRestoreWebviewMessage, type RestoreHostMessage, type RestoreWebviewMessage } from './restoreMessages';
import { WEBVIEW_TEXT, type WebviewText } from './strings';

export type ToolStatus = 'running' | 'ok' | 'error' | 'denied' | 'interrupted' | 'cancelled';
export type Decision = 'allow' | 'deny' | 'allowAlways';

export type ChatItem =
    /** `failed`: the turn ended without finishing (error, cancel, crash); the chat offers Retry. */
    /** `prompt`: the prompt's message or turn id (its restore point: Restore and Edit and resend). */
    | { readonly kind: 'user'; readonly id: string; readonly text: string; readonly failed?: string; readonly attachments?: readonly string[]; readonly prompt?: string }
    | { readonly kind: 'assistant'; readonly id: string; readonly text: string }
    /** `checkpoint`: the checkpoint the call ended in (its inline diff and link). */
    | { readonly kind: 'tool'; readonly id: string; readonly tool: string; readonly summary: string; readonly status: ToolStatus; readonly output: string; readonly checkpoint?: string }
    | UsageItem
    | PermissionItem
    | { readonly kind: 'error'; readonly id: string; readonly text: string }
    | { readonly kind: 'notice'; readonly id: string; readonly text: string };

/** What a permission prompt shows inline (the server's review; its complete text stays in the extension). */
export interface PermissionReviewView {
    readonly title: string;
    readonly preview: string;
    readonly marker: string | null;
    readonly truncated: boolean;
    /** A command's preview cut by the server into the commands it runs (absent: show `preview`). */
    readonly parts?: readonly CommandPartView[] | null;
    /** The server's line above a compound command (`This command runs 2 commands in 2 parts.`). */
    readonly notice?: string | null;
}

/** One part of a command between control operators, as the server split it. */
export interface CommandPartView {
    readonly spans: readonly { readonly text: string; readonly kind: string }[];
    readonly operator: string | null;
}

export interface PermissionItem {
    readonly kind: 'permission';
    readonly id: string;
    readonly tool: string;
    readonly summary: string;
    readonly decision: Decision | undefined;
    readonly review?: PermissionReviewView;
}

/** Commands a banner button may run (the host runs nothing else from the webview). */
export const BANNER_COMMANDS = ['retrace.chooseModelProvider', 'retrace.setApiKey', 'retrace.tryDemo', 'workbench.trust.manage'] as const;
export type BannerCommand = (typeof BANNER_COMMANDS)[number];

/** A note above the transcript: what this window's Retrace can and cannot do, and the fix. */
export interface Banner {
    readonly kind: 'demo' | 'noKey' | 'untrusted';
    readonly text: string;
    readonly actions: readonly { readonly label: string; readonly command: BannerCommand }[];
}

export type ModelModeName = 'live' | 'demo' | 'noKey';

/** The banner for a model mode (undefined: not known yet) and workspace trust; null for none. */
export function chatBanner(mode: ModelModeName | undefined, trusted: boolean, text: WebviewText = WEBVIEW_TEXT): Banner | null {
    if (!trusted) {
        return {
            kind: 'untrusted',
            text: text.bannerUntrusted,
            actions: [{ label: text.bannerManageTrust, command: 'workbench.trust.manage' }],
        };
    }
    if (mode === 'demo') {
        return { kind: 'demo', text: text.bannerDemo, actions: [{ label: text.bannerChooseModel, command: 'retrace.chooseModelProvider' }] };
    }
    if (mode === 'noKey') {
        return {
            kind: 'noKey',
            text: text.bannerNoKey,
            actions: [
                { label: text.bannerChooseModel, command: 'retrace.chooseModelProvider' },
                { label: text.bannerTryDemo, command: 'retrace.tryDemo' },
            ],
        };
    }
    return null;
}

export type HostMessage =
    /** Replace everything: the newest items, how many earlier ones are not sent, where to scroll. */
    | {
          readonly type: 'reset';
          readonly items: readonly ChatItem[];
          readonly earlier: number;
          readonly scroll: 'end' | 'start';
          readonly running: boolean;
          readonly session: string | undefined;
      }
    /** Insert or replace (same id) one item. */
    | { readonly type: 'upsert'; readonly item: ChatItem }
    | { readonly type: 'running'; readonly running: boolean }
    | { readonly type: 'serverState'; readonly accepting: boolean; readonly message: string }
    | { readonly type: 'banner'; readonly banner: Banner | null }
    | LogHostMessage
    | RestoreHostMessage
    /** The active editor as the input's context chip shows it (undefined: none, or switched off). */
    | { readonly type: 'context'; readonly editor: EditorSnapshot | undefined }
    /** The `@` completion's answer to the `files` request with the same id. */
    | { readonly type: 'files'; readonly requestId: number; readonly paths: readonly string[] };

export type WebviewMessage =
    | { readonly type: 'ready' }
    /** `includeEditor: false`: the user switched the editor-context chip off for this prompt. */
    | { readonly type: 'prompt'; readonly text: string; readonly includeEditor?: boolean }
    /** The `@` completion: workspace files matching `query`. */
    | { readonly type: 'files'; readonly requestId: number; readonly query: string }
    /** Send a failed turn's prompt again (only ever on the user's click). */
    | { readonly type: 'retry'; readonly text: string; readonly of?: string }
    | { readonly type: 'cancel' }
    | { readonly type: 'newSession' }
    /** "Show earlier messages": send a longer tail of the conversation. */
    | { readonly type: 'showEarlier' }
    | { readonly type: 'permission'; readonly requestId: string; readonly decision: Decision }
    /** "Show all": open the complete text of a permission prompt. */
    | { readonly type: 'showReview'; readonly requestId: string }
    /** A banner button. */
    | { readonly type: 'command'; readonly command: BannerCommand }
    | LogWebviewMessage
    | RestoreWebviewMessage;

type Fields = { readonly [k: string]: unknown };
const DECISIONS: readonly unknown[] = ['allow', 'deny', 'allowAlways'] satisfies readonly Decision[];
const isString = (v: unknown): v is string => typeof v === 'string';
const optional =
    (check: (v: unknown) => boolean) =>
    (v: unknown): boolean =>
        v === undefined || check(v);

/** The chat's own messages (the log's and the restore's are checked by their modules) by type:
 * what each must hold beyond its type. A message failing its check is logged and ignored. */
const CHAT_MESSAGE_CHECKS: Readonly<Record<Exclude<WebviewMessage, LogWebviewMessage | RestoreWebviewMessage>['type'], (v: Fields) => boolean>> = {
    ready: () => true,
    prompt: v => isString(v['text']) && optional(x => typeof x === 'boolean')(v['includeEditor']),
    retry: v => isString(v['text']) && optional(isString)(v['of']),
    cancel: () => true,
    newSession: () => true,
    showEarlier: () => true,
    permission: v => isString(v['requestId']) && DECISIONS.includes(v['decision']),
    showReview: v => isString(v['requestId']),
    files: v => Number.isSafeInteger(v['requestId']) && isString(v['query']),
    command: v => (BANNER_COMMANDS as readonly unknown[]).includes(v['command']),
};

export function isWebviewMessage(value: unknown): value is WebviewMessage {
    if (typeof value !== 'object' || value === null || !('type' in value)) {
        return false;
    }
    if (isLogWebviewMessage(value) || isRestoreWebviewMessage(value)) {
        return true;
    }
    const v = value as Fields;
    const type = v['type'];
    return typeof type === 'string' && Object.hasOwn(CHAT_MESSAGE_CHECKS, type) && CHAT_MESSAGE_CHECKS[type as keyof typeof CHAT_MESSAGE_CHECKS](v);
}
