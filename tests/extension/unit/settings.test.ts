import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { allowsPopup, normaliseSettings } from '../../../extension/src/settings';
import { highlightRange, attribute } from '../../../extension/src/diff/inlineDecorations';
import { formatBytes } from '../../../extension/src/views/statusItem';
import { sampleTimeline } from './fixtures';

suite('settings and small helpers', () => {
    test('client-only keys stay home; empty strings travel as null', () => {
        const s = normaliseSettings({ pythonPath: '/x/python', notifications: 'always', model: 'm', baseUrl: '', permissions: { write: 'auto', command: 'ask' } });
        assert.deepEqual(s, { model: 'm', baseUrl: null, permissions: { write: 'auto', command: 'ask' } });
    });

    test('pop-up gate', () => {
        const table: [Parameters<typeof allowsPopup>[0], 'error' | 'warning' | 'info', boolean][] = [
            ['off', 'error', false],
            ['onError', 'error', true],
            ['onError', 'warning', false],
            ['onWarning', 'warning', true],
            ['onWarning', 'info', false],
            ['always', 'info', true],
        ];
        for (const [level, severity, expected] of table) {
            assert.equal(allowsPopup(level, severity), expected, `${level}/${severity}`);
        }
    });

    test('every setting the brief names is contributed with a default', () => {
        const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '../../../package.json'), 'utf8')) as {
            contributes: { configuration: { properties: Record<string, { default?: unknown }> } };
        };
        const props = pkg.contributes.configuration.properties;
        for (const key of [
            'pythonPath', 'model', 'baseUrl', 'maxTokens', 'permissions.write', 'permissions.command', 'retention.maxCheckpoints',
            'retention.maxAgeDays', 'retention.maxBytes', 'excludes', 'maxFileBytes', 'commandTimeoutSeconds', 'notifications',
        ]) {
            assert.ok(props[`retrace.${key}`], `retrace.${key} contributed`);
            assert.notEqual(props[`retrace.${key}`]?.default, undefined, `retrace.${key} has a default`);
        }
    });

    test('highlight ranges: last turn and since a checkpoint; attribution to the latest change', () => {
        const data = sampleTimeline();
        const last = highlightRange(data, { kind: 'lastTurn' });
        assert.equal(last?.from, 'c3');
        assert.deepEqual(last?.checkpoints.map(c => c.id), ['c4']);
        const since = highlightRange(data, { kind: 'since', checkpointId: 'base' });
        assert.equal(since?.from, 'base');
        assert.deepEqual(since?.checkpoints.map(c => c.id), ['c1', 'c2', 'c3', 'c4']);
        assert.ok(since);
        assert.equal(attribute(since, 'hello.txt')?.id, 'c4');
        assert.equal(attribute(since, 'src/app.py')?.id, 'c2');
        assert.equal(attribute(since, 'nope'), undefined);
        assert.equal(highlightRange(data, { kind: 'off' }), undefined);
        assert.equal(highlightRange(data, { kind: 'since', checkpointId: 'missing' }), undefined);
    });

    test('byte formatting', () => {
        assert.equal(formatBytes(512), '512 B');
        assert.equal(formatBytes(1536), '1.5 KB');
        assert.equal(formatBytes(3 * 1024 * 1024), '3.0 MB');
    });
});
