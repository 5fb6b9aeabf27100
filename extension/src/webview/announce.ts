/**
 * What the chat tells a screen reader, and when. The log itself is not a live region (it would
 * re-announce a streaming message on every chunk); instead a finished assistant message is said
 * once (its plain text), a tool call's status change briefly, a permission prompt and a turn's
 * usage politely, and an error assertively. `Announcer` is pure (unit-tested); `LiveRegions` is
 * the two visually hidden regions in the webview.
 */
import type { ChatItem } from './messages';
import { plainText } from './markdown';
import { usageSpoken } from './usageLine';
import { fmt, S } from './strings';

export interface Announcement {
    readonly politeness: 'polite' | 'assertive';
    readonly text: string;
}

const STATUS_WORD: Record<string, string> = {
    running: S.statusRunning,
    ok: S.statusOk,
    error: S.statusError,
    denied: S.statusDenied,
    interrupted: S.statusInterrupted,
    cancelled: S.statusCancelled,
};

export class Announcer {
    /** The assistant message being streamed (said when something follows it or the turn ends). */
    private streaming: { key: string; text: string } | undefined;
    private readonly toolStatus = new Map<string, string>();
    private readonly said = new Set<string>();

    /** The log was replaced (a reload): what it shows is not news. */
    reset(items: readonly ChatItem[]): void {
        this.streaming = undefined;
        this.toolStatus.clear();
        for (const item of items) {
            if (item.kind === 'tool') {
                this.toolStatus.set(item.id, item.status);
            }
            this.said.add(`${item.kind}:${item.id}`);
        }
    }

    /** A live update of one item. */
    update(item: ChatItem): Announcement[] {
        const key = `${item.kind}:${item.id}`;
        if (item.kind === 'assistant') {
            const out = this.streaming !== undefined && this.streaming.key !== key ? this.finish() : [];
            if (!this.said.has(key)) {
                this.streaming = { key, text: item.text };
            }
            return out;
        }
        const speak = this.speakers[item.kind] as (item: ChatItem, key: string) => Announcement[];
        return [...this.finish(), ...speak(item, key)];
    }

    /** What each other kind of item says when it arrives or changes (every kind is named). */
    private readonly speakers: { readonly [K in Exclude<ChatItem['kind'], 'assistant'>]: (item: Extract<ChatItem, { kind: K }>, key: string) => Announcement[] } = {
        tool: item => {
            const before = this.toolStatus.get(item.id);
            this.toolStatus.set(item.id, item.status);
            return before === item.status ? [] : [{ politeness: 'polite', text: `${item.summary}: ${STATUS_WORD[item.status] ?? item.status}` }];
        },
        error: (item, key) => this.once(key, 'assertive', fmt(S.announceError, item.text)),
        permission: (item, key) => (item.decision === undefined ? this.once(key, 'assertive', fmt(S.announcePermission, item.summary)) : []),
        notice: (item, key) => this.once(key, 'polite', item.text),
        usage: (item, key) => this.once(key, 'polite', usageSpoken(item.usage)),
        user: () => [],
    };

    /** The turn's running state changed: a turn that ended finishes its message. */
    running(running: boolean): Announcement[] {
        return running ? [] : this.finish();
    }

    private once(key: string, politeness: Announcement['politeness'], text: string): Announcement[] {
        if (this.said.has(key)) {
            return [];
        }
        this.said.add(key);
        return [{ politeness, text }];
    }

    private finish(): Announcement[] {
        const done = this.streaming;
        this.streaming = undefined;
        if (done === undefined) {
            return [];
        }
        const text = plainText(done.text);
        return text === '' ? [] : this.once(done.key, 'polite', text);
    }
}

/** The two visually hidden live regions (made once, at start-up, so they are live before use). */
export class LiveRegions {
    private readonly polite: HTMLElement;
    private readonly assertive: HTMLElement;

    constructor(doc: Document) {
        const region = (politeness: 'polite' | 'assertive', id: string): HTMLElement => {
            const el = doc.createElement('div');
            el.id = id;
            el.className = 'sr-only';
            el.setAttribute('aria-live', politeness);
            el.setAttribute('aria-atomic', 'false');
            if (politeness === 'assertive') {
                el.setAttribute('role', 'alert');
            }
            doc.body.append(el);
            return el;
        };
        this.polite = region('polite', 'announce-polite');
        this.assertive = region('assertive', 'announce-assertive');
    }

    say(announcements: readonly Announcement[]): void {
        for (const a of announcements) {
            const el = a.politeness === 'assertive' ? this.assertive : this.polite;
            // Each announcement its own node (an addition is what is said; a repeated text is said
            // again); only the last few stay.
            const line = el.ownerDocument.createElement('div');
            line.textContent = a.text;
            el.append(line);
            while (el.childElementCount > 5) {
                el.firstElementChild?.remove();
            }
        }
    }
}
