import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { AgentIntegrateResult } from '../../../extension/src/client/protocol';
import { AGENT_COMMANDS, integrateMessage, settingsName } from '../../../extension/src/commands/agents';

function result(over: Partial<AgentIntegrateResult>): AgentIntegrateResult {
    return {
        agent: 'claude-code',
        title: 'Claude Code',
        file: '/home/me/my project/.claude/settings.local.json',
        action: 'added',
        events: ['UserPromptSubmit', 'PreToolUse', 'PostToolUse', 'Stop'],
        command: "'/py' -P -m retrace hook claude-code --workspace \"${CLAUDE_PROJECT_DIR:-.}\"",
        notes: [],
        ...over,
    };
}

suite('agent integration commands', () => {
    test('each action says what happened to which file', () => {
        assert.match(integrateMessage(result({})), /every Claude Code tool call .* checkpoint .*\.claude\/settings\.local\.json/);
        assert.match(integrateMessage(result({ action: 'updated' })), /up to date again/);
        assert.match(integrateMessage(result({ action: 'removed' })), /no longer checkpointed.*other settings are kept/);
        assert.match(integrateMessage(result({ action: 'unchanged' })), /nothing to change/);
    });

    test("the agent's own notes are passed on", () => {
        const text = integrateMessage(result({ agent: 'gemini-cli', title: 'Gemini CLI', file: 'C:\\w\\.gemini\\settings.json', notes: ['hooksConfig.enabled is False: Gemini CLI runs no hooks until it is true'] }));
        assert.match(text, /\.gemini\/settings\.json/);
        assert.match(text, /Note: hooksConfig\.enabled is False/);
        assert.equal(settingsName('C:\\w\\.gemini\\settings.json'), '.gemini/settings.json');
    });

    test('every agent has a start and a stop command, each contributed for trusted workspaces only', () => {
        const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', '..', 'package.json'), 'utf8')) as {
            contributes: { commands: { command: string; title: string; enablement?: string }[]; menus: { commandPalette: { command: string; when: string }[] } };
        };
        const palette = new Map(manifest.contributes.menus.commandPalette.map(e => [e.command, e.when]));
        for (const agent of ['claude-code', 'gemini-cli'] as const) {
            assert.deepEqual(AGENT_COMMANDS.filter(c => c.agent === agent).map(c => c.remove).sort(), [false, true]);
        }
        for (const { command } of AGENT_COMMANDS) {
            const contributed = manifest.contributes.commands.find(c => c.command === command);
            assert.ok(contributed, command);
            assert.equal(contributed.enablement, 'isWorkspaceTrusted');
            assert.match(palette.get(command) ?? '', /isWorkspaceTrusted/, command);
        }
        const nls = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', '..', 'package.nls.json'), 'utf8')) as Record<string, string>;
        const titles = manifest.contributes.commands.map(c => nls[c.title.replace(/^%(.*)%$/, '$1')] ?? c.title);
        assert.ok(titles.includes('Checkpoint Claude Code in this workspace'));
        assert.ok(titles.includes('Checkpoint Gemini CLI in this workspace'));
    });
});
