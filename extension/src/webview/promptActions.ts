/**
 * What the chat offers under a prompt and a tool call's checkpoint (webview side: it renders and
 * posts, the extension acts). Under every answered prompt: a small "Restore" menu (code,
 * conversation or both to before this prompt; both to the end of its turn) and "Edit and resend"
 * (the prompt becomes an editor in place; Send forks the conversation from the prompt's parent).
 * Under a tool call: "Restore" (code, conversation or both to that checkpoint) beside its diff.
 */
import { el } from './dom';
import type { ChatPromptPoint, ChatRestoreMode, RestoreWebviewMessage } from './restoreMessages';
import { fmt, S } from './strings';

type Post = (m: RestoreWebviewMessage) => void;

interface Choice {
    readonly label: string;
    readonly mode: ChatRestoreMode;
    readonly point: ChatPromptPoint;
}

const PROMPT_CHOICES: readonly Choice[] = [
    { label: S.choiceBothBefore, mode: 'both', point: 'before' },
    { label: S.choiceCodeBefore, mode: 'code', point: 'before' },
    { label: S.choiceConversationBefore, mode: 'conversation', point: 'before' },
    { label: S.choiceBothEnd, mode: 'both', point: 'end' },
];

const CHECKPOINT_CHOICES: readonly Choice[] = [
    { label: S.choiceBothCheckpoint, mode: 'both', point: 'end' },
    { label: S.choiceCode, mode: 'code', point: 'end' },
    { label: S.choiceConversation, mode: 'conversation', point: 'end' },
];

/** A disclosure menu (no popup, no focus theft): its choices show under it when opened. */
function menu(label: string, aria: string, choices: readonly Choice[], pick: (c: Choice) => void): HTMLDetailsElement {
    const box = el('details', 'restore-menu');
    const summary = el('summary', 'link', label);
    summary.setAttribute('aria-label', aria);
    const list = el('div', 'restore-choices');
    list.setAttribute('role', 'group');
    for (const choice of choices) {
        const b = el('button', 'link restore-choice', choice.label);
        b.type = 'button';
        b.dataset['mode'] = choice.mode;
        b.dataset['point'] = choice.point;
        b.addEventListener('click', () => {
            box.open = false;
            pick(choice);
        });
        list.append(b);
    }
    box.append(summary, list);
    return box;
}

/** The prompt turned into an editor: Send posts the edited text, Cancel puts the prompt back. */
function editInPlace(box: HTMLElement, prompt: string, text: string, post: Post, busy: () => boolean, sent: () => void): void {
    const saved = Array.from(box.childNodes);
    const area = el('textarea', 'edit-prompt');
    area.value = text;
    area.rows = Math.min(10, Math.max(2, text.split('\n').length));
    area.setAttribute('aria-label', S.editPrompt);
    const row = el('div', 'edit-row');
    const send = el('button', 'edit-send', S.send);
    send.type = 'button';
    const cancel = el('button', 'secondary edit-cancel', S.cancel);
    cancel.type = 'button';
    const restore = (): void => box.replaceChildren(...saved);
    send.addEventListener('click', () => {
        const edited = area.value.trim();
        if (edited === '' || busy()) {
            return;
        }
        post({ type: 'editResend', prompt, text: edited });
        sent();
        restore();
    });
    cancel.addEventListener('click', restore);
    area.addEventListener('keydown', e => {
        if (e.key === 'Enter' && !e.shiftKey) {
            e.preventDefault();
            send.click();
        } else if (e.key === 'Escape') {
            restore();
        }
    });
    row.append(send, cancel);
    box.replaceChildren(area, row);
    area.focus(); // the user asked for the editor
}

/** The row under an answered prompt. `busy`: a turn runs (nothing is sent then). */
export function promptActions(box: HTMLElement, prompt: string, text: string, post: Post, busy: () => boolean, sent: () => void): HTMLElement {
    const row = el('div', 'prompt-actions');
    row.append(
        menu(S.restoreMenu, fmt(S.restorePromptLabel, text.slice(0, 60)), PROMPT_CHOICES, c => post({ type: 'restorePrompt', prompt, text, point: c.point, mode: c.mode })),
    );
    const edit = el('button', 'link edit-resend', S.editResend);
    edit.type = 'button';
    edit.addEventListener('click', () => editInPlace(box, prompt, text, post, busy, sent));
    row.append(edit);
    return row;
}

/** "Restore…" beside a tool call's checkpoint link. */
export function checkpointRestore(checkpoint: string, summary: string, post: Post): HTMLElement {
    return menu(S.restoreMenu, fmt(S.restoreCheckpointLabel, checkpoint.slice(0, 8), summary), CHECKPOINT_CHOICES, c => post({ type: 'restoreCheckpoint', checkpoint, mode: c.mode }));
}
