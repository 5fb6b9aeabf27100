/**
 * The chat transcript as data: agent events and the server's conversation view → chat items.
 * Pure (of `vscode` only `l10n`), unit-tested. `apply` returns the items that changed so the view posts only
 * those to the webview.
 */
import * as vscode from 'vscode';
import type { AgentEvent, ConversationView } from '../../client/protocol';
import { isAttachmentText, lastText, withAttachments } from '../../webview/composerModel';
import type { ChatItem, Decision, PermissionReviewView, ToolStatus } from '../../webview/messages';
import type { TurnUsage } from '../../webview/usageLine';

type JsonObject = { readonly [k: string]: unknown };

/** One line naming a tool call: `run_command: npm test`, `edit_file src/app.py`. */
export function toolSummary(tool: string, input: JsonObject): string {
    const str = (key: string): string | undefined => (typeof input[key] === 'string' ? (input[key]) : undefined);
    const command = str('command');
    if (command !== undefined) {
        // Only the first line fits a row; dropped lines are said, never silently hidden.
        const lines = command.split('\n');
        const more = lines.length - 1;
        const dropped = more === 1 ? vscode.l10n.t(' … (+1 more line)') : more > 1 ? vscode.l10n.t(' … (+{0} more lines)', more) : '';
        return `${tool}: ${lines[0] ?? ''}${dropped}`;
    }
    const target = str('path') ?? str('pattern') ?? str('glob');
    return target !== undefined ? `${tool} ${target}` : tool;
}

/** What the chat says when the server compacted the conversation (automatic compaction). */
/** A note Retrace adds to a prompt for the model ("[Retrace note: …]"), not something the user typed. */
export function isRetraceNote(text: string): boolean {
    return text.trimStart().startsWith('[Retrace note');
}

/** How the chat shows such a note: a system line, without the brackets meant for the model. */
export function retraceNoteText(text: string): string {
    const body = text.trim().replace(/^\[Retrace note:?\s*/, '').replace(/\]$/, '');
    return vscode.l10n.t('Retrace told the model: {0}', body);
}

export function compactionNotice(e: Extract<AgentEvent, { kind: 'contextCompacted' }>): string {
    const n = (x: number): string => x.toLocaleString('en-US');
    const messages = (x: number): string => (x === 1 ? vscode.l10n.t('1 message') : vscode.l10n.t('{0} messages', n(x)));
    const summarized =
        e.summarizedMessages === 1
            ? vscode.l10n.t('so {0} was summarized for the model; the newest {1} stay as they were. ', messages(e.summarizedMessages), messages(e.keptMessages))
            : vscode.l10n.t('so {0} were summarized for the model; the newest {1} stay as they were. ', messages(e.summarizedMessages), messages(e.keptMessages));
    return (
        vscode.l10n.t("Context compacted: the conversation neared the model's context window (~{0} of {1} tokens), ", n(e.tokensBefore), n(e.contextWindow)) +
        summarized +
        vscode.l10n.t('Nothing is deleted: restoring a checkpoint from before brings the whole conversation back.')
    );
}

/** Stop reasons of a turn that did not finish its work: its prompt gets a Retry action. */
const FAILED_STOPS = new Set(['error', 'cancelled', 'interrupted']);

export class ChatTranscript {
    private items: ChatItem[] = [];
    private running = false;
    /** Each live turn's usage so far (the server's sums), shown when the turn ends. */
    private readonly turnUsage = new Map<string, TurnUsage>();

    get all(): readonly ChatItem[] {
        return this.items;
    }

    get isRunning(): boolean {
        return this.running;
    }

    /** The server is gone: no turn runs; tool calls shown as running were interrupted. */
    stopRunning(): void {
        this.running = false;
        this.items = this.items.map(i => (i.kind === 'tool' && i.status === 'running' ? { ...i, status: 'interrupted' } : i));
    }

    clear(): void {
        this.items = [];
        this.running = false;
    }

    /** Position of the item with this kind and id (-1: none); searched from the newest end. */
    indexOf(item: Pick<ChatItem, 'kind' | 'id'>): number {
        for (let i = this.items.length - 1; i >= 0; i--) {
            const x = this.items[i];
            if (x !== undefined && x.id === item.id && x.kind === item.kind) {
                return i;
            }
        }
        return -1;
    }

    /**
     * The newest `limit` items and how many earlier ones are not shown: a conversation of
     * thousands of tool calls opens as its tail (the webview renders what it is sent).
     */
    window(limit: number): { readonly items: readonly ChatItem[]; readonly earlier: number } {
        const earlier = Math.max(0, this.items.length - Math.max(0, limit));
        return { items: this.items.slice(earlier), earlier };
    }

    private upsert(item: ChatItem): ChatItem {
        const i = this.indexOf(item);
        if (i >= 0) {
            this.items[i] = item;
        } else {
            this.items.push(item);
        }
        return item;
    }

    /** Apply a live agent event; returns the changed items. */
    apply(e: AgentEvent): ChatItem[] {
        // A kind this client does not know (a newer server) changes nothing.
        const handle = this.handlers[e.kind] as ((e: AgentEvent) => ChatItem[]) | undefined;
        return handle?.(e) ?? [];
    }

    /** One handler per event kind (the mapped type makes a new kind a compile error here). */
    private readonly handlers: { readonly [K in AgentEvent['kind']]: (e: EventOf<K>) => ChatItem[] } = {
        turnStarted: e => {
            this.running = true;
            return [this.upsert({ kind: 'user', id: `turn:${e.turnId ?? this.items.length}`, text: e.text, ...withAttachments(e.attachments), ...(e.turnId ? { prompt: e.turnId } : {}) })];
        },
        textDelta: e => {
            const last = this.items[this.items.length - 1];
            if (last?.kind === 'assistant') {
                return [this.upsert({ ...last, text: last.text + e.text })];
            }
            return [this.upsert({ kind: 'assistant', id: `text:${this.items.length}`, text: e.text })];
        },
        toolCallStarted: e => [this.upsert({ kind: 'tool', id: e.toolCallId, tool: e.tool, summary: toolSummary(e.tool, e.input), status: 'running', output: '' })],
        toolCallFinished: e => {
            const existing = this.items.find(x => x.kind === 'tool' && x.id === e.toolCallId);
            const summary = existing?.kind === 'tool' ? existing.summary : e.tool;
            const checkpoint = existing?.kind === 'tool' && existing.checkpoint !== undefined ? { checkpoint: existing.checkpoint } : {};
            return [this.upsert({ kind: 'tool', id: e.toolCallId, tool: e.tool, summary, status: e.status, output: e.output, ...checkpoint })];
        },
        permissionRequest: e => [this.upsert({ kind: 'permission', id: e.requestId, tool: e.tool, summary: toolSummary(e.tool, e.input), decision: undefined })],
        // A retry is progress, not a failure: shown as a notice, never in error red.
        error: e =>
            e.retrying
                ? [this.upsert({ kind: 'notice', id: `retry:${this.items.length}`, text: vscode.l10n.t('{0} (retrying…)', e.message) })]
                : [this.upsert({ kind: 'error', id: `error:${this.items.length}`, text: e.message })],
        turnFinished: e => this.turnFinished(e),
        contextCompacted: e => [this.upsert({ kind: 'notice', id: `compacted:${e.checkpointId}`, text: compactionNotice(e) })],
        checkpointCreated: e => {
            const call = e.checkpoint.kind === 'tool' ? this.items.find(i => i.kind === 'tool' && i.id === e.checkpoint.toolCallId) : undefined;
            return call?.kind === 'tool' ? [this.upsert({ ...call, checkpoint: e.checkpoint.id })] : [];
        },
        usage: e => {
            if (e.turnId !== null && e.turn !== null) {
                this.turnUsage.set(e.turnId, e.turn);
            }
            return [];
        },
        conversationChanged: () => [],
        backgroundTask: () => [],
        taskProgress: () => [], // a subagent's progress shows in the timeline's running row
    };

    /** The turn ended: running calls were cancelled, a failed prompt gets Retry, its usage shows. */
    private turnFinished(e: EventOf<'turnFinished'>): ChatItem[] {
        this.running = false;
        const changed: ChatItem[] = [];
        for (const item of this.items) {
            if (item.kind === 'tool' && item.status === 'running') {
                changed.push(this.upsert({ ...item, status: 'cancelled' }));
            }
        }
        const prompt = this.items.find(i => i.kind === 'user' && i.id === `turn:${e.turnId}`);
        if (prompt?.kind === 'user' && FAILED_STOPS.has(e.stopReason)) {
            changed.push(this.upsert({ ...prompt, failed: e.stopReason }));
        }
        if (e.stopReason === 'cancelled') {
            changed.push(this.upsert({ kind: 'notice', id: `notice:${this.items.length}`, text: vscode.l10n.t('Cancelled.') }));
        }
        const usage = this.turnUsage.get(e.turnId ?? '');
        if (usage !== undefined) {
            changed.push(this.upsert({ kind: 'usage', id: `usage:${e.turnId ?? ''}`, usage }));
        }
        return changed;
    }

    /** A permission prompt (server request) and, later, its answer. */
    permission(requestId: string, tool: string, summary: string, decision: Decision | undefined, review?: PermissionReviewView): ChatItem {
        return this.upsert(review === undefined ? { kind: 'permission', id: requestId, tool, summary, decision } : { kind: 'permission', id: requestId, tool, summary, decision, review });
    }

    /** Replace the transcript with the server's conversation (after a restore, a reconnect or on
     * startup): the running state is the server's, never a leftover of a dead connection. */
    load(view: ConversationView): void {
        this.running = view.running;
        this.items = conversationItems(view);
    }
}

type EventOf<K extends AgentEvent['kind']> = Extract<AgentEvent, { kind: K }>;
type Message = ConversationView['messages'][number];
type Block = Message['content'][number];

/** The chat items of the server's conversation view, in order. */
export function conversationItems(view: ConversationView): ChatItem[] {
    const items: ChatItem[] = [];
    const withdrawn = view.withdrawn ?? [];
    const failedAfter = (after: string | null): void => {
        for (const w of withdrawn.filter(x => x.after === after)) {
            items.push({ kind: 'user', id: `withdrawn:${w.messageId}`, text: w.text, failed: w.reason });
        }
    };
    failedAfter(null);
    const results = toolResults(view);
    const lastOfTurn = lastMessageOfTurn(view);
    view.messages.forEach((m, index) => {
        const last = index === view.messages.length - 1;
        m.content.forEach((block, j) => {
            const item = textItem(m, block, j) ?? toolItem(view, block, results, last && view.running);
            if (item !== undefined) {
                items.push(item);
            }
        });
        const usage = m.turnId !== null && m.turnId !== undefined && lastOfTurn.get(m.turnId) === m.id ? view.turnUsage[m.turnId] : undefined;
        if (usage !== undefined && !(view.running && last)) {
            items.push({ kind: 'usage', id: `usage:${m.turnId ?? ''}`, usage });
        }
        failedAfter(m.id);
    });
    return items;
}

type ToolResult = { readonly isError: boolean; readonly output: string };

/** Every tool result of the conversation by its `tool_use_id`. */
function toolResults(view: ConversationView): Map<string, ToolResult> {
    const results = new Map<string, ToolResult>();
    for (const block of view.messages.flatMap(m => m.content)) {
        if (block['type'] === 'tool_result' && typeof block['tool_use_id'] === 'string') {
            results.set(block['tool_use_id'], { isError: block['is_error'] === true, output: resultText(block['content']) });
        }
    }
    return results;
}

/** The id of each turn's last message (where its usage line goes). */
function lastMessageOfTurn(view: ConversationView): Map<string, string> {
    const lastOfTurn = new Map<string, string>();
    for (const m of view.messages) {
        if (m.turnId !== null && m.turnId !== undefined) {
            lastOfTurn.set(m.turnId, m.id);
        }
    }
    return lastOfTurn;
}

/** A text block as a chat item; undefined for another block, blank text or an attachment. */
function textItem(m: Message, block: Block, j: number): ChatItem | undefined {
    const text = blockText(block);
    if (text === undefined || (m.kind === 'prompt' && isAttachmentText(text))) {
        return undefined; // an attachment is shown as the prompt's "attached" line
    }
    return textAs(m, `${m.id}:${j}`, text, m.kind === 'prompt' && j === lastText(m.content));
}

/** The text of a text block that says something. */
function blockText(block: Block): string | undefined {
    const text = block['type'] === 'text' && typeof block['text'] === 'string' ? block['text'] : '';
    return text.trim() === '' ? undefined : text;
}

/** `ownWords`: the prompt's last text, what the user typed. */
function textAs(m: Message, id: string, text: string, ownWords: boolean): ChatItem {
    // A note Retrace told the model is a notice; the prompt's own words stay the user's even
    // when they happen to look like one.
    if (m.role === 'user' && isRetraceNote(text) && !ownWords) {
        return { kind: 'notice', id, text: retraceNoteText(text) };
    }
    if (m.kind === 'summary') {
        return { kind: 'notice', id, text: vscode.l10n.t('Summary: {0}', text) };
    }
    if (m.role === 'user') {
        return { kind: 'user', id, text, ...(ownWords ? { ...withAttachments(m.attachments), prompt: m.id } : {}) };
    }
    return { kind: 'assistant', id, text };
}

/** A `tool_use` block as a chat item (its result and status joined); undefined for another block. */
function toolItem(view: ConversationView, block: Block, results: Map<string, ToolResult>, stillRunning: boolean): ChatItem | undefined {
    const id = block['id'];
    const name = block['name'];
    if (block['type'] !== 'tool_use' || typeof id !== 'string' || typeof name !== 'string') {
        return undefined;
    }
    const input = typeof block['input'] === 'object' && block['input'] !== null ? (block['input'] as JsonObject) : {};
    const result = results.get(id);
    const status = toolStatus(view.toolStatuses[id], result, stillRunning);
    const checkpoint = view.toolCheckpoints[id];
    return { kind: 'tool', id, tool: name, summary: toolSummary(name, input), status, output: result?.output ?? '', ...(checkpoint === undefined ? {} : { checkpoint }) };
}

const KNOWN_STATUSES: ReadonlySet<string> = new Set<ToolStatus>(['ok', 'error', 'denied', 'interrupted', 'cancelled']);

/** The server's journaled status wins; without one the call still runs (last message of a
 * running turn) or was cut off. */
function toolStatus(journaled: string | undefined, result: { isError: boolean } | undefined, stillRunning: boolean): ToolStatus {
    if (journaled !== undefined && KNOWN_STATUSES.has(journaled)) {
        return journaled as ToolStatus;
    }
    if (result !== undefined) {
        return result.isError ? 'error' : 'ok';
    }
    return stillRunning ? 'running' : 'interrupted';
}

function resultText(content: unknown): string {
    if (typeof content === 'string') {
        return content;
    }
    if (Array.isArray(content)) {
        return content
            .map((b: unknown) => (typeof b === 'object' && b !== null && 'text' in b && typeof (b).text === 'string' ? (b as { text: string }).text : ''))
            .join('');
    }
    return '';
}
