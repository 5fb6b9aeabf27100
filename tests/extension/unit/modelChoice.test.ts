import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
    choicesOfArg,
    checkBaseUrl,
    checkCloudName,
    choiceOfProvider,
    LOCAL_DEFAULT_BASE_URL,
    modelSummary,
    orderChoices,
    settingWrites,
} from '../../../extension/src/views/models/modelChoice';

const root = path.join(__dirname, '../../..');
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as {
    contributes: {
        configuration: { properties: Record<string, { scope?: string }> };
        commands: { command: string }[];
        viewsWelcome: { contents: string; when: string }[];
        walkthroughs: { steps: { id: string; description: string }[] }[];
    };
    capabilities: { untrustedWorkspaces: { restrictedConfigurations: string[] } };
};
const nls = JSON.parse(fs.readFileSync(path.join(root, 'package.nls.json'), 'utf8')) as Record<string, string>;
const text = (s: string): string => (s.startsWith('%') && s.endsWith('%') ? (nls[s.slice(1, -1)] ?? s) : s);

/** The arguments of the `retrace.chooseModelProvider` links of a manifest text, in order. */
function choiceLinks(contents: string): unknown[] {
    return [...contents.matchAll(/\(command:retrace\.chooseModelProvider\?([^)]*)\)/g)].map(m => (JSON.parse(decodeURIComponent(m[1] ?? '')) as unknown[])[0]);
}

suite('model provider choice', () => {
    test('least effort first: Copilot when the editor offers its models, else the API key', () => {
        assert.deepEqual(orderChoices(2), ['copilot', 'anthropic', 'bedrock', 'vertex', 'local']);
        assert.deepEqual(orderChoices(1), ['copilot', 'anthropic', 'bedrock', 'vertex', 'local']);
        assert.deepEqual(orderChoices(0), ['anthropic', 'copilot', 'bedrock', 'vertex', 'local']);
        // Every choice is offered whatever the editor has: four groups, five entries.
        for (const n of [0, 1, 7]) {
            assert.equal(new Set(orderChoices(n)).size, 5);
        }
    });

    test('the current provider maps back to its choice; an unknown one to none', () => {
        const table: [unknown, string | undefined][] = [
            ['anthropic', 'anthropic'],
            ['vscode-lm', 'copilot'],
            ['bedrock', 'bedrock'],
            ['vertex', 'vertex'],
            ['openai-compatible', 'local'],
            ['openai', undefined],
            [undefined, undefined],
            [42, undefined],
        ];
        for (const [provider, choice] of table) {
            assert.equal(choiceOfProvider(provider), choice, String(provider));
        }
    });

    test('settings written for each choice: provider last, the other provider’s model id cleared', () => {
        assert.deepEqual(settingWrites({ choice: 'anthropic' }), [
            ['model.id', undefined],
            ['model.provider', 'anthropic'],
        ]);
        assert.deepEqual(settingWrites({ choice: 'bedrock', id: ' us.anthropic.claude-sonnet-4-5-20250929-v1:0 ', region: 'eu-west-1', profile: '' }), [
            ['model.bedrock.region', 'eu-west-1'],
            ['model.bedrock.profile', undefined],
            ['model.id', 'us.anthropic.claude-sonnet-4-5-20250929-v1:0'],
            ['model.provider', 'bedrock'],
        ]);
        assert.deepEqual(settingWrites({ choice: 'vertex', id: 'claude-sonnet-4-5@20250929', projectId: 'my-proj', region: 'global' }), [
            ['model.vertex.projectId', 'my-proj'],
            ['model.vertex.region', 'global'],
            ['model.id', 'claude-sonnet-4-5@20250929'],
            ['model.provider', 'vertex'],
        ]);
        assert.deepEqual(settingWrites({ choice: 'local', baseUrl: 'http://localhost:11434/v1/', id: 'qwen2.5-coder:14b' }), [
            ['model.openaiCompatible.baseUrl', 'http://localhost:11434/v1/'],
            ['model.id', 'qwen2.5-coder:14b'],
            ['model.provider', 'openai-compatible'],
        ]);
        for (const writes of [
            settingWrites({ choice: 'anthropic' }),
            settingWrites({ choice: 'bedrock', id: 'x', region: '', profile: 'p' }),
            settingWrites({ choice: 'vertex', id: 'x', projectId: '', region: '' }),
            settingWrites({ choice: 'local', baseUrl: LOCAL_DEFAULT_BASE_URL, id: 'm' }),
        ]) {
            assert.equal(writes[writes.length - 1]?.[0], 'model.provider', 'the provider is switched once its settings are in place');
        }
    });

    test('a local endpoint must be an http(s) URL; the error names the problem', () => {
        assert.equal(checkBaseUrl(LOCAL_DEFAULT_BASE_URL), undefined);
        assert.equal(checkBaseUrl('https://vllm.internal:8000/v1'), undefined);
        for (const bad of ['', '   ', 'localhost:11434', 'ftp://h/x', 'http://', 'file:///etc/passwd', 'javascript:alert(1)', 'http://a b/']) {
            assert.ok(checkBaseUrl(bad), `refused: ${JSON.stringify(bad)}`);
        }
    });

    test('regions, profiles and project ids: empty allowed (the standard chain decides), no spaces or slashes', () => {
        for (const ok of ['', 'eu-west-1', 'us-east5', 'global', 'my-project-123', 'dev.profile_1']) {
            assert.equal(checkCloudName(ok), undefined, ok);
        }
        for (const bad of ['eu west', 'a/b', 'x\ny', 'http://evil', 'a'.repeat(200)]) {
            assert.ok(checkCloudName(bad), JSON.stringify(bad));
        }
    });

    test('status summary: the active provider and model from the section the client holds', () => {
        assert.equal(modelSummary(undefined), 'Anthropic API · default model');
        assert.equal(modelSummary({ provider: 'anthropic', id: '' }), 'Anthropic API · default model');
        assert.equal(modelSummary('claude-opus-4-1'), 'Anthropic API · claude-opus-4-1', 'the old plain-string setting');
        assert.equal(modelSummary({ provider: 'bedrock', id: 'us.anthropic.x', bedrock: { region: 'eu-west-1' } }), 'Amazon Bedrock (eu-west-1) · us.anthropic.x');
        assert.equal(modelSummary({ provider: 'vertex', id: 'claude@1', vertex: { region: 'global' } }), 'Google Vertex AI (global) · claude@1');
        assert.equal(modelSummary({ provider: 'vscode-lm', id: '', vscodeLm: { vendor: 'copilot' } }), 'VS Code language models (copilot) · picked in the editor');
        assert.equal(
            modelSummary({ provider: 'openai-compatible', id: 'qwen', openaiCompatible: { baseUrl: 'http://localhost:11434/v1' } }),
            'OpenAI-compatible (http://localhost:11434/v1) · qwen',
        );
        assert.equal(modelSummary({ provider: 'bedrock', id: '' }), 'Amazon Bedrock · no model set');
        assert.equal(
            modelSummary({ provider: 'openai-compatible', id: 'm', openaiCompatible: { baseUrl: 'https://user:secret@llm.example/v1?key=abc' } }),
            'OpenAI-compatible (https://llm.example/v1) · m',
            'no password or query string in a tooltip',
        );
        assert.equal(modelSummary({ provider: 'nonsense' }), 'unknown provider "nonsense"');
    });

    test('a link argument names the choices it offers; anything else offers them all', () => {
        assert.deepEqual(choicesOfArg('copilot', 0), ['copilot']);
        assert.deepEqual(choicesOfArg('anthropic', 3), ['anthropic']);
        assert.deepEqual(choicesOfArg('cloud', 0), ['bedrock', 'vertex']);
        assert.deepEqual(choicesOfArg('local', 0), ['local']);
        assert.deepEqual(choicesOfArg('vertex', 0), ['vertex']);
        for (const other of [undefined, '', 'nope', 42, {}, ['copilot'], 'constructor', '__proto__']) {
            assert.deepEqual(choicesOfArg(other, 1), orderChoices(1), JSON.stringify(other));
        }
    });

    test('manifest: the welcome views and the walkthrough offer the four choices, least effort first', () => {
        const welcome = manifest.contributes.viewsWelcome.filter(v => v.when.includes("retrace.modelMode == 'noKey'"));
        const withCopilot = welcome.find(v => /(^|&& )retrace\.copilotModels/.test(v.when));
        const without = welcome.find(v => v.when.includes('!retrace.copilotModels'));
        assert.ok(withCopilot && without, 'one welcome for each: Copilot models offered or not');
        assert.deepEqual(choiceLinks(text(withCopilot.contents)), ['copilot', 'anthropic', 'cloud', 'local']);
        assert.deepEqual(choiceLinks(text(without.contents)), ['anthropic', 'copilot', 'cloud', 'local']);
        const step = manifest.contributes.walkthroughs[0]?.steps.find(s => s.id === 'chooseModel');
        assert.ok(step, 'the walkthrough has the choice');
        assert.deepEqual(new Set(choiceLinks(text(step.description))), new Set(['copilot', 'anthropic', 'cloud', 'local']));
        for (const arg of ['copilot', 'anthropic', 'cloud', 'local']) {
            assert.notDeepEqual(choicesOfArg(arg, 0), orderChoices(0), `${arg} is understood by the command`);
        }
        assert.ok(manifest.contributes.commands.some(c => c.command === 'retrace.chooseModelProvider'));
    });

    test('manifest: every setting a choice writes is contributed; endpoints and regions are user settings only', () => {
        const props = manifest.contributes.configuration.properties;
        const restricted = new Set(manifest.capabilities.untrustedWorkspaces.restrictedConfigurations);
        const written = new Set(
            [
                settingWrites({ choice: 'anthropic' }),
                settingWrites({ choice: 'bedrock', id: 'x', region: 'r', profile: 'p' }),
                settingWrites({ choice: 'vertex', id: 'x', projectId: 'p', region: 'r' }),
                settingWrites({ choice: 'local', baseUrl: LOCAL_DEFAULT_BASE_URL, id: 'm' }),
            ].flatMap(w => w.map(([k]) => k)),
        );
        for (const key of written) {
            assert.ok(props[`retrace.${key}`], `retrace.${key} is contributed`);
        }
        assert.equal(props['retrace.model'], undefined, 'the old string setting is gone (a user value still reaches the server)');
        for (const key of ['model.openaiCompatible.baseUrl', 'model.bedrock.region', 'model.vertex.projectId', 'model.vertex.region']) {
            assert.equal(props[`retrace.${key}`]?.scope, 'machine', key);
            assert.ok(restricted.has(`retrace.${key}`), `${key} restricted in untrusted workspaces`);
        }
    });
});
