/**
 * The command table (`commands/index.ts`): every command id registered exactly once, by one
 * family; every command the manifest contributes is registered; server-backed commands are the
 * ones that need the server. Pure: building the table runs no command.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { COMMANDS } from '../../../extension/src/constants';
import { allCommands, type Parts } from '../../../extension/src/commands/index';

const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', '..', 'package.json'), 'utf8')) as {
    contributes: { commands: { command: string }[] };
};

/** Parts the table only captures (no command runs, so nothing of them is used). */
const parts = { ctx: {}, timeline: {}, chat: {}, highlighter: {}, hunkLens: {}, fileHistory: {}, background: {}, remoteSessions: {}, health: {}, editorState: {} } as unknown as Parts;

/** Commands that work without a server: they open, restart or configure it, or only touch the UI. */
const LOCAL = new Set<string>([
    COMMANDS.open,
    COMMANDS.tryDemo,
    COMMANDS.chooseLanguageModel,
    COMMANDS.chooseModelProvider,
    COMMANDS.newSession,
    COMMANDS.restartServer,
    COMMANDS.installServer,
    COMMANDS.showLogs,
    COMMANDS.setApiKey,
    COMMANDS.remoteSetCredentials,
    COMMANDS.timelineReveal,
    COMMANDS.decorationsLastTurn,
    COMMANDS.decorationsClear,
    COMMANDS.showHealth,
    COMMANDS.fileHistoryTogglePin,
]);

/** Commands a view registers itself (the timeline's filter and jump-to-head title buttons). */
const REGISTERED_BY_VIEWS = new Set(['retrace.timeline.filter', 'retrace.timeline.clearFilter', 'retrace.timeline.jumpToHead']);

suite('the command table', () => {
    const table = allCommands(parts);
    const ids = table.map(r => r.id);

    test('every command id is registered exactly once', () => {
        const twice = ids.filter((id, i) => ids.indexOf(id) !== i);
        assert.deepEqual(twice, []);
        assert.deepEqual([...ids].sort(), Object.values(COMMANDS).sort());
    });

    test('every command the manifest contributes is registered', () => {
        const registered = new Set<string>([...ids, ...REGISTERED_BY_VIEWS]);
        assert.deepEqual(
            manifest.contributes.commands.map(c => c.command).filter(c => !registered.has(c)),
            [],
        );
        assert.deepEqual(ids.filter(id => REGISTERED_BY_VIEWS.has(id)), [], 'a command is registered by the table or by its view, never both');
    });

    test('only the commands that open, restart or configure the server (or touch the UI only) run without it', () => {
        const local = table.filter(r => 'local' in r).map(r => r.id);
        assert.deepEqual(local.sort(), [...LOCAL].sort());
    });
});
