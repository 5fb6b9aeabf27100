/**
 * The chat input's context (webview side): the chips row (the editor context, switchable off
 * for the next prompt; each `@path` mention, removable) and the `@` completion list (workspace
 * files asked of the host, chosen with ↑/↓ + Enter/Tab or a click). The pure rules are in
 * composerModel.ts; this file only wires them to the DOM.
 */
import { attachedLine, contextChips, editorChipLabel, insertMention, mentionQuery, removeMention, type EditorSnapshot } from './composerModel';
import type { WebviewMessage } from './messages';
import { fmt, S } from './strings';

export interface Composer {
    /** The host's editor snapshot changed. */
    setEditor(editor: EditorSnapshot | undefined): void;
    /** The host answered a completion request. */
    showFiles(requestId: number, paths: readonly string[]): void;
    /** Whether the editor context goes with the next prompt. */
    readonly includeEditor: boolean;
    /** A key in the prompt box: true when the completion list used it. */
    onKey(e: KeyboardEvent): boolean;
    /** After a prompt was sent: the chips follow the emptied box; the editor chip is on again. */
    sent(): void;
}

/** The "attached: …" line under a sent prompt (undefined: nothing attached). */
export function attachedNode(attachments: readonly string[] | undefined): HTMLElement | undefined {
    const text = attachedLine(attachments);
    if (text === '') {
        return undefined;
    }
    const node = document.createElement('div');
    node.className = 'attached';
    node.textContent = text;
    return node;
}

export function createComposer(prompt: HTMLTextAreaElement, post: (m: WebviewMessage) => void): Composer {
    const row = document.getElementById('context-row') as HTMLDivElement;
    const list = document.getElementById('mention-list') as HTMLDivElement;
    let editor: EditorSnapshot | undefined;
    let includeEditor = true;
    let requestId = 0;
    let options: readonly string[] = [];
    let active = 0;

    const button = (label: string, title: string, onClick: () => void): HTMLButtonElement => {
        const b = document.createElement('button');
        b.type = 'button';
        b.textContent = label;
        b.title = title;
        b.setAttribute('aria-label', title);
        b.addEventListener('click', onClick);
        return b;
    };

    const renderChips = (): void => {
        row.replaceChildren();
        const shownEditor = editor !== undefined ? [{ kind: 'editor' as const, label: editorChipLabel(editor) }] : [];
        for (const chip of [...shownEditor, ...contextChips(undefined, false, prompt.value)]) {
            const node = document.createElement('span');
            node.className = chip.kind === 'editor' && !includeEditor ? 'chip off' : 'chip';
            node.dataset['kind'] = chip.kind;
            const label = document.createElement('span');
            label.textContent = chip.label;
            node.append(label);
            if (chip.kind === 'editor') {
                node.title = includeEditor ? S.chipSent : S.chipNotSent;
                node.append(
                    button(includeEditor ? '×' : '+', includeEditor ? S.chipDetach : S.chipAttach, () => {
                        includeEditor = !includeEditor;
                        renderChips();
                    }),
                );
            } else if (chip.path !== undefined) {
                const path = chip.path;
                node.append(
                    button('×', fmt(S.chipRemove, path), () => {
                        prompt.value = removeMention(prompt.value, path);
                        renderChips();
                    }),
                );
            }
            row.append(node);
        }
    };

    const close = (): void => {
        options = [];
        list.hidden = true;
        list.replaceChildren();
    };

    const choose = (path: string): void => {
        const at = mentionQuery(prompt.value, prompt.selectionStart);
        if (at !== undefined) {
            const next = insertMention(prompt.value, at.start, prompt.selectionStart, path);
            prompt.value = next.text;
            prompt.setSelectionRange(next.caret, next.caret);
        }
        close();
        renderChips();
        prompt.focus();
    };

    const renderList = (): void => {
        list.replaceChildren();
        options.forEach((path, i) => {
            const option = document.createElement('div');
            option.className = 'mention-option';
            option.setAttribute('role', 'option');
            option.setAttribute('aria-selected', String(i === active));
            option.textContent = path;
            option.addEventListener('mousedown', e => {
                e.preventDefault(); // keep the focus (and the caret) in the prompt box
                choose(path);
            });
            list.append(option);
        });
        list.hidden = options.length === 0;
        list.children[active]?.scrollIntoView({ block: 'nearest' });
    };

    prompt.addEventListener('input', () => {
        renderChips();
        const at = mentionQuery(prompt.value, prompt.selectionStart);
        if (at === undefined) {
            close();
            return;
        }
        requestId++;
        post({ type: 'files', requestId, query: at.query });
    });
    prompt.addEventListener('blur', () => close());

    return {
        setEditor(next) {
            editor = next;
            renderChips();
        },
        showFiles(id, paths) {
            if (id !== requestId || mentionQuery(prompt.value, prompt.selectionStart) === undefined) {
                return; // an answer to an older query, or the user moved on
            }
            options = paths;
            active = 0;
            renderList();
        },
        get includeEditor() {
            return includeEditor && editor !== undefined;
        },
        onKey(e) {
            if (options.length === 0) {
                return false;
            }
            if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
                active = (active + (e.key === 'ArrowDown' ? 1 : options.length - 1)) % options.length;
                renderList();
            } else if (e.key === 'Enter' || e.key === 'Tab') {
                const path = options[active];
                if (path !== undefined) {
                    choose(path);
                }
            } else if (e.key === 'Escape') {
                close();
            } else {
                return false;
            }
            e.preventDefault();
            return true;
        },
        sent() {
            includeEditor = true;
            close();
            renderChips();
        },
    };
}
