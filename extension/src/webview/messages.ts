/**
 * The chat webview's own message protocol (extension ↔ webview via postMessage). Local to the
 * extension: the server's protocol types never reach the webview directly.
 */

export type ToolStatus = 'running' | 'ok' | 'error' | 'denied' | 'interrupted' | 'cancelled';
export type Decision = 'allow' | 'deny' | 'allowAlways';

export type ChatItem =
    /** `failed`: the turn ended without finishing (error, cancel, crash); the chat offers Retry. */
    | { readonly kind: 'user'; readonly id: string; readonly text: string; readonly failed?: string }
    | { readonly kind: 'assistant'; readonly id: string; readonly text: string }
    | { readonly kind: 'tool'; readonly id: string; readonly tool: string; readonly summary: string; readonly status: ToolStatus; readonly output: string }
    | PermissionItem
    | { readonly kind: 'error'; readonly id: string; readonly text: string }
    | { readonly kind: 'notice'; readonly id: string; readonly text: string };

/** What a permission prompt shows inline (the server's review; its complete text stays in the extension). */
export interface PermissionReviewView {
    readonly title: string;
    readonly preview: string;
    readonly marker: string | null;
    readonly truncated: boolean;
}

export interface PermissionItem {
    readonly kind: 'permission';
    readonly id: string;
    readonly tool: string;
    readonly summary: string;
    readonly decision: Decision | undefined;
    readonly review?: PermissionReviewView;
}

export type HostMessage =
    | { readonly type: 'reset'; readonly items: readonly ChatItem[]; readonly running: boolean; readonly session: string | undefined }
    /** Insert or replace (same id) one item. */
    | { readonly type: 'upsert'; readonly item: ChatItem }
    | { readonly type: 'running'; readonly running: boolean }
    | { readonly type: 'serverState'; readonly ready: boolean; readonly message: string };

export type WebviewMessage =
    | { readonly type: 'ready' }
    | { readonly type: 'prompt'; readonly text: string }
    /** Send a failed turn's prompt again (only ever on the user's click). */
    | { readonly type: 'retry'; readonly text: string }
    | { readonly type: 'cancel' }
    | { readonly type: 'newSession' }
    | { readonly type: 'permission'; readonly requestId: string; readonly decision: Decision }
    /** "Show all": open the complete text of a permission prompt. */
    | { readonly type: 'showReview'; readonly requestId: string };

export function isWebviewMessage(value: unknown): value is WebviewMessage {
    if (typeof value !== 'object' || value === null || !('type' in value)) {
        return false;
    }
    const type = (value).type;
    return type === 'ready' || type === 'prompt' || type === 'retry' || type === 'cancel' || type === 'newSession' || type === 'permission' || type === 'showReview';
}
