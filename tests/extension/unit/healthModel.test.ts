import * as assert from 'node:assert/strict';
import type { HealthView } from '../../../extension/src/client/protocol';
import { histogramChart, isHealthWebviewMessage, paletteFrom, reasonsChart, reasonsSummary, storageBanner, storageChart, verdict, withAlpha } from '../../../extension/src/webview/healthModel';

const MIB = 1024 * 1024;

function view(over: Partial<HealthView> = {}): HealthView {
    const latency = { title: 'Restore latency', samples: 0, buckets: [], p50Seconds: null, p95Seconds: null, p99Seconds: null, targets: [], summary: 'No samples yet' };
    return {
        workspace: '/w',
        empty: false,
        storage: { points: [{ ts: 1_700_000_000, bytes: 50 * MIB }, { ts: 1_700_000_060, bytes: 85 * MIB }], usedBytes: 85 * MIB, budgetBytes: 100 * MIB, warningBytes: 80 * MIB, urgentBytes: 90 * MIB, ratio: 0.85, alert: 'warning', byKind: {}, percentText: '85 %', summary: '85.0 MiB of 100.0 MiB (85 %)' },
        capture: { ...latency, title: 'Capture latency' },
        restore: latency,
        success: { attempts: 0, failures: 0, ratio: null, target: 0.999, met: null, valueText: '—', text: 'No checkpoint yet' },
        restoresByReason: [
            { key: 'wrongApproach', label: 'Wrong approach', count: 2 },
            { key: 'none', label: 'No reason given', count: 0 },
        ],
        restoresByMode: [],
        conflictsByResolution: [],
        slowest: [],
        checkpointsPerTurnP50: null,
        lockRefusals: 0,
        subagentPeakRssBytes: null,
        remotes: [],
        facts: [],
        ...over,
    };
}

const dark: Record<string, string> = { '--vscode-foreground': ' #cccccc', '--vscode-charts-blue': '#3794ff', '--vscode-font-size': '13px', '--vscode-font-family': 'system-ui' };
const light: Record<string, string> = { '--vscode-foreground': '#3b3b3b', '--vscode-charts-blue': '#1a85ff', '--vscode-font-size': '14px' };

suite('health panel model', () => {
    test('the palette follows the theme variables, with fallbacks', () => {
        const d = paletteFrom(n => dark[n] ?? '');
        const l = paletteFrom(n => light[n] ?? '');
        assert.equal(d.foreground, '#cccccc');
        assert.equal(l.foreground, '#3b3b3b');
        assert.notEqual(d.blue, l.blue);
        assert.equal(d.fontSize, 13);
        assert.equal(l.fontSize, 14);
        assert.equal(l.fontFamily, 'sans-serif');
        assert.equal(paletteFrom(() => '').red, '#f14c4c');
    });

    test('colours get an alpha; other colour syntaxes are left alone', () => {
        assert.equal(withAlpha('#3794ff', 0.5), 'rgba(55, 148, 255, 0.5)');
        assert.equal(withAlpha('#fff', 0.2), 'rgba(255, 255, 255, 0.2)');
        assert.equal(withAlpha('#3794ffcc', 0.2), 'rgba(55, 148, 255, 0.2)');
        assert.equal(withAlpha('rgb(1, 2, 3)', 0.2), 'rgb(1, 2, 3)');
    });

    test('storage: used over time, then the budget and the 90 % / 80 % lines, dashed, in MiB', () => {
        const c = storageChart(view(), paletteFrom(n => dark[n] ?? ''));
        assert.equal(c.type, 'line');
        assert.deepEqual(c.data.datasets.map(d => d.label), ['Used', 'Budget', '90 % (urgent)', '80 % (warning)']);
        assert.deepEqual(c.data.datasets[0]?.data, [50, 85]);
        assert.deepEqual(c.data.datasets[1]?.data, [100, 100]);
        assert.deepEqual(c.data.datasets[3]?.data, [80, 80]);
        assert.ok(c.data.datasets.slice(1).every(d => Array.isArray(d.borderDash) && d.borderDash.length === 2));
        assert.equal(c.data.labels?.length, 2);
        const none = storageChart(view({ storage: { ...view().storage, budgetBytes: 0 } }), paletteFrom(() => ''));
        assert.deepEqual(none.data.datasets.map(d => d.label), ['Used']);
    });

    test('histograms and reasons draw the server buckets and labels as given, in theme colours', () => {
        const latency = { ...view().restore, buckets: [{ low: 0, high: 0.05, label: '≤ 50 ms', count: 3 }, { low: 0.05, high: null, label: '> 50 ms', count: 1 }] };
        const p = paletteFrom(n => light[n] ?? '');
        const h = histogramChart(latency, p.purple, p);
        assert.deepEqual(h.data.labels, ['≤ 50 ms', '> 50 ms']);
        assert.deepEqual(h.data.datasets[0]?.data, [3, 1]);
        assert.equal(h.options?.color, '#3b3b3b');
        const r = reasonsChart(view(), p);
        assert.equal(r.options?.indexAxis, 'y');
        assert.deepEqual(r.data.labels, ['Wrong approach', 'No reason given']);
        assert.equal(reasonsSummary(view()), 'Wrong approach 2');
        assert.equal(reasonsSummary(view({ restoresByReason: [] })), 'no restore yet');
    });

    test('banner from 80 %, verdicts, message guard', () => {
        assert.deepEqual(storageBanner(view()), { level: 'warning', text: 'Checkpoint storage is filling up: 85.0 MiB of 100.0 MiB (85 %).' });
        assert.equal(storageBanner(view({ storage: { ...view().storage, alert: 'ok' } })), undefined);
        assert.equal(storageBanner(view({ storage: { ...view().storage, alert: 'urgent' } }))?.level, 'urgent');
        assert.deepEqual([verdict(true), verdict(false), verdict(null)], ['met', 'missed', 'unknown']);
        assert.ok(isHealthWebviewMessage({ type: 'openCheckpoint', checkpointId: 'a', sessionId: 's' }));
        assert.ok(isHealthWebviewMessage({ type: 'fix', fix: 'gc' }));
        assert.ok(!isHealthWebviewMessage({ type: 'fix', fix: 'rm -rf' }));
        assert.ok(!isHealthWebviewMessage({ type: 'openCheckpoint', checkpointId: 1 }));
        assert.ok(!isHealthWebviewMessage(null));
    });
});
