/**
 * The chat webview's script (bundled for the browser into dist/webview/chat.js). Renders chat
 * items with textContent only (no HTML from the model or tools), keeps the prompt history in the
 * webview state for ↑/↓, and posts user actions to the extension.
 */
import type { Banner, ChatItem, Decision, HostMessage, WebviewMessage } from './messages';
import { Announcer, LiveRegions } from './announce';
import { el } from './dom';
import { permissionView, type CommandLine } from './permissionView';
import { handleLogClicks, renderAssistant, renderUsage, showToolDiff, toolExtras } from './renderLog';
import { Coalescer } from './throttle';
import { attachedNode, createComposer } from './composer';
import { promptActions } from './promptActions';
import { fmt, S } from './strings';

interface VsCodeApi {
    postMessage(message: WebviewMessage): void;
    getState(): unknown;
    setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const log = document.getElementById('log') as HTMLDivElement;
const form = document.getElementById('form') as HTMLFormElement;
const prompt = document.getElementById('prompt') as HTMLTextAreaElement;
const send = document.getElementById('send') as HTMLButtonElement;
const cancel = document.getElementById('cancel') as HTMLButtonElement;
const status = document.getElementById('status') as HTMLDivElement;
const banner = document.getElementById('banner') as HTMLDivElement;
const composer = createComposer(prompt, m => vscode.postMessage(m));

interface State {
    history: string[];
}
const saved = vscode.getState() as Partial<State> | undefined;
const history: string[] = Array.isArray(saved?.history) ? saved.history.filter((h): h is string => typeof h === 'string') : [];
let historyIndex = history.length;
let serverAccepting = false;
let running = false;

const FAILED_NOTE: Record<string, string> = {
    error: S.failedError,
    cancelled: S.failedCancelled,
    interrupted: S.failedInterrupted,
};

const STATUS_GLYPH: Record<string, string> = { running: '⟳', ok: '✓', error: '✗', denied: '⊘', interrupted: '!', cancelled: '–' };

type ItemOf<K extends ChatItem['kind']> = Extract<ChatItem, { kind: K }>;

/** One renderer per kind of item (the mapped type makes a new kind a compile error here). */
const RENDERERS: { readonly [K in ChatItem['kind']]: (item: ItemOf<K>) => HTMLElement } = {
    user: renderUser,
    assistant: item => renderAssistant(item.text),
    usage: item => renderUsage(item),
    error: item => el('div', 'msg error', item.text),
    notice: item => el('div', 'msg notice', item.text),
    tool: renderTool,
    permission: renderPermission,
};

function render(item: ChatItem): HTMLElement {
    return (RENDERERS[item.kind] as (item: ChatItem) => HTMLElement)(item);
}

function markRunning(): void {
    running = true;
    updateButtons();
}

function renderUser(item: ItemOf<'user'>): HTMLElement {
    const box = el('div', item.failed === undefined ? 'msg user' : 'msg user failed', item.text);
    const attached = attachedNode(item.attachments);
    if (attached !== undefined) {
        box.append(attached);
    }
    if (item.failed !== undefined) {
        box.append(failedRow(item, item.failed));
    } else if (item.prompt !== undefined) {
        box.append(promptActions(box, item.prompt, item.text, m => vscode.postMessage(m), () => send.disabled, markRunning));
    }
    return box;
}

/** A failed prompt is not part of what the model sees any more: only a click sends it again. */
function failedRow(item: ItemOf<'user'>, failed: string): HTMLElement {
    const row = el('div', 'failed-row');
    row.append(el('span', 'failed-note', FAILED_NOTE[failed] ?? fmt(S.failedOther, failed)));
    const retry = el('button', 'secondary retry', S.retry);
    retry.type = 'button';
    retry.addEventListener('click', () => {
        if (!send.disabled) {
            vscode.postMessage({ type: 'retry', text: item.text, of: item.id });
            markRunning();
        }
    });
    row.append(retry);
    return row;
}

function renderTool(item: ItemOf<'tool'>): HTMLElement {
    const details = el('details', `msg tool tool-${item.status}`);
    const summary = el('summary', '');
    summary.append(el('span', `status-${item.status}`, `${STATUS_GLYPH[item.status] ?? '?'} `), document.createTextNode(item.summary));
    details.append(summary, el('pre', '', item.output === '' ? (item.status === 'running' ? S.toolRunning : S.toolNoOutput) : item.output));
    details.dataset['status'] = item.status;
    const extras = toolExtras(item, m => vscode.postMessage(m));
    if (extras === undefined) {
        return details;
    }
    // The diff and checkpoint link sit under the call's row, outside its collapsed output.
    const box = el('div', 'msg tool-call');
    box.append(details, extras);
    return box;
}

function renderPermission(item: ItemOf<'permission'>): HTMLElement {
    const box = el('div', 'msg permission');
    const view = permissionView(item);
    box.append(el('div', 'permission-heading', view.heading));
    if (view.notice !== undefined) {
        box.append(el('div', 'permission-notice', view.notice));
    }
    box.append(view.lines === undefined ? el('pre', 'permission-text', view.body) : commandBox(view.lines));
    if (view.marker !== undefined) {
        // The whole marker line ("… 1,234 more characters — Show all") is the one-click way to see everything.
        const marker = el('button', 'permission-marker', view.marker);
        marker.type = 'button';
        marker.disabled = !view.showAll;
        marker.addEventListener('click', () => vscode.postMessage({ type: 'showReview', requestId: item.id }));
        box.append(marker);
    }
    box.append(item.decision === undefined ? permissionButtons(item.id) : el('div', 'notice', DECISION_WORDS[item.decision]));
    return box;
}

const DECISION_WORDS: Readonly<Record<Decision, string>> = { allow: S.allowed, deny: S.denied, allowAlways: S.allowedAlways };

function permissionButtons(requestId: string): HTMLElement {
    const buttons = el('div', 'buttons');
    const choice = (label: string, decision: Decision, cls = ''): HTMLButtonElement => {
        const b = el('button', cls, label);
        b.type = 'button';
        b.addEventListener('click', () => vscode.postMessage({ type: 'permission', requestId, decision }));
        return b;
    };
    buttons.append(choice(S.allow, 'allow'), choice(S.deny, 'deny', 'secondary'), choice(S.allowAlways, 'allowAlways', 'secondary'));
    return buttons;
}

function showBanner(b: Banner | null): void {
    banner.replaceChildren();
    if (b === null) {
        return;
    }
    banner.dataset['kind'] = b.kind;
    const buttons = el('div', 'buttons');
    for (const action of b.actions) {
        const button = el('button', 'secondary', action.label);
        button.type = 'button';
        button.addEventListener('click', () => vscode.postMessage({ type: 'command', command: action.command }));
        buttons.append(button);
    }
    banner.append(el('div', 'banner-text', b.text), buttons);
}

function keyOf(item: ChatItem): string {
    return `${item.kind}:${item.id}`;
}

/** A tool call's collapsible output (the item itself, or the first part of a call with extras). */
function toolDetails(node: HTMLElement | undefined): HTMLDetailsElement | null {
    if (node === undefined) {
        return null;
    }
    return node instanceof HTMLDetailsElement ? node : node.querySelector<HTMLDetailsElement>(':scope > details.tool');
}

/** The shown items by key: an update finds its node without searching the DOM. */
const nodes = new Map<string, HTMLElement>();

function upsert(item: ChatItem, into: ParentNode = log): void {
    const node = render(item);
    const key = keyOf(item);
    node.dataset['key'] = key;
    node.dataset['kind'] = item.kind;
    const existing = nodes.get(key);
    const before = toolDetails(existing);
    const after = toolDetails(node);
    if (before !== null && after !== null) {
        after.open = before.open;
    }
    nodes.set(key, node);
    if (existing !== undefined) {
        existing.replaceWith(node);
    } else {
        into.append(node);
    }
}

/** Everything anew in one DOM write (a long conversation must not lay out once per item). */
function resetLog(items: readonly ChatItem[], earlier: number, scroll: 'end' | 'start'): void {
    streaming.drop();
    announcer.reset(items);
    nodes.clear();
    const fragment = document.createDocumentFragment();
    if (earlier > 0) {
        const more = el('button', 'secondary earlier', fmt(S.showEarlier, earlier.toLocaleString()));
        more.type = 'button';
        more.addEventListener('click', () => vscode.postMessage({ type: 'showEarlier' }));
        fragment.append(more);
    }
    for (const item of items) {
        upsert(item, fragment);
    }
    log.replaceChildren(fragment);
    log.scrollTop = scroll === 'end' ? log.scrollHeight : 0;
}

function updateButtons(): void {
    send.disabled = !serverAccepting || running;
    cancel.disabled = !running;
}

/** A streamed assistant message is re-rendered at most every 100 ms (its last version always). */
const streaming = new Coalescer<ChatItem>(100, { now: () => performance.now(), later: (fn, ms) => setTimeout(fn, ms), cancel: h => clearTimeout(h as number) }, (_key, item) => {
    upsert(item);
    log.scrollTop = log.scrollHeight;
});
const announcer = new Announcer();
const live = new LiveRegions(document);
handleLogClicks(log, m => vscode.postMessage(m));

window.addEventListener('message', (event: MessageEvent<HostMessage>) => {
    const m = event.data;
    switch (m.type) {
        case 'reset':
            resetLog(m.items, m.earlier, m.scroll);
            running = m.running;
            break;
        case 'upsert':
            live.say(announcer.update(m.item));
            if (m.item.kind === 'assistant') {
                streaming.push(keyOf(m.item), m.item);
                break;
            }
            streaming.flush(); // what streamed so far is shown before what follows it
            upsert(m.item);
            log.scrollTop = log.scrollHeight;
            break;
        case 'running':
            running = m.running;
            if (!running) {
                streaming.flush();
            }
            live.say(announcer.running(m.running));
            break;
        case 'toolDiff':
            showToolDiff(log, m);
            break;
        case 'serverState':
            serverAccepting = m.accepting;
            status.textContent = m.message;
            break;
        case 'banner':
            showBanner(m.banner);
            break;
        case 'context':
            composer.setEditor(m.editor);
            break;
        case 'files':
            composer.showFiles(m.requestId, m.paths);
            break;
        case 'setPrompt':
            // A conversation restore left this prompt out: it is offered again, never sent.
            prompt.value = m.text;
            prompt.focus();
            prompt.setSelectionRange(m.text.length, m.text.length);
            break;
    }
    updateButtons();
});

function submit(): void {
    const text = prompt.value.trim();
    if (text === '' || send.disabled) {
        return;
    }
    if (history[history.length - 1] !== text) {
        history.push(text);
        history.splice(0, Math.max(0, history.length - 50));
    }
    historyIndex = history.length;
    vscode.setState({ history } satisfies State);
    vscode.postMessage({ type: 'prompt', text, includeEditor: composer.includeEditor });
    prompt.value = '';
    composer.sent();
    running = true;
    updateButtons();
}

form.addEventListener('submit', e => {
    e.preventDefault();
    submit();
});
cancel.addEventListener('click', () => vscode.postMessage({ type: 'cancel' }));
prompt.addEventListener('keydown', e => {
    if (composer.onKey(e)) {
        return;
    }
    if (e.key === 'Enter' && !e.shiftKey) {
        e.preventDefault();
        submit();
    } else if (e.key === 'ArrowUp' && prompt.selectionStart === 0 && historyIndex > 0) {
        historyIndex--;
        prompt.value = history[historyIndex] ?? '';
        e.preventDefault();
    } else if (e.key === 'ArrowDown' && historyIndex < history.length && prompt.selectionEnd === prompt.value.length) {
        historyIndex++;
        prompt.value = history[historyIndex] ?? '';
        e.preventDefault();
    }
});

updateButtons();
vscode.postMessage({ type: 'ready' });

/** A split command: one line per part, substitutions and redirections marked, the operator that
 * ends each part highlighted at the line's end (text only: nothing is parsed as HTML). */
function commandBox(lines: readonly CommandLine[]): HTMLElement {
    const box = el('div', 'permission-text permission-command');
    for (const line of lines) {
        const row = el('div', 'cmd-line');
        for (const span of line.spans) {
            row.append(span.kind === 'text' ? document.createTextNode(span.text) : el('span', `cmd-${span.kind}`, span.text));
        }
        if (line.operator !== undefined) {
            row.append(el('span', 'cmd-operator', ` ${line.operator}`));
        }
        box.append(row);
    }
    return box;
}
