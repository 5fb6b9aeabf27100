/**
 * The typed face of Retrace's JSON-RPC protocol for the extension. Every type comes from
 * `shared-schema/generated/protocol.ts` (generated from the server's pydantic models); this file
 * only re-exports them and adds typed send/handle helpers keyed by method string, so UI code never
 * writes a method name or a payload shape by hand.
 */
import type { Disposable } from 'vscode';
import type { CancellationToken, LanguageClient } from 'vscode-languageclient/node';
import type {
    NotificationParams,
    RequestParams,
    RequestResult,
    ServerNotificationParams,
    ServerRequestParams,
    ServerRequestResult,
} from '../../../shared-schema/generated/protocol';

export { METHODS } from '../../../shared-schema/generated/protocol';
export type * from '../../../shared-schema/generated/protocol';

export type ClientRequest = keyof RequestResult;
export type ClientNotification = keyof NotificationParams;
export type ServerRequest = keyof ServerRequestResult;
export type ServerNotification = keyof ServerNotificationParams;

/**
 * Typed calls over one LanguageClient, for the life of its server process. The supervisor closes
 * it when that process is gone: every request still waiting then fails with the reason, and later
 * ones fail at once. (A dead connection may never answer: its own dispose can time out before it
 * rejects what is pending, and a caller awaiting such a request would hang forever.)
 */
export class Rpc {
    private closed: Error | undefined;
    private readonly waiting = new Set<(err: Error) => void>();

    constructor(readonly client: LanguageClient) {}

    request<M extends ClientRequest>(method: M, params: RequestParams[M]): Promise<RequestResult[M]> {
        if (this.closed !== undefined) {
            return Promise.reject(this.closed);
        }
        return new Promise<RequestResult[M]>((resolve, reject) => {
            this.waiting.add(reject);
            this.client.sendRequest<RequestResult[M]>(method, params).then(resolve, reject).finally(() => this.waiting.delete(reject));
        });
    }

    /** The server behind this client is gone: fail what waits on it, and everything after. */
    close(reason: string): void {
        this.closed ??= new Error(reason);
        for (const reject of this.waiting) {
            reject(this.closed);
        }
        this.waiting.clear();
    }

    notify<M extends ClientNotification>(method: M, params: NotificationParams[M]): Promise<void> {
        return this.client.sendNotification(method, params);
    }

    onRequest<M extends ServerRequest>(
        method: M,
        handler: (params: ServerRequestParams[M], token: CancellationToken) => Promise<ServerRequestResult[M]>,
    ): Disposable {
        return this.client.onRequest(method, (params: ServerRequestParams[M], token: CancellationToken) => handler(params, token));
    }

    onNotification<M extends ServerNotification>(method: M, handler: (params: ServerNotificationParams[M]) => void): Disposable {
        return this.client.onNotification(method, (params: ServerNotificationParams[M]) => handler(params));
    }
}
