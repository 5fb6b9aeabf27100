/**
 * The assistant's Markdown → an HTML string that is safe to sanitize and insert (pure: no DOM,
 * unit-tested in Node). Contracts:
 * - raw HTML in the text is shown as text (`html: false`), never parsed;
 * - a link is a link only for `http:`, `https:` and `mailto:`; anything else (`javascript:`,
 *   `file:`, `command:`, relative paths) stays text;
 * - images are never loaded: `![alt](src)` renders as the text `[image: alt]`;
 * - a fenced (or indented) code block gets a language label and a Copy button; the raw code is
 *   the `<code>` element's text;
 * - no inline `style` attribute (the webview's CSP forbids them): table alignment becomes a class.
 * The webview runs DOMPurify on the result as well (defence in depth).
 */
import MarkdownIt from 'markdown-it';
import { isAllowedLink } from './logMessages';
import { fmt, S } from './strings';

type Renderer = MarkdownIt['renderer'];
type RenderRule = NonNullable<Renderer['rules']['fence']>;

export { isAllowedLink };

const md = new MarkdownIt({ html: false, linkify: true, typographer: false, breaks: false });
md.validateLink = isAllowedLink;
const escape = (text: string): string => md.utils.escapeHtml(text);

/** A language name as a label: letters, digits and a few signs (`c++`, `objective-c`), short. */
function languageOf(info: string): string {
    const word = info.trim().split(/\s+/)[0] ?? '';
    return /^[\w+#.-]{1,30}$/.test(word) ? word : '';
}

function codeBlock(code: string, language: string): string {
    const label = language === '' ? S.codeLabel : language;
    const cls = language === '' ? '' : ` class="language-${escape(language)}"`;
    return (
        '<div class="code-block">' +
        `<div class="code-head"><span class="code-lang">${escape(label)}</span>` +
        `<button type="button" class="code-copy" aria-label="${escape(fmt(S.copyCode, label))}">${escape(S.copy)}</button></div>` +
        `<pre><code${cls}>${escape(code)}</code></pre></div>\n`
    );
}

const fence: RenderRule = (tokens, idx) => {
    const token = tokens[idx];
    return token === undefined ? '' : codeBlock(token.content, languageOf(token.info));
};
md.renderer.rules.fence = fence;
md.renderer.rules.code_block = (tokens, idx) => {
    const token = tokens[idx];
    return token === undefined ? '' : codeBlock(token.content, '');
};

md.renderer.rules.image = (tokens, idx) => {
    const token = tokens[idx];
    const alt = token?.children?.map(c => c.content).join('') ?? '';
    return `<span class="image-placeholder">${escape(alt === '' ? S.image : fmt(S.imageAlt, alt))}</span>`;
};

// Links open through the extension: the webview intercepts the click (no navigation); the title
// shows where it goes.
md.renderer.rules['link_open'] = (tokens, idx, options, _env, self) => {
    const token = tokens[idx];
    if (token !== undefined) {
        const href = token.attrGet('href') ?? '';
        token.attrSet('title', href);
        token.attrSet('rel', 'noopener noreferrer');
    }
    return self.renderToken(tokens, idx, options);
};

// Table alignment arrives as `style="text-align:…"`; the CSP blocks inline styles, so a class.
for (const rule of ['th_open', 'td_open'] as const) {
    md.renderer.rules[rule] = (tokens, idx, options, _env, self) => {
        const token = tokens[idx];
        const style = token?.attrGet('style');
        if (token !== undefined && style !== null && style !== undefined) {
            const align = /text-align:\s*(left|right|center)/.exec(style)?.[1];
            token.attrs = (token.attrs ?? []).filter(([name]) => name !== 'style');
            if (align !== undefined) {
                token.attrSet('class', `align-${align}`);
            }
        }
        return self.renderToken(tokens, idx, options);
    };
}

/** The assistant's Markdown as HTML (see the module contract). */
export function renderMarkdown(text: string): string {
    return md.render(text);
}

/** What a screen reader is told of a message: its text without the Markdown syntax. */
export function plainText(text: string): string {
    const out: string[] = [];
    for (const token of md.parse(text, {})) {
        if (token.type === 'inline') {
            out.push((token.children ?? []).map(c => (c.type === 'softbreak' || c.type === 'hardbreak' ? ' ' : c.content)).join(''));
        } else if (token.type === 'fence' || token.type === 'code_block') {
            out.push(languageOf(token.info) === '' ? S.codeBlockSpoken : fmt(S.codeBlockSpokenLanguage, languageOf(token.info)));
        }
    }
    return out
        .map(s => s.trim())
        .filter(s => s !== '')
        .join(' ');
}
