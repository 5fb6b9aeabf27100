import * as assert from 'node:assert/strict';
import type { Checkpoint } from '../../../extension/src/client/protocol';
import { checkpointLabel } from '../../../extension/src/labels';
import { checkpoint } from './fixtures';

suite('checkpoint labels: one line per checkpoint, every kind', () => {
    const cases: [Checkpoint['kind'], string, string | null, string][] = [
        // kinds whose own label names them best
        ['tool', 'run_command: make\nmore', 'run_command', 'run_command: make'],
        ['tool', '', 'edit_file', 'edit_file'],
        ['tool', '', null, 'tool call'],
        ['manual', 'before the refactor', null, 'before the refactor'],
        ['manual', '', null, 'Mark'],
        ['summary', 'summary of 40 messages', null, 'summary of 40 messages'],
        ['summary', '', null, 'Summary'],
        ['background', 'background: npm run dev', null, 'background: npm run dev'],
        ['background', '', null, 'Background command'],
        // kinds named by what they are, whatever their label says
        ['baseline', 'baseline', null, 'Starting point'],
        ['external', 'external: 3 files', null, 'External changes'],
        ['safety', 'safety', null, 'Before restore'],
        ['restore', 'restore to c1', null, 'Restored code'],
    ];
    for (const [kind, label, tool, expected] of cases) {
        test(`${kind} labelled "${label.split('\n')[0] ?? ''}"`, () => {
            assert.equal(checkpointLabel(checkpoint({ id: 'x', kind, label, tool })), expected);
        });
    }

    test('a long label is cut to 60 characters, the cut said', () => {
        const long = checkpointLabel(checkpoint({ id: 'x', kind: 'tool', label: `run_command: ${'x'.repeat(100)}` }));
        assert.equal(long.length, 60);
        assert.ok(long.endsWith('…'));
    });
});
