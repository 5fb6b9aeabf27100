/**
 * The chat input's context model (pure: no DOM, no vscode): the chips that show what a prompt
 * will carry (the editor context and the `@path` mentions), the `@` completion's token under the
 * caret, and how a chosen completion is inserted. Used by the webview (composer.ts) and by the
 * extension host (chatView.ts: the mentions it sends, the context it collects).
 */
import { fmt, S } from './strings';

export interface LineRange {
    readonly start: number;
    readonly end: number;
}

/** What the host reports of the active editor (workspace-relative path; 1-based lines). */
export interface EditorSnapshot {
    readonly path: string;
    readonly language?: string;
    readonly selections: readonly LineRange[];
    readonly visible?: LineRange;
    readonly openEditors: readonly string[];
}

export interface Chip {
    /** `editor` (one, can be switched off for the next prompt) or a mention (removed by editing its `@path`). */
    readonly kind: 'editor' | 'mention';
    readonly label: string;
    /** For a mention: the `@path` token to take out of the prompt when the chip is removed. */
    readonly path?: string;
}

function lines(r: LineRange): string {
    return r.start === r.end ? `${r.start}` : `${r.start}-${r.end}`;
}

function baseName(path: string): string {
    return path.slice(path.lastIndexOf('/') + 1);
}

/** `app.py:12-20 (selection)`, `app.py (2 selections)` or `app.py (visible 1-40)`. */
export function editorChipLabel(s: EditorSnapshot): string {
    const name = baseName(s.path);
    const [first] = s.selections;
    if (s.selections.length > 1) {
        return fmt(S.chipSelections, name, s.selections.length);
    }
    if (first !== undefined) {
        return fmt(S.chipSelection, name, lines(first));
    }
    return s.visible !== undefined ? fmt(S.chipVisible, name, lines(s.visible)) : fmt(S.chipActiveFile, name);
}

const MENTION = /(?:^|\s)@([^\s@]+)/g;

/** The `@path` tokens of a prompt, in order, each once (a trailing `.`/`,`/`:`/`)` is punctuation). */
export function parseMentions(text: string): string[] {
    const out: string[] = [];
    for (const m of text.matchAll(MENTION)) {
        const path = (m[1] ?? '').replace(/[.,:;!?)\]]+$/, '');
        if (path !== '' && (path.includes('.') || path.includes('/')) && !out.includes(path)) {
            out.push(path);
        }
    }
    return out;
}

/** The chips for the input row: the editor context (when on and there is an editor), then the mentions. */
export function contextChips(editor: EditorSnapshot | undefined, includeEditor: boolean, text: string): Chip[] {
    const chips: Chip[] = [];
    if (editor !== undefined && includeEditor) {
        chips.push({ kind: 'editor', label: editorChipLabel(editor) });
    }
    for (const path of parseMentions(text)) {
        chips.push({ kind: 'mention', label: `@${path}`, path });
    }
    return chips;
}

/** The `@query` being typed at `caret` (undefined when the caret is not in one). */
export function mentionQuery(text: string, caret: number): { start: number; query: string } | undefined {
    const before = text.slice(0, caret);
    const m = /(?:^|\s)@([^\s@]*)$/.exec(before);
    if (m === null) {
        return undefined;
    }
    const query = m[1] ?? '';
    return { start: caret - query.length - 1, query };
}

/** The text with the `@query` at `start` replaced by `@path ` and the caret after it. */
export function insertMention(text: string, start: number, caret: number, path: string): { text: string; caret: number } {
    const token = `@${path} `;
    const after = text.slice(caret).replace(/^\S*/, '');
    const joined = text.slice(0, start) + token + after.replace(/^ /, '');
    return { text: joined, caret: start + token.length };
}

/** The prompt without one mention's `@path` token (the chip's remove button). */
export function removeMention(text: string, path: string): string {
    const escaped = path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    return text
        .replace(new RegExp(`(^|\\s)@${escaped}(?=$|[\\s.,:;!?)\\]])`, 'g'), '$1')
        .replace(/ {2,}/g, ' ')
        .trim();
}

/** The "attached: …" line under a sent prompt in the log (empty: nothing attached). */
export function attachedLine(attachments: readonly string[] | undefined): string {
    return attachments !== undefined && attachments.length > 0 ? `attached: ${attachments.join(', ')}` : '';
}

/** A prompt message's attachment text block, as the server writes it: shown as the "attached"
 * line, never as a message of its own. */
export function isAttachmentText(text: string): boolean {
    return text.startsWith('<editor-context>') || text.startsWith('<file path="');
}

/** `{ attachments }` for a chat item when there are any (spread into the item). */
export function withAttachments(attachments: readonly string[] | undefined): { attachments?: readonly string[] } {
    return attachments !== undefined && attachments.length > 0 ? { attachments } : {};
}

/** The index of a message's last text block: the user's own words in a prompt (-1: none). */
export function lastText(content: readonly Record<string, unknown>[]): number {
    for (let i = content.length - 1; i >= 0; i--) {
        if (content[i]?.['type'] === 'text') {
            return i;
        }
    }
    return -1;
}

/** The server's reference to a failed prompt from its chat item id (`turn:<turn id>` live,
 * `withdrawn:<message id>` after a reload); undefined for anything else. */
export function failedPromptRef(itemId: string | undefined): string | undefined {
    const m = itemId === undefined ? null : /^(?:turn|withdrawn):(.+)$/.exec(itemId);
    return m?.[1];
}

/** What a key does to the open `@` completion list (`count` options, `active` highlighted). */
export type ListKeyAction = { readonly kind: 'move'; readonly active: number } | { readonly kind: 'choose' } | { readonly kind: 'close' };

const LIST_KEYS: Readonly<Record<string, (active: number, count: number) => ListKeyAction>> = {
    ArrowDown: (active, count) => ({ kind: 'move', active: (active + 1) % count }),
    ArrowUp: (active, count) => ({ kind: 'move', active: (active + count - 1) % count }),
    Enter: () => ({ kind: 'choose' }),
    Tab: () => ({ kind: 'choose' }),
    Escape: () => ({ kind: 'close' }),
};

/** The list's use of `key` (↑/↓ wrap around; Enter/Tab choose; Escape closes); undefined: the
 * key is the prompt box's (no list shown, or a key the list does not use). */
export function listKey(key: string, active: number, count: number): ListKeyAction | undefined {
    return count > 0 && Object.hasOwn(LIST_KEYS, key) ? LIST_KEYS[key]?.(active, count) : undefined;
}
