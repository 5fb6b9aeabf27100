/**
 * The one page shell every Retrace webview is served in, and its security policy: nothing loads
 * but the extension's own script and the stylesheet inlined here, both carrying a fresh nonce
 * (`default-src 'none'`; fonts from the webview's own source). Each view brings its title, CSS,
 * body and script; none writes its own Content-Security-Policy. The page's words (`text`, already
 * translated: `models/webviewStrings.ts`) go in as JSON data the script reads (`webview/strings.ts`).
 */
import { randomBytes } from 'node:crypto';
import type * as vscode from 'vscode';
import { escapeHtml, STRINGS_ELEMENT_ID, stringsJson, type WebviewText } from '../../webview/strings';

export interface WebviewPage {
    readonly title: string;
    /** The words the page's script shows (translated by the host). */
    readonly text: WebviewText;
    /** The language of those words (`vscode.env.language`; a malformed tag is `en`). */
    readonly lang?: string;
    readonly css: string;
    /** The body's markup before the script (trusted: written by the extension, never data). */
    readonly body: string;
    /** The bundled script under `dist/` (a local resource root of the view). */
    readonly script: vscode.Uri;
}

export function webviewHtml(webview: vscode.Webview, page: WebviewPage): string {
    const nonce = randomBytes(16).toString('base64');
    const csp = ["default-src 'none'", `style-src 'nonce-${nonce}'`, `script-src 'nonce-${nonce}'`, `font-src ${webview.cspSource}`].join('; ');
    return `<!DOCTYPE html>
<html lang="${langTag(page.lang)}"><head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<style nonce="${nonce}">${page.css}</style>
<title>${escapeHtml(page.title)}</title>
</head><body>
<script type="application/json" id="${STRINGS_ELEMENT_ID}">${stringsJson(page.text)}</script>
${page.body}
<script nonce="${nonce}" src="${webview.asWebviewUri(page.script).toString()}"></script>
</body></html>`;
}

/** A BCP 47 tag as VS Code names a display language (`en`, `zh-cn`, `pt-br`); anything else is `en`. */
export function langTag(lang: string | undefined): string {
    return lang !== undefined && /^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8}){0,3}$/.test(lang) ? lang : 'en';
}
