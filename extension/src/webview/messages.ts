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
    | { readonly kind: 'permission'; readonly id: string; readonly tool: string; readonly summary: string; readonly decision: Decision | undefined }
    | { readonly kind: 'error'; readonly id: string; readonly text: string }
    | { readonly kind: 'notice'; readonly id: string; readonly text: string };

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
    | { readonly type: 'permission'; readonly requestId: string; readonly decision: Decision };

export function isWebviewMessage(value: unknown): value is WebviewMessage {
    if (typeof value !== 'object' || value === null || !('type' in value)) {
        return false;
    }
    const type = (value).type;
    return type === 'ready' || type === 'prompt' || type === 'retry' || type === 'cancel' || type === 'newSession' || type === 'permission';
}
