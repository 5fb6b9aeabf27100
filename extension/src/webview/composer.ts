/**
 * The chat input's context (webview side): the chips row (the editor context, switchable off
 * for the next prompt; each `@path` mention, removable) and the `@` completion list (workspace
 * files asked of the host, chosen with ↑/↓ + Enter/Tab or a click). The pure rules are in
 * composerModel.ts; this file only wires them to the DOM.
 */
import { attachedLine, contextChips, editorChipLabel, insertMention, listKey, mentionQuery, removeMention, type Chip, type EditorSnapshot } from './composerModel';
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
    return new ComposerView(prompt, post);
}

function button(label: string, title: string, onClick: () => void): HTMLButtonElement {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = label;
    b.title = title;
    b.setAttribute('aria-label', title);
    b.addEventListener('click', onClick);
    return b;
}

class ComposerView implements Composer {
    private readonly row = document.getElementById('context-row') as HTMLDivElement;
    private readonly list = document.getElementById('mention-list') as HTMLDivElement;
    private editor: EditorSnapshot | undefined;
    private editorOn = true;
    private requestId = 0;
    private options: readonly string[] = [];
    private active = 0;

    constructor(
        private readonly prompt: HTMLTextAreaElement,
        private readonly post: (m: WebviewMessage) => void,
    ) {
        prompt.addEventListener('input', () => this.onInput());
        prompt.addEventListener('blur', () => this.close());
    }

    get includeEditor(): boolean {
        return this.editorOn && this.editor !== undefined;
    }

    setEditor(next: EditorSnapshot | undefined): void {
        this.editor = next;
        this.renderChips();
    }

    showFiles(id: number, paths: readonly string[]): void {
        if (id !== this.requestId || mentionQuery(this.prompt.value, this.prompt.selectionStart) === undefined) {
            return; // an answer to an older query, or the user moved on
        }
        this.options = paths;
        this.active = 0;
        this.renderList();
    }

    onKey(e: KeyboardEvent): boolean {
        const action = listKey(e.key, this.active, this.options.length);
        if (action === undefined) {
            return false;
        }
        if (action.kind === 'move') {
            this.active = action.active;
            this.renderList();
        } else if (action.kind === 'choose') {
            const path = this.options[this.active];
            if (path !== undefined) {
                this.choose(path);
            }
        } else {
            this.close();
        }
        e.preventDefault();
        return true;
    }

    sent(): void {
        this.editorOn = true;
        this.close();
        this.renderChips();
    }

    private onInput(): void {
        this.renderChips();
        const at = mentionQuery(this.prompt.value, this.prompt.selectionStart);
        if (at === undefined) {
            this.close();
            return;
        }
        this.requestId++;
        this.post({ type: 'files', requestId: this.requestId, query: at.query });
    }

    private renderChips(): void {
        this.row.replaceChildren();
        const shownEditor: Chip[] = this.editor !== undefined ? [{ kind: 'editor', label: editorChipLabel(this.editor) }] : [];
        for (const chip of [...shownEditor, ...contextChips(undefined, false, this.prompt.value)]) {
            this.row.append(this.chipNode(chip));
        }
    }

    private chipNode(chip: Chip): HTMLElement {
        const node = document.createElement('span');
        node.className = chip.kind === 'editor' && !this.editorOn ? 'chip off' : 'chip';
        node.dataset['kind'] = chip.kind;
        const label = document.createElement('span');
        label.textContent = chip.label;
        node.append(label);
        if (chip.kind === 'editor') {
            node.title = this.editorOn ? S.chipSent : S.chipNotSent;
            node.append(
                button(this.editorOn ? '×' : '+', this.editorOn ? S.chipDetach : S.chipAttach, () => {
                    this.editorOn = !this.editorOn;
                    this.renderChips();
                }),
            );
        } else if (chip.path !== undefined) {
            const path = chip.path;
            node.append(
                button('×', fmt(S.chipRemove, path), () => {
                    this.prompt.value = removeMention(this.prompt.value, path);
                    this.renderChips();
                }),
            );
        }
        return node;
    }

    private close(): void {
        this.options = [];
        this.list.hidden = true;
        this.list.replaceChildren();
    }

    private choose(path: string): void {
        const prompt = this.prompt;
        const at = mentionQuery(prompt.value, prompt.selectionStart);
        if (at !== undefined) {
            const next = insertMention(prompt.value, at.start, prompt.selectionStart, path);
            prompt.value = next.text;
            prompt.setSelectionRange(next.caret, next.caret);
        }
        this.close();
        this.renderChips();
        prompt.focus();
    }

    private renderList(): void {
        this.list.replaceChildren();
        this.options.forEach((path, i) => {
            const option = document.createElement('div');
            option.className = 'mention-option';
            option.setAttribute('role', 'option');
            option.setAttribute('aria-selected', String(i === this.active));
            option.textContent = path;
            option.addEventListener('mousedown', e => {
                e.preventDefault(); // keep the focus (and the caret) in the prompt box
                this.choose(path);
            });
            this.list.append(option);
        });
        this.list.hidden = this.options.length === 0;
        this.list.children[this.active]?.scrollIntoView({ block: 'nearest' });
    }
}
