/**
 * The webviews' words in the user's language: `WEBVIEW_TEXT` (webview/strings.ts, the English
 * source) with each value through `vscode.l10n.t` (the bundle lists them: `scripts/l10n.mjs` reads
 * the table). The pages embed the result (`providers/webviewPage.ts`); the chat banner is made from it too.
 */
import * as vscode from 'vscode';
import { WEBVIEW_TEXT, type WebviewText } from '../../webview/strings';

export function webviewText(): WebviewText {
    // The messages are the table's literals, listed in the bundle by the l10n script (not by a `t('…')` call here).
    const translate = (message: string): string => vscode.l10n.t(message);
    const out: Record<string, string> = {};
    for (const [key, value] of Object.entries(WEBVIEW_TEXT)) {
        out[key] = translate(value);
    }
    return out as WebviewText;
}

