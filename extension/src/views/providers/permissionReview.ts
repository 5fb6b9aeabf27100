/**
 * The complete text behind a permission prompt, one click away: the server sends it with every
 * `retrace/permission/request` (`review.text`); "Show all" opens it in a read-only editor
 * (a `retrace-review:` document, which the user cannot edit or save by accident).
 */
import * as vscode from 'vscode';
import type { PermissionRequest } from '../../client/protocol';
import type { PermissionReviewView } from '../../webview/messages';

export const REVIEW_SCHEME = 'retrace-review';
/** Reviews kept for "Show all" after the prompt was answered (the most recent ones). */
const KEEP = 200;

/** The part of the server's review the webview shows inline (never the complete text itself). */
export function reviewView(request: PermissionRequest): PermissionReviewView | undefined {
    const review = (request as Partial<PermissionRequest>).review;
    if (review === undefined) {
        return undefined;
    }
    return {
        title: review.title,
        preview: review.preview,
        marker: review.marker ?? null,
        truncated: review.truncated,
        parts: review.parts ?? null,
        notice: review.notice ?? null,
    };
}

export class ReviewDocuments implements vscode.Disposable {
    private readonly requests = new Map<string, PermissionRequest>();
    private readonly registration: vscode.Disposable;

    constructor() {
        this.registration = vscode.workspace.registerTextDocumentContentProvider(REVIEW_SCHEME, {
            provideTextDocumentContent: uri => this.requests.get(uri.query)?.review.text ?? vscode.l10n.t('(this review is no longer available)'),
        });
    }

    remember(request: PermissionRequest): void {
        this.requests.delete(request.requestId);
        this.requests.set(request.requestId, request);
        for (const id of this.requests.keys()) {
            if (this.requests.size <= KEEP) {
                break;
            }
            this.requests.delete(id);
        }
    }

    /** Open the complete text of a prompt's review in a read-only editor. */
    async show(requestId: string): Promise<void> {
        const request = this.requests.get(requestId);
        if (request === undefined) {
            void vscode.window.showWarningMessage(vscode.l10n.t('Retrace: this permission request is no longer available.'));
            return;
        }
        const name = request.review.path ?? `${request.tool}.txt`;
        const uri = vscode.Uri.from({ scheme: REVIEW_SCHEME, path: `/${request.tool}/${name.replace(/^\/+/, '')}`, query: requestId });
        let doc = await vscode.workspace.openTextDocument(uri);
        if (request.review.language !== null) {
            doc = await vscode.languages.setTextDocumentLanguage(doc, request.review.language);
        }
        await vscode.window.showTextDocument(doc, { preview: true });
    }

    dispose(): void {
        this.registration.dispose();
        this.requests.clear();
    }
}
