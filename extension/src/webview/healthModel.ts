/**
 * The Health panel's pure part: its message protocol (extension ↔ webview), the theme palette read
 * from VS Code's CSS variables through a style-reader function, and the Chart.js configurations
 * made from the server's `HealthView`. Every number, bucket, percentile, label and verdict comes
 * from the server (`retrace/health/get`): this file only maps them onto charts and colours.
 * Unit-tested (tests/extension/unit/healthModel.test.ts).
 */
import type { ChartConfiguration } from 'chart.js';
import type { HealthView, LatencyHealth } from '../client/protocol';
import { fmt, S } from './strings';

/** Extension → webview. */
export type HealthHostMessage = { readonly type: 'health'; readonly view: HealthView } | { readonly type: 'error'; readonly message: string } | { readonly type: 'loading' };

/** Webview → extension. */
export type HealthWebviewMessage =
    | { readonly type: 'ready' }
    | { readonly type: 'refresh' }
    | { readonly type: 'openCheckpoint'; readonly checkpointId: string; readonly sessionId: string }
    | { readonly type: 'fix'; readonly fix: 'gc' | 'retention' };

export function isHealthWebviewMessage(m: unknown): m is HealthWebviewMessage {
    if (typeof m !== 'object' || m === null) {
        return false;
    }
    const r = m as Record<string, unknown>;
    switch (r['type']) {
        case 'ready':
        case 'refresh':
            return true;
        case 'openCheckpoint':
            return typeof r['checkpointId'] === 'string' && typeof r['sessionId'] === 'string';
        case 'fix':
            return r['fix'] === 'gc' || r['fix'] === 'retention';
        default:
            return false;
    }
}

export interface Palette {
    readonly foreground: string;
    readonly muted: string;
    readonly grid: string;
    readonly fontFamily: string;
    readonly fontSize: number;
    readonly blue: string;
    readonly red: string;
    readonly yellow: string;
    readonly orange: string;
    readonly green: string;
    readonly purple: string;
}

/** Reads one CSS custom property (`getComputedStyle(document.documentElement).getPropertyValue`). */
export type StyleReader = (name: string) => string;

const FALLBACK = {
    foreground: '#cccccc',
    muted: '#9d9d9d',
    grid: '#454545',
    blue: '#3794ff',
    red: '#f14c4c',
    yellow: '#cca700',
    orange: '#d18616',
    green: '#89d185',
    purple: '#b180d7',
};

/** The chart palette of the current theme (a missing variable falls back to a dark-theme colour). */
export function paletteFrom(read: StyleReader): Palette {
    const v = (name: string, fallback: string): string => read(name).trim() || fallback;
    const size = Number.parseFloat(read('--vscode-font-size'));
    return {
        foreground: v('--vscode-foreground', FALLBACK.foreground),
        muted: v('--vscode-descriptionForeground', FALLBACK.muted),
        grid: v('--vscode-editorWidget-border', FALLBACK.grid),
        fontFamily: v('--vscode-font-family', 'sans-serif'),
        fontSize: Number.isFinite(size) && size > 0 ? size : 13,
        blue: v('--vscode-charts-blue', FALLBACK.blue),
        red: v('--vscode-charts-red', FALLBACK.red),
        yellow: v('--vscode-charts-yellow', FALLBACK.yellow),
        orange: v('--vscode-charts-orange', FALLBACK.orange),
        green: v('--vscode-charts-green', FALLBACK.green),
        purple: v('--vscode-charts-purple', FALLBACK.purple),
    };
}

/** `#rgb` / `#rrggbb` (/ with alpha) at the given opacity; any other colour is returned as is. */
export function withAlpha(color: string, alpha: number): string {
    const m = /^#([0-9a-f]{3,8})$/i.exec(color.trim());
    if (m === null || m[1] === undefined) {
        return color;
    }
    let hex = m[1];
    if (hex.length === 3 || hex.length === 4) {
        hex = [...hex].map(c => c + c).join('');
    }
    if (hex.length !== 6 && hex.length !== 8) {
        return color;
    }
    const [r, g, b] = [0, 2, 4].map(i => Number.parseInt(hex.slice(i, i + 2), 16));
    return `rgba(${r}, ${g}, ${b}, ${alpha})`;
}

/** A storage point's time on the axis (the webview's locale and time zone). */
export function timeLabel(ts: number): string {
    const d = new Date(ts * 1000);
    return `${d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' })} ${d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })}`;
}

const MIB = 1024 * 1024;

/** Options every chart shares: theme colours and font, no animation (drawn at once, then marked). */
function common(p: Palette, aria: string): Record<string, unknown> & { plugins: Record<string, unknown> } {
    return {
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        color: p.foreground,
        font: { family: p.fontFamily, size: p.fontSize },
        plugins: { legend: { labels: { color: p.foreground, boxWidth: 14 } }, title: { display: false, text: aria } },
    };
}

function axis(p: Palette, title: string): Record<string, unknown> {
    return {
        ticks: { color: p.foreground, font: { family: p.fontFamily, size: p.fontSize - 1 } },
        grid: { color: withAlpha(p.grid, 0.6) },
        border: { color: p.grid },
        title: { display: title !== '', text: title, color: p.muted, font: { family: p.fontFamily, size: p.fontSize - 1 } },
    };
}

/** Storage over time against the budget, with the 80 % and 90 % lines dashed (MiB on the axis). */
export function storageChart(view: HealthView, p: Palette): ChartConfiguration<'line'> {
    const s = view.storage;
    const labels = s.points.map(pt => timeLabel(pt.ts));
    const flat = (bytes: number): number[] => s.points.map(() => bytes / MIB);
    const line = (label: string, bytes: number, color: string, dash: number[]) => ({
        label,
        data: flat(bytes),
        borderColor: color,
        backgroundColor: color,
        borderDash: dash,
        borderWidth: 1.5,
        pointRadius: 0,
        fill: false,
    });
    const datasets = [
        {
            label: S.used,
            data: s.points.map(pt => pt.bytes / MIB),
            borderColor: p.blue,
            backgroundColor: withAlpha(p.blue, 0.18),
            borderWidth: 2,
            pointRadius: s.points.length > 40 ? 0 : 3,
            fill: 'origin' as const,
        },
    ];
    const limits = s.budgetBytes > 0 ? [line(S.budget, s.budgetBytes, p.red, [6, 4]), line(S.urgentLine, s.urgentBytes, p.orange, [4, 4]), line(S.warningLine, s.warningBytes, p.yellow, [2, 3])] : [];
    const opts = common(p, s.summary);
    return {
        type: 'line',
        data: { labels, datasets: [...datasets, ...limits] },
        options: { ...opts, scales: { x: axis(p, ''), y: { ...axis(p, S.mib), beginAtZero: true } } },
    };
}

/** A latency histogram: one bar per server bucket. */
export function histogramChart(latency: LatencyHealth, color: string, p: Palette): ChartConfiguration<'bar'> {
    const opts = common(p, latency.summary);
    return {
        type: 'bar',
        data: {
            labels: latency.buckets.map(b => b.label),
            datasets: [{ label: S.count, data: latency.buckets.map(b => b.count), backgroundColor: withAlpha(color, 0.75), borderColor: color, borderWidth: 1 }],
        },
        options: { ...opts, plugins: { ...opts.plugins, legend: { display: false } }, scales: { x: axis(p, S.axisDuration), y: { ...axis(p, S.axisCount), beginAtZero: true, ticks: { ...(axis(p, '')['ticks'] as object), precision: 0 } } } },
    };
}

/** Restores by reason: horizontal bars in the server's order. */
export function reasonsChart(view: HealthView, p: Palette): ChartConfiguration<'bar'> {
    const rows = view.restoresByReason;
    const opts = common(p, S.restoresByReason);
    return {
        type: 'bar',
        data: { labels: rows.map(r => r.label), datasets: [{ label: S.restores, data: rows.map(r => r.count), backgroundColor: withAlpha(p.orange, 0.75), borderColor: p.orange, borderWidth: 1 }] },
        options: {
            ...opts,
            indexAxis: 'y',
            plugins: { ...opts.plugins, legend: { display: false } },
            scales: { x: { ...axis(p, S.axisRestores), beginAtZero: true, ticks: { ...(axis(p, '')['ticks'] as object), precision: 0 } }, y: axis(p, '') },
        },
    };
}

/** What the reasons chart says in words (its aria-label, after the chart's title). */
export function reasonsSummary(view: HealthView): string {
    const given = view.restoresByReason.filter(r => r.count > 0);
    return given.length === 0 ? S.noRestoreYet : given.map(r => `${r.label} ${r.count}`).join(', ');
}

export type Verdict = 'met' | 'missed' | 'unknown';

export function verdict(met: boolean | null): Verdict {
    return met === null ? 'unknown' : met ? 'met' : 'missed';
}

/** The storage banner (at 80 % and over), or undefined. */
export function storageBanner(view: HealthView): { readonly level: 'warning' | 'urgent'; readonly text: string } | undefined {
    const s = view.storage;
    if (s.alert === 'ok') {
        return undefined;
    }
    const head = s.alert === 'urgent' ? S.storageAlmostFull : S.storageFillingUp;
    return { level: s.alert, text: fmt(S.storageBanner, head, s.summary) };
}
