/**
 * Read-only documents holding the server's 3-way merge result for a conflicting file
 * (`retrace-merge:/<path>?n=<k>`), shown as "current ↔ merged" before the user picks a
 * resolution. In memory only; a read-only scheme leaves no dirty "Untitled" buffer behind.
 */
import * as vscode from 'vscode';

export const MERGE_SCHEME = 'retrace-merge';

export class MergePreviewProvider implements vscode.TextDocumentContentProvider {
    private readonly texts = new Map<string, string>();
    private counter = 0;

    /** A fresh URI for this merged text (unique, so a second preview never shows a stale one). */
    add(path: string, text: string): vscode.Uri {
        const uri = vscode.Uri.from({ scheme: MERGE_SCHEME, path: `/${path}`, query: `n=${++this.counter}` });
        this.texts.set(uri.toString(), text);
        return uri;
    }

    provideTextDocumentContent(uri: vscode.Uri): string {
        return this.texts.get(uri.toString()) ?? '(merge preview expired)';
    }
}

export const mergePreviews = new MergePreviewProvider();
