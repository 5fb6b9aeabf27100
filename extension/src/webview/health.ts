/**
 * The Health panel's script (bundled for the browser into dist/webview/health.js). Draws the
 * server's `HealthView` with Chart.js (only the controllers, elements, scales and plugins used are
 * registered, so the bundle is tree-shaken) in the VS Code theme's colours, read from its CSS
 * variables and read again when the theme changes (the body's `vscode-light` / `vscode-dark` /
 * `vscode-high-contrast` class). Every chart has an aria-label in words and a visually hidden
 * table of its numbers. Text goes in as `textContent` only. After each draw the body carries
 * `data-rendered` (a draw count) and `data-chart-color` (the text colour the charts use).
 */
import { BarController, BarElement, CategoryScale, Chart, Filler, Legend, LinearScale, LineController, LineElement, PointElement, Tooltip, type ChartConfiguration, type ChartType } from 'chart.js';
import type { HealthView, LatencyHealth } from '../client/protocol';
import { el } from './dom';
import { histogramChart, paletteFrom, reasonsChart, reasonsSummary, storageBanner, storageChart, timeLabel, verdict, type HealthHostMessage, type HealthWebviewMessage, type Palette } from './healthModel';
import { fmt, S } from './strings';

Chart.register(LineController, LineElement, PointElement, BarController, BarElement, CategoryScale, LinearScale, Filler, Legend, Tooltip);

interface VsCodeApi {
    postMessage(message: HealthWebviewMessage): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const byId = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;
const content = byId<HTMLElement>('content');
const empty = byId<HTMLElement>('empty');
const banner = byId<HTMLElement>('banner');
const status = byId<HTMLElement>('status');
let charts: { destroy(): void }[] = [];
let current: HealthView | undefined;
let draws = 0;

function palette(): Palette {
    const style = getComputedStyle(document.documentElement);
    return paletteFrom(name => style.getPropertyValue(name));
}

/** A visually hidden table of a chart's numbers (the text alternative). */
function hiddenTable(caption: string, head: readonly [string, string], rows: readonly (readonly [string, string])[]): HTMLTableElement {
    const table = el('table', 'sr-only');
    table.append(el('caption', '', caption));
    const tr = el('tr', '');
    tr.append(el('th', '', head[0]), el('th', '', head[1]));
    table.append(tr);
    for (const [a, b] of rows) {
        const row = el('tr', '');
        row.append(el('td', '', a), el('td', '', b));
        table.append(row);
    }
    return table;
}

function card(title: string, cls = ''): HTMLElement {
    const section = el('section', `card ${cls}`.trim());
    section.append(el('h2', '', title));
    return section;
}

function chartCard<T extends ChartType>(title: string, summary: string, config: ChartConfiguration<T>, alternative: HTMLTableElement, cls = '', note?: HTMLElement): HTMLElement {
    const section = card(title, cls);
    const box = el('div', 'chart');
    const canvas = el('canvas', '');
    canvas.setAttribute('role', 'img');
    canvas.setAttribute('aria-label', `${title}: ${summary}`);
    box.append(canvas);
    section.append(box);
    if (note !== undefined) {
        section.append(note);
    }
    section.append(alternative);
    charts.push(new Chart<T>(canvas, config));
    return section;
}

function tile(title: string, value: string, detail: string, state: 'met' | 'missed' | 'unknown' | 'warning' | 'urgent' | 'ok'): HTMLElement {
    const box = el('div', `tile ${state}`);
    box.setAttribute('role', 'group');
    box.setAttribute('aria-label', `${title}: ${value}. ${detail}`);
    box.append(el('div', 'tile-title', title), el('div', 'tile-value', value), el('div', 'tile-detail', detail));
    return box;
}

const MARK = { met: S.onTarget, missed: S.offTarget, unknown: S.noDataYet } as const;

function tiles(view: HealthView): HTMLElement {
    const row = el('div', 'tiles');
    const s = view.success;
    row.append(tile(S.checkpointSuccess, s.valueText, `${s.text} · ${MARK[verdict(s.met)]}`, verdict(s.met)));
    for (const t of view.restore.targets) {
        row.append(tile(fmt(S.restoreQuantile, t.quantile), t.valueText, `${t.targetText} · ${MARK[verdict(t.met)]}`, verdict(t.met)));
    }
    row.append(tile(S.storage, view.storage.percentText, view.storage.summary, view.storage.alert));
    return row;
}

function latencyNote(latency: LatencyHealth): HTMLElement {
    const note = el('p', 'note', latency.summary);
    for (const t of latency.targets) {
        note.append(el('span', `target ${verdict(t.met)}`, ` ${t.text}`));
    }
    return note;
}

function latencyCard(latency: LatencyHealth, color: string, p: Palette): HTMLElement {
    const rows = latency.buckets.map(b => [b.label, String(b.count)] as const);
    return chartCard(latency.title, latency.summary, histogramChart(latency, color, p), hiddenTable(latency.title, [S.duration, S.count], rows), '', latencyNote(latency));
}

function slowestCard(view: HealthView): HTMLElement {
    const section = card(S.slowestCheckpoints, 'slowest');
    if (view.slowest.length === 0) {
        section.append(el('p', 'note', S.noCheckpointCaptured));
        return section;
    }
    const table = el('table', 'rows');
    const head = el('tr', '');
    head.append(el('th', '', S.checkpoint), el('th', '', S.kind), el('th', 'num', S.captureTime));
    table.append(head);
    for (const r of view.slowest) {
        const row = el('tr', '');
        const link = el('a', 'checkpoint-link', r.checkpointId.slice(0, 12));
        link.href = '#';
        link.title = fmt(S.showInTimeline, r.checkpointId);
        link.dataset['checkpointId'] = r.checkpointId;
        link.addEventListener('click', e => {
            e.preventDefault();
            vscode.postMessage({ type: 'openCheckpoint', checkpointId: r.checkpointId, sessionId: r.sessionId });
        });
        const cell = el('td', '');
        cell.append(link);
        row.append(cell, el('td', '', r.kindLabel), el('td', 'num', r.secondsText));
        table.append(row);
    }
    section.append(table);
    return section;
}

function factsCard(view: HealthView): HTMLElement {
    const section = card(S.otherNumbers);
    const list = el('dl', 'facts');
    for (const f of view.facts) {
        list.append(el('dt', '', f.label), el('dd', '', f.value));
    }
    section.append(list);
    return section;
}

function showBanner(view: HealthView): void {
    const b = storageBanner(view);
    banner.replaceChildren();
    banner.hidden = b === undefined;
    if (b === undefined) {
        return;
    }
    banner.className = `banner ${b.level}`;
    const gc = el('button', '', S.collectGarbage);
    gc.type = 'button';
    gc.addEventListener('click', () => vscode.postMessage({ type: 'fix', fix: 'gc' }));
    const settings = el('button', 'secondary', S.retentionSettings);
    settings.type = 'button';
    settings.addEventListener('click', () => vscode.postMessage({ type: 'fix', fix: 'retention' }));
    banner.append(el('span', 'banner-text', b.text), gc, settings);
}

function draw(): void {
    for (const c of charts) {
        c.destroy();
    }
    charts = [];
    content.replaceChildren();
    const view = current;
    if (view === undefined) {
        return;
    }
    showBanner(view);
    empty.hidden = !view.empty;
    content.hidden = view.empty;
    const p = palette();
    Chart.defaults.color = p.foreground;
    Chart.defaults.font.family = p.fontFamily;
    Chart.defaults.font.size = p.fontSize;
    if (!view.empty) {
        const s = view.storage;
        const storageRows = s.points.map(pt => [timeLabel(pt.ts), `${(pt.bytes / (1024 * 1024)).toFixed(2)} MiB`] as const);
        const grid = el('div', 'grid');
        grid.append(
            chartCard(S.storageOverTime, s.summary, storageChart(view, p), hiddenTable(S.storageOverTime, [S.time, S.used], storageRows), 'wide'),
            latencyCard(view.capture, p.blue, p),
            latencyCard(view.restore, p.purple, p),
            chartCard(S.restoresByReason, reasonsSummary(view), reasonsChart(view, p), hiddenTable(S.restoresByReason, [S.reason, S.restores], view.restoresByReason.map(r => [r.label, String(r.count)] as const))),
            slowestCard(view),
            factsCard(view),
        );
        content.append(tiles(view), grid);
    }
    draws += 1;
    document.body.dataset['rendered'] = String(draws);
    document.body.dataset['chartColor'] = p.foreground;
}

window.addEventListener('message', (e: MessageEvent<HealthHostMessage>) => {
    const m = e.data;
    switch (m.type) {
        case 'health':
            current = m.view;
            status.textContent = fmt(S.updatedAt, new Date().toLocaleTimeString());
            draw();
            return;
        case 'loading':
            status.textContent = S.updating;
            return;
        case 'error':
            status.textContent = fmt(S.couldNotUpdate, m.message);
            return;
    }
});

byId<HTMLButtonElement>('refresh').addEventListener('click', () => vscode.postMessage({ type: 'refresh' }));

// The theme is the body's class (and the variables on <html>): draw again in the new colours.
let theme = `${document.body.className}|${palette().foreground}`;
let pending = false;
const onThemeMaybe = (): void => {
    if (pending) {
        return;
    }
    pending = true;
    requestAnimationFrame(() => {
        pending = false;
        const now = `${document.body.className}|${palette().foreground}`;
        if (now !== theme) {
            theme = now;
            draw();
        }
    });
};
new MutationObserver(onThemeMaybe).observe(document.body, { attributes: true, attributeFilter: ['class'] });
new MutationObserver(onThemeMaybe).observe(document.documentElement, { attributes: true, attributeFilter: ['style'] });

vscode.postMessage({ type: 'ready' });
