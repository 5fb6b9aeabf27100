/**
 * The Health panel (`retrace.showHealth`): one editor-area webview panel (shown again if already
 * open) drawing the server's `retrace/health/get` with Chart.js (dist/webview/health.js, one
 * nonce'd script under a strict CSP; Chart.js needs no eval and no inline style sheet). It asks
 * again on Refresh and, at most every REFRESH_EVERY_MS, after the server announces a checkpoint or a
 * moved head (`retrace/timeline/didChange`). The webview's clicks come back as messages: a slowest
 * checkpoint is shown in the timeline, the storage banner's fixes are the alert's own.
 */
import * as vscode from 'vscode';
import type { Ctx } from '../../ctx';
import { METHODS } from '../../client/protocol';
import { errorMessage, log } from '../../logging';
import { isHealthWebviewMessage, type HealthHostMessage, type HealthWebviewMessage } from '../../webview/healthModel';
import { openRetentionSettings, runGarbageCollection } from './storageFixes';
import { webviewHtml } from './webviewPage';
import { webviewText } from '../models/webviewStrings';
import { escapeHtml } from '../../webview/strings';

export const HEALTH_VIEW_TYPE = 'retrace.health';
/** The least time between two refreshes caused by the server's notifications. */
export const REFRESH_EVERY_MS = 2000;

export interface HealthActions {
    /** Show a checkpoint (the timeline selects it and its changes open). */
    openCheckpoint(checkpointId: string, sessionId: string): Promise<void>;
}

export class HealthPanel implements vscode.Disposable {
    private panel: vscode.WebviewPanel | undefined;
    private ready = false;
    private timer: NodeJS.Timeout | undefined;
    private lastRefresh = 0;
    private readonly disposables: vscode.Disposable[] = [];

    constructor(
        private readonly ctx: Ctx,
        private readonly extensionUri: vscode.Uri,
        private readonly actions: HealthActions,
    ) {
        this.disposables.push(
            ctx.onTimelineChange(() => this.scheduleRefresh()),
            ctx.onDidChangeState(s => s.kind === 'running' && this.scheduleRefresh()),
        );
    }

    /** Whether the panel is open (tests). */
    get isOpen(): boolean {
        return this.panel !== undefined;
    }

    show(): void {
        if (this.panel !== undefined) {
            this.panel.reveal();
            return;
        }
        const dist = vscode.Uri.joinPath(this.extensionUri, 'dist');
        const panel = vscode.window.createWebviewPanel(HEALTH_VIEW_TYPE, webviewText().healthTitle, vscode.ViewColumn.Active, {
            enableScripts: true,
            localResourceRoots: [dist],
            retainContextWhenHidden: true,
        });
        this.panel = panel;
        this.ready = false;
        panel.iconPath = vscode.Uri.joinPath(this.extensionUri, 'extension', 'media', 'retrace.svg');
        panel.webview.html = html(panel.webview, vscode.Uri.joinPath(dist, 'webview', 'health.js'));
        panel.webview.onDidReceiveMessage((m: unknown) => {
            if (isHealthWebviewMessage(m)) {
                void this.onMessage(m);
            } else {
                log.warn(`health: ignored malformed webview message ${JSON.stringify(m)}`);
            }
        });
        panel.onDidDispose(() => {
            this.panel = undefined;
            this.ready = false;
        });
    }

    private async onMessage(m: HealthWebviewMessage): Promise<void> {
        switch (m.type) {
            case 'ready':
                this.ready = true;
                return this.refresh();
            case 'refresh':
                return this.refresh();
            case 'openCheckpoint':
                return this.actions.openCheckpoint(m.checkpointId, m.sessionId).catch((err: unknown) => {
                    void vscode.window.showErrorMessage(vscode.l10n.t('Retrace: cannot show checkpoint {0}: {1}', m.checkpointId, errorMessage(err)));
                });
            case 'fix':
                if (m.fix === 'gc') {
                    await runGarbageCollection();
                    return this.refresh();
                }
                return openRetentionSettings();
        }
    }

    /** Ask the server and draw (the server starts if it is not running: opening the panel is using Retrace). */
    async refresh(): Promise<void> {
        if (this.panel === undefined || !this.ready) {
            return;
        }
        this.lastRefresh = Date.now();
        this.post({ type: 'loading' });
        try {
            const rpc = await this.ctx.ready();
            const view = await rpc.request(METHODS.healthGet, {});
            this.post({ type: 'health', view });
        } catch (err) {
            log.warn(`health: ${errorMessage(err)}`);
            this.post({ type: 'error', message: errorMessage(err) });
        }
    }

    /** A refresh soon, at most one every REFRESH_EVERY_MS (a turn makes many checkpoints). */
    private scheduleRefresh(): void {
        if (this.panel === undefined || this.timer !== undefined) {
            return;
        }
        const wait = Math.max(0, this.lastRefresh + REFRESH_EVERY_MS - Date.now());
        this.timer = setTimeout(() => {
            this.timer = undefined;
            void this.refresh();
        }, wait);
    }

    private post(message: HealthHostMessage): void {
        if (this.panel !== undefined && this.ready) {
            void this.panel.webview.postMessage(message);
        }
    }

    dispose(): void {
        clearTimeout(this.timer);
        this.panel?.dispose();
        for (const d of this.disposables) {
            d.dispose();
        }
    }
}

function html(webview: vscode.Webview, script: vscode.Uri): string {
    const text = webviewText();
    const h = (s: string): string => escapeHtml(s);
    return webviewHtml(webview, {
        title: text.healthTitle,
        text,
        lang: vscode.env.language,
        css: CSS,
        script,
        body: `<header>
  <h1>${h(text.healthHeading)}</h1>
  <span id="status" role="status" aria-live="polite"></span>
  <button id="refresh" type="button" class="secondary">${h(text.refresh)}</button>
</header>
<div id="banner" role="alert" hidden></div>
<div id="empty" class="empty" hidden>
  <p class="empty-title">${h(text.noCheckpointsYet)}</p>
  <p>${h(text.healthEmpty)}</p>
</div>
<main id="content" aria-label="${h(text.healthContent)}"></main>`,
    });
}

const CSS = `
body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground); padding: 12px 20px 24px; margin: 0; }
header { display: flex; align-items: center; gap: 12px; margin-bottom: 12px; }
h1 { font-size: 1.4em; font-weight: 600; margin: 0; flex: 1; }
h2 { font-size: 1.05em; font-weight: 600; margin: 0 0 8px; }
#status { color: var(--vscode-descriptionForeground); }
button { background: var(--vscode-button-background); color: var(--vscode-button-foreground); border: none; padding: 4px 12px; cursor: pointer; border-radius: 2px; font-family: inherit; font-size: inherit; }
button:hover { background: var(--vscode-button-hoverBackground); }
button.secondary { background: var(--vscode-button-secondaryBackground); color: var(--vscode-button-secondaryForeground); }
button:focus-visible, a:focus-visible { outline: 1px solid var(--vscode-focusBorder); outline-offset: 2px; }
.banner { display: flex; align-items: center; gap: 10px; padding: 8px 12px; margin-bottom: 12px; border-radius: 3px; border: 1px solid var(--vscode-inputValidation-warningBorder); background: var(--vscode-inputValidation-warningBackground); }
.banner.urgent { border-color: var(--vscode-inputValidation-errorBorder); background: var(--vscode-inputValidation-errorBackground); }
.banner-text { flex: 1; }
.empty { text-align: center; padding: 60px 20px; color: var(--vscode-descriptionForeground); }
.empty-title { font-size: 1.3em; color: var(--vscode-foreground); }
.tiles { display: grid; grid-template-columns: repeat(auto-fit, minmax(200px, 1fr)); gap: 12px; margin-bottom: 12px; }
.tile { border: 1px solid var(--vscode-editorWidget-border, var(--vscode-panel-border)); border-left-width: 4px; border-radius: 4px; padding: 10px 12px; background: var(--vscode-editorWidget-background); }
.tile.met, .tile.ok { border-left-color: var(--vscode-charts-green); }
.tile.missed, .tile.urgent { border-left-color: var(--vscode-charts-red); }
.tile.warning { border-left-color: var(--vscode-charts-yellow); }
.tile.unknown { border-left-color: var(--vscode-descriptionForeground); }
.tile-title { color: var(--vscode-descriptionForeground); font-size: 0.92em; }
.tile-value { font-size: 1.8em; font-weight: 600; margin: 2px 0; }
.tile-detail { color: var(--vscode-descriptionForeground); font-size: 0.88em; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(380px, 1fr)); gap: 12px; }
.card { border: 1px solid var(--vscode-editorWidget-border, var(--vscode-panel-border)); border-radius: 4px; padding: 12px; background: var(--vscode-editorWidget-background); min-width: 0; }
.card.wide { grid-column: 1 / -1; }
.chart { position: relative; height: 240px; }
.card.wide .chart { height: 260px; }
.note { color: var(--vscode-descriptionForeground); margin: 8px 0 0; font-size: 0.92em; }
.target { margin-left: 10px; white-space: nowrap; }
.target.met::before { content: '✓'; color: var(--vscode-charts-green); }
.target.missed::before { content: '✗'; color: var(--vscode-charts-red); }
table.rows { width: 100%; border-collapse: collapse; }
table.rows th { text-align: left; color: var(--vscode-descriptionForeground); font-weight: 600; border-bottom: 1px solid var(--vscode-editorWidget-border, var(--vscode-panel-border)); padding: 4px 6px; }
table.rows td { padding: 4px 6px; border-bottom: 1px solid var(--vscode-editorWidget-border, transparent); }
table.rows .num { text-align: right; font-variant-numeric: tabular-nums; }
a.checkpoint-link { color: var(--vscode-textLink-foreground); font-family: var(--vscode-editor-font-family); text-decoration: none; }
a.checkpoint-link:hover { text-decoration: underline; color: var(--vscode-textLink-activeForeground); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 0; }
dl.facts dt { color: var(--vscode-descriptionForeground); }
dl.facts dd { margin: 0; }
.sr-only { position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
`;
