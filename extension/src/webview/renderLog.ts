/**
 * The chat log's rich items in the webview: the assistant's Markdown (rendered by `markdown.ts`,
 * then sanitized by DOMPurify: defence in depth), a tool call's inline diff and checkpoint link,
 * and a turn's usage line; plus the log's click handling (links open through the extension, never
 * in the webview; code blocks' Copy). Everything the model wrote reaches the DOM only through the
 * sanitizer or `textContent`.
 */
import DOMPurify from 'dompurify';
import { el } from './dom';
import { isAllowedLink, renderMarkdown } from './markdown';
import type { ChatItem, HostMessage, WebviewMessage } from './messages';
import { usageLine, usageSpoken } from './usageLine';
import { checkpointRestore } from './promptActions';
import { fmt, S } from './strings';

type Post = (m: WebviewMessage) => void;
type ToolItem = Extract<ChatItem, { kind: 'tool' }>;
type UsageItem = Extract<ChatItem, { kind: 'usage' }>;
type ToolDiff = Extract<HostMessage, { type: 'toolDiff' }>;

const PURIFY = {
    ALLOWED_URI_REGEXP: /^(?:https?:|mailto:)/i,
    FORBID_TAGS: ['img', 'picture', 'source', 'video', 'audio', 'iframe', 'object', 'embed', 'style', 'form', 'input', 'svg', 'math'],
    FORBID_ATTR: ['style', 'src', 'srcset', 'action', 'formaction'],
    ALLOW_DATA_ATTR: false,
};

/** An assistant message: Markdown → HTML → sanitized DOM. */
export function renderAssistant(text: string): HTMLElement {
    const box = el('div', 'msg assistant markdown');
    box.innerHTML = DOMPurify.sanitize(renderMarkdown(text), PURIFY);
    return box;
}

export function renderUsage(item: UsageItem): HTMLElement {
    const line = el('div', 'msg usage', usageLine(item.usage));
    line.title = usageSpoken(item.usage);
    return line;
}

/** Diffs already fetched and diff sections the user opened (a re-rendered tool item keeps both). */
const diffs = new Map<string, ToolDiff>();
const openDiffs = new Set<string>();

function fillDiff(target: HTMLElement, diff: ToolDiff): void {
    const pre = el('pre', 'diff-text');
    for (const line of diff.text.split('\n')) {
        const cls = line.startsWith('+++') || line.startsWith('---') ? 'd-file' : line.startsWith('+') ? 'd-add' : line.startsWith('-') ? 'd-del' : line.startsWith('@@') ? 'd-hunk' : '';
        pre.append(el('span', cls, `${line}\n`));
    }
    target.replaceChildren(...(diff.text === '' ? [] : [pre]), ...(diff.note === '' ? [] : [el('div', 'diff-note', diff.note)]));
}

/** A tool call's own part: its changes (fetched when first opened) and its checkpoint link. */
export function toolExtras(item: ToolItem, post: Post): HTMLElement | undefined {
    const checkpoint = item.checkpoint;
    if (checkpoint === undefined) {
        return undefined;
    }
    const box = el('div', 'tool-extras');
    const changes = el('details', 'tool-diff');
    changes.dataset['diffFor'] = item.id;
    const body = el('div', 'diff-body');
    const known = diffs.get(item.id);
    if (known !== undefined) {
        fillDiff(body, known);
    } else {
        body.textContent = S.loading;
    }
    changes.append(el('summary', '', S.changes), body);
    changes.open = openDiffs.has(item.id);
    changes.addEventListener('toggle', () => {
        if (changes.open) {
            openDiffs.add(item.id);
            if (!diffs.has(item.id)) {
                post({ type: 'toolDiff', toolCallId: item.id, checkpoint });
            }
        } else {
            openDiffs.delete(item.id);
        }
    });
    const link = el('button', 'link checkpoint-link', fmt(S.checkpointLink, checkpoint.slice(0, 8)));
    link.type = 'button';
    link.setAttribute('aria-label', fmt(S.checkpointLinkLabel, checkpoint.slice(0, 8), item.summary));
    link.addEventListener('click', () => post({ type: 'openCheckpoint', checkpoint }));
    box.append(changes, link, checkpointRestore(checkpoint, item.summary, post));
    return box;
}

/** The extension's answer to `toolDiff`: fill every shown section of that call. */
export function showToolDiff(root: ParentNode, diff: ToolDiff): void {
    diffs.set(diff.toolCallId, diff);
    root.querySelectorAll<HTMLElement>('details.tool-diff').forEach(section => {
        const body = section.querySelector<HTMLElement>('.diff-body');
        if (section.dataset['diffFor'] === diff.toolCallId && body !== null) {
            fillDiff(body, diff);
        }
    });
}

async function copy(button: HTMLButtonElement, text: string, post: Post): Promise<void> {
    try {
        await navigator.clipboard.writeText(text);
    } catch {
        post({ type: 'copy', text }); // the webview's clipboard refused: the extension copies
    }
    button.textContent = S.copied;
    button.dataset['copied'] = 'true';
    setTimeout(() => {
        button.textContent = S.copy;
        delete button.dataset['copied'];
    }, 1500);
}

/** One click handler for the whole log: links and Copy buttons inside rendered Markdown. */
export function handleLogClicks(log: HTMLElement, post: Post): void {
    log.addEventListener('auxclick', event => {
        if (event.target instanceof Element && event.target.closest('a') !== null) {
            event.preventDefault(); // a middle click opens nothing either
            event.stopPropagation();
        }
    });
    log.addEventListener('click', event => {
        const target = event.target instanceof Element ? event.target : null;
        const anchor = target?.closest('a');
        if (anchor !== null && anchor !== undefined) {
            // The webview never navigates, and the workbench's own link handler (on the window,
            // after this one) does not open it a second time.
            event.preventDefault();
            event.stopPropagation();
            const href = anchor.getAttribute('href') ?? '';
            if (isAllowedLink(href)) {
                post({ type: 'openLink', href });
            }
            return;
        }
        const button = target?.closest('button.code-copy');
        if (button instanceof HTMLButtonElement) {
            const code = button.closest('.code-block')?.querySelector('code')?.textContent ?? '';
            void copy(button, code, post);
        }
    });
}
