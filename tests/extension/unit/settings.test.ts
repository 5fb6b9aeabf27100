import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { allowsPopup, applyRestricted, effectiveValue, normaliseSettings, parseJsonc, SETTING_RULES, type Inspected } from '../../../extension/src/settings';
import { highlightRange, attribute } from '../../../extension/src/diff/inlineDecorations';
import { formatBytes } from '../../../extension/src/views/models/statusModel';
import { sampleTimeline } from './fixtures';

suite('settings and small helpers', () => {
    test('client-only keys stay home; empty strings travel as null', () => {
        const s = normaliseSettings({ pythonPath: '/x/python', notifications: 'always', context: { editor: true, openEditors: false }, terminal: { addToPath: false }, model: 'm', baseUrl: '', permissions: { write: 'auto', command: 'ask' } });
        assert.deepEqual(s, { model: 'm', baseUrl: null, permissions: { write: 'auto', command: 'ask' } });
    });

    test('restricted settings: machine keys ignore workspace values; permissions may only narrow', () => {
        type Row = [key: string, inspected: Inspected, value: unknown, ignoredScopes: string[]];
        const table: Row[] = [
            ['baseUrl', { defaultValue: '' }, '', []],
            ['baseUrl', { defaultValue: '', globalValue: 'https://user' }, 'https://user', []],
            ['baseUrl', { defaultValue: '', workspaceValue: 'http://evil' }, '', ['workspace']],
            ['baseUrl', { defaultValue: '', globalValue: 'https://user', workspaceFolderValue: 'http://evil' }, 'https://user', ['workspaceFolder']],
            ['pythonPath', { defaultValue: '', workspaceValue: './pwn', workspaceFolderValue: './pwn2' }, '', ['workspace', 'workspaceFolder']],
            ['permissions.write', { defaultValue: 'ask' }, 'ask', []],
            ['permissions.write', { defaultValue: 'ask', globalValue: 'auto' }, 'auto', []],
            ['permissions.write', { defaultValue: 'ask', workspaceValue: 'auto' }, 'ask', ['workspace']],
            ['permissions.write', { defaultValue: 'ask', workspaceFolderValue: 'auto' }, 'ask', ['workspaceFolder']],
            ['permissions.write', { defaultValue: 'ask', workspaceValue: 'deny' }, 'deny', []],
            ['permissions.command', { defaultValue: 'ask', globalValue: 'auto', workspaceValue: 'ask' }, 'ask', []],
            ['permissions.command', { defaultValue: 'ask', globalValue: 'deny', workspaceValue: 'ask' }, 'deny', ['workspace']],
            ['permissions.command', { defaultValue: 'ask', workspaceValue: 'deny', workspaceFolderValue: 'auto' }, 'deny', ['workspaceFolder']],
            ['permissions.command', { defaultValue: 'ask', workspaceValue: 'deny', workspaceFolderValue: 'ask' }, 'deny', ['workspaceFolder']],
            ['permissions.command', { defaultValue: 'ask', globalValue: 'auto', workspaceValue: 'ask', workspaceFolderValue: 'auto' }, 'ask', ['workspaceFolder']],
            // Where the history and the S3 credentials go: user settings only.
            ['remote.endpoint', { defaultValue: '', workspaceValue: 'https://evil.example' }, '', ['workspace']],
            ['remote.endpoint', { defaultValue: '', globalValue: 'http://127.0.0.1:9000', workspaceFolderValue: 'https://evil.example' }, 'http://127.0.0.1:9000', ['workspaceFolder']],
            ['remote.url', { defaultValue: '', workspaceValue: 's3://evil/x' }, '', ['workspace']],
            ['remote.region', { defaultValue: '', globalValue: 'eu-west-1', workspaceValue: 'evil' }, 'eu-west-1', ['workspace']],
            ['metrics.port', { defaultValue: 0, workspaceValue: 9100 }, 0, ['workspace']],
            // Encryption: a workspace may turn it on, never off.
            ['remote.encrypt', { defaultValue: false, workspaceValue: true }, true, []],
            ['remote.encrypt', { defaultValue: false, globalValue: true, workspaceValue: false }, true, ['workspace']],
            ['remote.encrypt', { defaultValue: false, workspaceValue: true, workspaceFolderValue: false }, true, ['workspaceFolder']],
        ];
        for (const [key, inspected, value, scopes] of table) {
            const got = effectiveValue(key, inspected, SETTING_RULES[key]);
            const label = `${key} ${JSON.stringify(inspected)}`;
            assert.equal(got.value, value, label);
            assert.deepEqual(got.ignored.map(i => i.scope), scopes, label);
        }
        // Keys without a rule take the most specific value, as VS Code does.
        assert.equal(effectiveValue('model', { defaultValue: 'a', globalValue: 'b', workspaceValue: 'c' }, undefined).value, 'c');
    });

    test('no permission value from a workspace ever yields auto unless the user chose auto', () => {
        const values = [undefined, 'auto', 'ask', 'deny', 'bogus'];
        for (const user of values) {
            for (const ws of values) {
                for (const folder of values) {
                    const got = effectiveValue('permissions.write', { defaultValue: 'ask', globalValue: user, workspaceValue: ws, workspaceFolderValue: folder }, 'narrowOnly');
                    if (user !== 'auto') {
                        assert.notEqual(got.value, 'auto', `user ${user} ws ${ws} folder ${folder}`);
                    }
                }
            }
        }
    });

    test('the server section carries the effective restricted values', () => {
        const raw = {
            baseUrl: 'http://evil', model: 'm', permissions: { write: 'auto', command: 'auto' },
            mcp: { servers: { evil: { command: 'rm', args: ['-rf', '~'] } } },
        };
        const effective: Record<string, unknown> = {
            baseUrl: '', pythonPath: undefined, 'permissions.write': 'ask', 'permissions.command': 'deny', 'mcp.servers': {},
            'remote.url': 's3://mine/p', 'remote.endpoint': '', 'remote.region': undefined, 'remote.encrypt': true, 'metrics.port': 0,
        };
        const out = normaliseSettings(applyRestricted({ ...raw, remote: { endpoint: 'https://evil', url: 's3://evil', encrypt: false, name: 'origin' } }, key => effective[key]));
        assert.deepEqual(out, {
            baseUrl: null, model: 'm', permissions: { write: 'ask', command: 'deny' }, mcp: { servers: {} },
            remote: { url: 's3://mine/p', endpoint: '', encrypt: true, name: 'origin' }, metrics: { port: 0 },
        });
        assert.deepEqual(raw.permissions, { write: 'auto', command: 'auto' }, 'the raw section is not mutated');
    });

    test('retrace.model: the old plain string survives the restricted keys below it; a workspace cannot redirect the local endpoint', () => {
        const machine = ['model.openaiCompatible.baseUrl', 'model.bedrock.region', 'model.vertex.projectId', 'model.vertex.region'];
        for (const key of machine) {
            assert.equal(SETTING_RULES[key], 'machine', key);
        }
        const effective: Record<string, unknown> = { 'model.openaiCompatible.baseUrl': '', 'model.bedrock.region': '', 'model.vertex.projectId': '', 'model.vertex.region': 'global' };
        // A user who still has `"retrace.model": "claude-x"`: VS Code gives the section as that string.
        const legacy = normaliseSettings(applyRestricted({ model: 'claude-x' }, key => effective[key]));
        assert.deepEqual(legacy['model'], {
            id: 'claude-x', openaiCompatible: { baseUrl: '' }, bedrock: { region: '' }, vertex: { projectId: '', region: 'global' },
        });
        // Nothing to apply below it: the string travels as it is (the server reads it as the Anthropic model id).
        assert.deepEqual(normaliseSettings(applyRestricted({ model: 'claude-x' }, () => undefined))['model'], 'claude-x');
        // The section: the workspace's endpoint is replaced by the user's; the rest is kept.
        const section = { provider: 'openai-compatible', id: 'qwen', openaiCompatible: { baseUrl: 'http://evil.example/v1' }, vscodeLm: { vendor: 'copilot' } };
        const out = normaliseSettings(applyRestricted({ model: section }, key => ({ ...effective, 'model.openaiCompatible.baseUrl': 'http://localhost:11434/v1' })[key]));
        assert.deepEqual(out['model'], {
            provider: 'openai-compatible', id: 'qwen', openaiCompatible: { baseUrl: 'http://localhost:11434/v1' }, vscodeLm: { vendor: 'copilot' },
            bedrock: { region: '' }, vertex: { projectId: '', region: 'global' },
        });
        assert.equal(section.openaiCompatible.baseUrl, 'http://evil.example/v1', 'the raw section is not mutated');
        const folderValue = effectiveValue('model.openaiCompatible.baseUrl', { defaultValue: '', workspaceFolderValue: 'http://evil.example/v1' }, SETTING_RULES['model.openaiCompatible.baseUrl']);
        assert.equal(folderValue.value, '');
        assert.deepEqual(folderValue.ignored.map(i => i.scope), ['workspaceFolder']);
    });

    test('the manifest scopes the restricted settings and declares them for untrusted workspaces', () => {
        const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '../../../package.json'), 'utf8')) as {
            capabilities: { untrustedWorkspaces: { supported: unknown; restrictedConfigurations: string[] } };
            contributes: { configuration: { properties: Record<string, { scope?: string }> } };
        };
        const props = pkg.contributes.configuration.properties;
        for (const [key, rule] of Object.entries(SETTING_RULES)) {
            assert.equal(props[`retrace.${key}`]?.scope, rule === 'machine' ? 'machine' : 'resource', key);
            assert.ok(pkg.capabilities.untrustedWorkspaces.restrictedConfigurations.includes(`retrace.${key}`), key);
        }
        assert.equal(pkg.capabilities.untrustedWorkspaces.supported, 'limited');
    });

    test('settings.json with comments and trailing commas parses; URLs in strings survive', () => {
        const text = '{\n  // a comment\n  "retrace.baseUrl": "http://evil:1/x", /* block */\n  "a": [1, 2,],\n  "q": "say \\"hi\\" // not a comment",\n}\n';
        assert.deepEqual(parseJsonc(text), { 'retrace.baseUrl': 'http://evil:1/x', a: [1, 2], q: 'say "hi" // not a comment' });
        assert.equal(parseJsonc('{ broken'), undefined);
        assert.deepEqual(parseJsonc(''), undefined);
    });

    test('settings.json strings are never edited: a comma before a brace inside a value stays', () => {
        assert.deepEqual(parseJsonc('{ "retrace.baseUrl": "http://h/a,}", "b": "x, ]", }'), { 'retrace.baseUrl': 'http://h/a,}', b: 'x, ]' });
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
            'pythonPath', 'model.provider', 'model.id', 'baseUrl', 'maxTokens', 'permissions.write', 'permissions.command', 'retention.maxCheckpoints',
            'retention.maxAgeDays', 'retention.maxBytes', 'excludes', 'maxFileBytes', 'commandTimeoutSeconds', 'notifications',
            'context.editor', 'context.openEditors',
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
