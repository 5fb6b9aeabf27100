/**
 * The Chat webview view: prompt box with history, streaming answer, collapsed tool calls with
 * status, Cancel, and permission prompts answered through the pending
 * `retrace/permission/request`. After a conversation restore the transcript is reloaded from
 * `retrace/conversation/get`. The webview runs one nonce'd script (dist/webview/chat.js) under a
 * strict CSP and uses VS Code theme variables only.
 */
import * as vscode from 'vscode';
import { VIEW_CHAT } from '../../constants';
import type { Ctx } from '../../ctx';
import { METHODS, type AgentEvent, type PermissionRequest, type PermissionResponse, type PromptResult } from '../../client/protocol';
import { errorMessage, log } from '../../logging';
import { chatBanner, isWebviewMessage, type ChatItem, type Decision, type HostMessage, type WebviewMessage } from '../../webview/messages';
import type { LogWebviewMessage } from '../../webview/logMessages';
import type { RestoreWebviewMessage } from '../../webview/restoreMessages';
import { onLogMessage } from './chatLogActions';
import { onRestoreMessage } from './chatRestore';
import { PROMPT_ACTIONS_CSS } from '../../webview/promptActionsStyle';
import { ChatTranscript } from '../models/chatModel';
import { LOG_CSS } from '../models/chatLogStyle';
import { ReviewDocuments, reviewView } from './permissionReview';
import { ContextFeed } from '../../context/contextFeed';
import { COMPOSER_CSS, composerHtml } from '../../webview/composerView';
import { failedPromptRef } from '../../webview/composerModel';
import { webviewHtml } from './webviewPage';
import { webviewText } from '../models/webviewStrings';
import { escapeHtml } from '../../webview/strings';

type MessageOf<K extends WebviewMessage['type']> = Extract<WebviewMessage, { type: K }>;

/** Chat items sent to the webview at first, and added per "Show earlier messages". */
export const CHAT_PAGE = 200;
/** Conversation messages fetched at first, and added when the webview wants more than were
 * fetched (the chat reloads after every turn: a long session is not sent whole each time). */
export const MESSAGE_PAGE = 2 * CHAT_PAGE;

export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
    private view: vscode.WebviewView | undefined;
    private ready = false;
    /** How many of the newest chat items the webview is sent (grows with "Show earlier messages"). */
    private shown = CHAT_PAGE;
    /** How many of the newest messages are fetched, and how many older ones the server has. */
    private fetched = MESSAGE_PAGE;
    private olderOnServer = 0;
    private readonly transcript = new ChatTranscript();
    private readonly pendingPermissions = new Map<string, { request: PermissionRequest; resolve: (r: PermissionResponse) => void }>();
    private readonly disposables: vscode.Disposable[] = [];
    private readonly reviews = new ReviewDocuments();
    private readonly contextFeed = new ContextFeed(editor => this.post({ type: 'context', editor }));
    private readonly sessionEmitter = new vscode.EventEmitter<string | undefined>();
    readonly onDidChangeSession = this.sessionEmitter.event;
    private session: string | undefined;

    constructor(
        private readonly ctx: Ctx,
        private readonly extensionUri: vscode.Uri,
    ) {
        this.disposables.push(
            vscode.window.registerWebviewViewProvider(VIEW_CHAT, this, { webviewOptions: { retainContextWhenHidden: true } }),
            this.sessionEmitter,
            this.reviews,
            this.contextFeed,
            ctx.onAgentEvent(e => this.onAgentEvent(e)),
            ctx.onDidChangeState(s => void this.onServerState(s.kind === 'running')),
            ctx.onDidChangeModelMode(() => this.postBanner()),
            vscode.workspace.onDidGrantWorkspaceTrust(() => this.postBanner()),
        );
    }

    /**
     * After every (re)connect the chat's running/idle state comes from the server (a turn that
     * died with a crashed server is not running any more); while the server is down nothing runs.
     */
    private async onServerState(running: boolean): Promise<void> {
        this.postServerState();
        if (!running) {
            this.transcript.stopRunning();
            for (const { resolve } of this.pendingPermissions.values()) {
                resolve({ decision: 'deny' });
            }
            this.pendingPermissions.clear();
            this.reset();
            return;
        }
        if (this.session === undefined) {
            await this.resumeLatestSession();
        } else {
            await this.reload();
        }
        this.post({ type: 'running', running: this.transcript.isRunning });
    }

    /** Whether the chat shows a running turn (tests compare it with the server's state). */
    get running(): boolean {
        return this.transcript.isRunning;
    }

    get sessionId(): string | undefined {
        return this.session;
    }

    get items(): readonly ChatItem[] {
        return this.transcript.all;
    }

    private setSession(id: string | undefined): void {
        if (id !== this.session) {
            this.session = id;
            this.shown = CHAT_PAGE;
            this.fetched = MESSAGE_PAGE;
            this.olderOnServer = 0;
            this.sessionEmitter.fire(id);
        }
    }

    resolveWebviewView(view: vscode.WebviewView): void {
        this.view = view;
        this.ready = false;
        void this.ctx.start(); // opening the chat is using Retrace (activation is lazy)
        const dist = vscode.Uri.joinPath(this.extensionUri, 'dist');
        view.webview.options = { enableScripts: true, localResourceRoots: [dist] };
        view.webview.html = this.html(view.webview, vscode.Uri.joinPath(dist, 'webview', 'chat.js'));
        this.disposables.push(
            view.webview.onDidReceiveMessage((m: unknown) => {
                if (isWebviewMessage(m)) {
                    void this.onMessage(m);
                } else {
                    log.warn(`chat: ignored malformed webview message ${JSON.stringify(m)}`);
                }
            }),
            view.onDidDispose(() => {
                this.view = undefined;
                this.ready = false;
            }),
        );
    }

    private html(webview: vscode.Webview, script: vscode.Uri): string {
        const text = webviewText();
        const h = (s: string): string => escapeHtml(s);
        return webviewHtml(webview, {
            title: text.chatTitle,
            text,
            lang: vscode.env.language,
            css: `${CSS}${LOG_CSS}${COMPOSER_CSS}${PROMPT_ACTIONS_CSS}`,
            script,
            body: `<div id="banner" role="note"></div>
<div id="status" role="status"></div>
<div id="log" role="log" aria-live="off" aria-label="${h(text.conversation)}"></div>
<form id="form">
  ${composerHtml(text)}
  <textarea id="prompt" rows="3" placeholder="${h(text.promptPlaceholder)}" aria-label="${h(text.prompt)}"></textarea>
  <div class="row">
    <button id="send" type="submit">${h(text.send)}</button>
    <button id="cancel" type="button" class="secondary" disabled>${h(text.cancel)}</button>
  </div>
</form>`,
        });
    }

    /** The banner for the server's model mode and the workspace's trust (none when live and trusted). */
    get banner(): ReturnType<typeof chatBanner> {
        return chatBanner(this.ctx.modelMode, vscode.workspace.isTrusted, webviewText());
    }

    private postBanner(): void {
        this.post({ type: 'banner', banner: this.banner });
    }

    private postServerState(): void {
        // A prompt sent while the server (re)starts waits for it (`send` awaits `ctx.ready()`):
        // a restart after trusting the folder or changing a setting never swallows what was typed.
        const s = this.ctx.serverState;
        const message =
            s.kind === 'failed'
                ? vscode.l10n.t('Server not running: {0}', s.reason)
                : s.kind === 'running'
                  ? ''
                  : vscode.l10n.t('Starting the Retrace server… (a prompt sent now runs once it is ready)');
        this.post({ type: 'serverState', accepting: s.kind !== 'failed', message });
    }

    private post(message: HostMessage): void {
        if (this.view !== undefined && this.ready) {
            void this.view.webview.postMessage(message);
        }
    }

    private reset(scroll: 'end' | 'start' = 'end'): void {
        const { items, earlier } = this.transcript.window(this.shown);
        this.post({ type: 'reset', items, earlier: earlier + this.olderOnServer, scroll, running: this.transcript.isRunning, session: this.session });
        for (const { request } of this.pendingPermissions.values()) {
            this.post({ type: 'upsert', item: this.transcript.permission(request.requestId, request.tool, request.summary, undefined, reviewView(request)) });
        }
    }

    private async onMessage(m: WebviewMessage): Promise<void> {
        const handle = this.handlers[m.type] as (m: WebviewMessage) => Promise<void> | void;
        await handle(m);
    }

    /** One handler per message the page sends (the mapped type makes a new one a compile error). */
    private readonly handlers: { readonly [K in WebviewMessage['type']]: (m: MessageOf<K>) => Promise<void> | void } = {
        ready: () => {
            this.ready = true;
            this.postBanner();
            this.postServerState();
            this.reset();
            this.contextFeed.postNow();
        },
        files: m => this.answerFiles(m.requestId, m.query),
        prompt: m => this.sendFromPage(() => this.send(m.text, m.includeEditor !== false)),
        retry: m => this.sendFromPage(() => this.send(m.text, false, failedPromptRef(m.of))),
        cancel: async () => {
            await this.cancel();
        },
        newSession: () => this.newSession(),
        showEarlier: () => this.showEarlier(),
        permission: m => {
            this.answer(m.requestId, m.decision);
        },
        showReview: m => this.reviews.show(m.requestId),
        command: async m => {
            await vscode.commands.executeCommand(m.command);
        },
        openLink: m => this.onLog(m),
        copy: m => this.onLog(m),
        toolDiff: m => this.onLog(m),
        openCheckpoint: m => this.onLog(m),
        restorePrompt: m => this.onRestore(m),
        restoreCheckpoint: m => this.onRestore(m),
        editResend: m => this.onRestore(m),
    };

    /** Run what the page asked; a refusal becomes an error line, and the page stops showing a turn
     * running (it marked itself running on submit; a refused prompt started nothing). */
    private async sendFromPage(run: () => Promise<unknown>): Promise<void> {
        try {
            await run();
        } catch (err) {
            this.post({ type: 'upsert', item: { kind: 'error', id: `error:${Date.now()}`, text: errorMessage(err) } });
            this.post({ type: 'running', running: this.transcript.isRunning });
        }
    }

    private async onLog(m: LogWebviewMessage): Promise<void> {
        await onLogMessage(this.ctx, m, reply => this.post(reply));
    }

    private async onRestore(m: RestoreWebviewMessage): Promise<void> {
        await this.sendFromPage(() => onRestoreMessage(this.ctx, m, { sessionId: this.session, send: text => this.send(text) }));
    }

    /** A longer tail of the conversation: from what was fetched, else older messages from the server. */
    private async showEarlier(): Promise<void> {
        this.shown += CHAT_PAGE;
        if (this.transcript.window(this.shown).earlier === 0 && this.olderOnServer > 0) {
            this.fetched += MESSAGE_PAGE;
            await this.reload('start'); // older messages than were fetched
        } else {
            this.reset('start');
        }
    }

    /** Send a prompt in the current session (a new one when there is none). */
    async send(text: string, includeEditor = true, retryOf?: string): Promise<PromptResult> {
        const rpc = await this.ctx.ready();
        const result = await rpc.request(METHODS.agentPrompt, ContextFeed.params(text, this.session, includeEditor, retryOf));
        this.setSession(result.sessionId);
        return result;
    }

    private async answerFiles(requestId: number, query: string): Promise<void> {
        const rpc = this.ctx.rpc;
        const paths = rpc === undefined ? [] : await ContextFeed.files(rpc, query).catch(() => []);
        this.post({ type: 'files', requestId, paths });
    }

    async cancel(): Promise<boolean> {
        const rpc = this.ctx.rpc;
        if (rpc === undefined || this.session === undefined) {
            return false;
        }
        const r = await rpc.request(METHODS.agentCancel, { sessionId: this.session });
        return r.cancelled;
    }

    newSession(): void {
        this.setSession(undefined);
        this.transcript.clear();
        this.reset();
    }

    private onAgentEvent(e: AgentEvent): void {
        // Another agent's turn (its hooks) has no Retrace conversation: the chat never adopts it.
        if (this.session === undefined && e.kind === 'turnStarted' && (e.agent ?? null) === null) {
            this.setSession(e.sessionId);
        }
        if (e.sessionId !== this.session) {
            return;
        }
        if (e.kind === 'conversationChanged') {
            void this.reload();
            return;
        }
        // Permission prompts are shown by the server request (which carries the summary).
        if (e.kind === 'permissionRequest') {
            return;
        }
        for (const item of this.transcript.apply(e)) {
            // An update of an item older than the shown tail stays out of the webview (it would
            // be appended at the end); the next "Show earlier messages" sends it as it is now.
            if (this.transcript.indexOf(item) >= this.transcript.all.length - this.shown) {
                this.post({ type: 'upsert', item });
            }
        }
        if (e.kind === 'turnStarted' || e.kind === 'turnFinished') {
            this.post({ type: 'running', running: this.transcript.isRunning });
        }
    }

    /** Ask the user (server request `retrace/permission/request`); resolves when a button is clicked. */
    askPermission(request: PermissionRequest): Promise<PermissionResponse> {
        return new Promise(resolve => {
            this.pendingPermissions.set(request.requestId, { request, resolve });
            this.reviews.remember(request);
            this.post({ type: 'upsert', item: this.transcript.permission(request.requestId, request.tool, request.summary, undefined, reviewView(request)) });
            void this.reveal();
        });
    }

    /** Answer a pending permission prompt (also used by tests). */
    answer(requestId: string, decision: Decision): boolean {
        const pending = this.pendingPermissions.get(requestId);
        if (pending === undefined) {
            return false;
        }
        this.pendingPermissions.delete(requestId);
        pending.resolve({ decision });
        this.post({ type: 'upsert', item: this.transcript.permission(requestId, pending.request.tool, pending.request.summary, decision, reviewView(pending.request)) });
        return true;
    }

    get pendingPermissionIds(): string[] {
        return [...this.pendingPermissions.keys()];
    }

    async reveal(): Promise<void> {
        if (this.view !== undefined) {
            this.view.show(true);
        } else {
            await vscode.commands.executeCommand(`${VIEW_CHAT}.focus`);
        }
    }

    /** Put a prompt a conversation restore left out back in the input (`restoredPrompt`). */
    offerPrompt(text: string | null | undefined): void {
        if (typeof text === 'string' && text !== '') {
            this.post({ type: 'setPrompt', text });
        }
    }

    /** Reload the conversation's newest messages from the server (after turns and restores). */
    async reload(scroll: 'end' | 'start' = 'end'): Promise<void> {
        const rpc = this.ctx.rpc;
        if (rpc === undefined || this.session === undefined) {
            return;
        }
        try {
            const view = await rpc.request(METHODS.conversationGet, { sessionId: this.session, limit: this.fetched });
            this.olderOnServer = view.messagesOmitted;
            this.transcript.load(view);
            this.reset(scroll);
        } catch (err) {
            log.error('reloading the conversation failed', err);
        }
    }

    /** Switch to a session (fork keeps the same one; the timeline may pick another). */
    async showSession(sessionId: string): Promise<void> {
        this.setSession(sessionId);
        await this.reload();
    }

    private async resumeLatestSession(): Promise<void> {
        const rpc = this.ctx.rpc;
        if (rpc === undefined || this.session !== undefined) {
            return;
        }
        try {
            const { sessions } = await rpc.request(METHODS.sessionList, {});
            // Another agent's session (the server names its agent) has no Retrace conversation to resume.
            const latest = [...sessions].filter(s => s.title !== '' && (s.agent ?? null) === null).sort((a, b) => (a.createdAt ?? '').localeCompare(b.createdAt ?? '')).pop();
            if (latest !== undefined && this.session === undefined) {
                await this.showSession(latest.id);
            }
        } catch (err) {
            log.warn(`session list unavailable: ${errorMessage(err)}`);
        }
    }

    dispose(): void {
        for (const { resolve } of this.pendingPermissions.values()) {
            resolve({ decision: 'deny' });
        }
        for (const d of this.disposables) {
            d.dispose();
        }
    }
}

const CSS = `
body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground); padding: 0 8px 8px; display: flex; flex-direction: column; height: 100vh; box-sizing: border-box; margin: 0; }
#log { flex: 1; overflow-y: auto; padding: 6px 0; }
#banner { border: 1px solid var(--vscode-inputValidation-infoBorder, var(--vscode-focusBorder)); background: var(--vscode-inputValidation-infoBackground, transparent); padding: 6px; margin-top: 6px; border-radius: 3px; }
#banner:empty { display: none; }
#banner .banner-text { margin-bottom: 4px; }
#banner .buttons { display: flex; gap: 6px; flex-wrap: wrap; }
#status { color: var(--vscode-descriptionForeground); font-style: italic; padding: 4px 0; }
#status:empty { display: none; }
.msg { margin: 6px 0; white-space: pre-wrap; word-wrap: break-word; line-height: 1.4; }
.user { background: var(--vscode-input-background); border-left: 3px solid var(--vscode-focusBorder); padding: 4px 8px; }
.user.failed { border-left-color: var(--vscode-inputValidation-warningBorder, var(--vscode-focusBorder)); }
.failed-row { display: flex; gap: 8px; align-items: center; margin-top: 4px; white-space: normal; }
.failed-note { color: var(--vscode-descriptionForeground); font-style: italic; flex: 1; }
.assistant { padding: 2px 0; }
.error { color: var(--vscode-errorForeground); }
.notice { color: var(--vscode-descriptionForeground); font-style: italic; }
details.tool { border: 1px solid var(--vscode-widget-border, var(--vscode-panel-border)); border-radius: 3px; padding: 2px 6px; margin: 4px 0; }
details.tool summary { cursor: pointer; font-family: var(--vscode-editor-font-family); font-size: 0.92em; }
details.tool pre { white-space: pre-wrap; max-height: 200px; overflow: auto; font-family: var(--vscode-editor-font-family); font-size: 0.9em; margin: 4px 0; }
.status-ok { color: var(--vscode-testing-iconPassed, var(--vscode-foreground)); }
.status-error, .status-denied, .status-interrupted { color: var(--vscode-errorForeground); }
.status-running { color: var(--vscode-progressBar-background); }
.permission { border: 1px solid var(--vscode-inputValidation-warningBorder); background: var(--vscode-inputValidation-warningBackground); padding: 6px; border-radius: 3px; }
.permission-heading { font-weight: 600; }
.permission-text { white-space: pre-wrap; word-break: break-all; max-height: 50vh; overflow: auto; font-family: var(--vscode-editor-font-family); font-size: 0.9em; margin: 4px 0; }
.permission-notice { font-weight: 600; color: var(--vscode-editorWarning-foreground); margin-top: 4px; }
.permission-command .cmd-line { border-left: 2px solid var(--vscode-inputValidation-warningBorder); padding-left: 6px; margin: 2px 0; }
.permission-command .cmd-operator { font-weight: 700; color: var(--vscode-editorWarning-foreground); }
.permission-command .cmd-substitution, .permission-command .cmd-redirection { font-weight: 600; text-decoration: underline; color: var(--vscode-editorWarning-foreground); }
.permission-command .cmd-comment, .permission-command .cmd-heredoc { opacity: 0.75; }
.permission-marker { display: block; background: none; border: none; padding: 0; color: var(--vscode-textLink-foreground); cursor: pointer; font-weight: 600; text-align: left; }
.permission .buttons { margin-top: 6px; display: flex; gap: 6px; flex-wrap: wrap; }
form { border-top: 1px solid var(--vscode-panel-border); padding-top: 6px; }
textarea { width: 100%; box-sizing: border-box; resize: vertical; background: var(--vscode-input-background); color: var(--vscode-input-foreground); border: 1px solid var(--vscode-input-border, transparent); font-family: inherit; font-size: inherit; padding: 4px; }
textarea:focus { outline: 1px solid var(--vscode-focusBorder); }
.row { display: flex; gap: 6px; margin-top: 6px; }
button { background: var(--vscode-button-background); color: var(--vscode-button-foreground); border: none; padding: 4px 12px; cursor: pointer; border-radius: 2px; }
button:hover { background: var(--vscode-button-hoverBackground); }
button.secondary { background: var(--vscode-button-secondaryBackground); color: var(--vscode-button-secondaryForeground); }
button.earlier { display: block; margin: 4px auto; }
button:disabled { opacity: 0.5; cursor: default; }
`;
