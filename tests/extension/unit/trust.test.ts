import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { anyStoreHasSessions, createDemoFolder, isDemoFolder, nextDemoName, storeHasSessions } from '../../../extension/src/commands/demo';
import { checkpointPicks, lineStats, MODE_PICKS } from '../../../extension/src/commands/restorePick';
import { DEMO_MARKER } from '../../../extension/src/constants';
import { BANNER_COMMANDS, chatBanner, isWebviewMessage } from '../../../extension/src/webview/messages';
import { checkpoint, file, sampleTimeline } from './fixtures';

interface Manifest {
    contributes: {
        commands: { command: string }[];
        menus: { commandPalette: { command: string; when: string }[]; 'view/item/context': { command: string; when: string }[] };
        keybindings: { command: string; when?: string }[];
        walkthroughs: { steps: { id: string; completionEvents: string[]; media: { markdown?: string } }[] }[];
        viewsWelcome: { view: string; when: string }[];
    };
}

const root = path.join(__dirname, '../../..');
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as Manifest;

suite('demo folder, restore pick, chat banner, palette', () => {
    test('demo folders are numbered, copied from the shipped sample and marked', async () => {
        assert.equal(nextDemoName([]), '1');
        assert.equal(nextDemoName(['1', '7', 'x', '3']), '8');
        const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'retrace-demo-'));
        try {
            const source = path.join(root, 'extension/media/demo-workspace');
            const first = await createDemoFolder(source, path.join(tmp, 'demo'));
            const second = await createDemoFolder(source, path.join(tmp, 'demo'));
            assert.deepEqual([path.basename(first), path.basename(second)], ['1', '2']);
            for (const folder of [first, second]) {
                assert.ok(fs.existsSync(path.join(folder, 'README.md')));
                assert.ok(fs.existsSync(path.join(folder, 'src', 'app.py')));
                assert.equal((JSON.parse(fs.readFileSync(path.join(folder, DEMO_MARKER), 'utf8')) as { demo: boolean }).demo, true);
                assert.ok(await isDemoFolder(folder));
            }
            assert.equal(await isDemoFolder(source), false, 'the shipped sample itself is no demo folder');
            assert.equal(await isDemoFolder(tmp), false);
        } finally {
            fs.rmSync(tmp, { recursive: true, force: true });
        }
    });

    test('a store has sessions only when its sessions folder holds one', async () => {
        const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'retrace-store-'));
        try {
            assert.equal(await storeHasSessions(path.join(tmp, 'missing')), false);
            fs.mkdirSync(path.join(tmp, 'sessions'));
            assert.equal(await storeHasSessions(tmp), false);
            fs.mkdirSync(path.join(tmp, 'sessions', 's1'));
            assert.equal(await storeHasSessions(tmp), true);
        } finally {
            fs.rmSync(tmp, { recursive: true, force: true });
        }
    });

    test('the folder has sessions when any known store (reported by the server, or the old place) holds one', async () => {
        const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'retrace-stores-'));
        try {
            const reported = path.join(tmp, 'home');
            const legacy = path.join(tmp, 'legacy');
            assert.equal(await anyStoreHasSessions([]), false);
            assert.equal(await anyStoreHasSessions([reported, legacy]), false);
            fs.mkdirSync(path.join(legacy, 'sessions', 's1'), { recursive: true });
            assert.equal(await anyStoreHasSessions([reported, legacy]), true, 'an old store not adopted yet');
            fs.rmSync(legacy, { recursive: true });
            fs.mkdirSync(path.join(reported, 'sessions', 's1'), { recursive: true });
            assert.equal(await anyStoreHasSessions([reported, legacy]), true, 'the adopted store at its home');
        } finally {
            fs.rmSync(tmp, { recursive: true, force: true });
        }
    });

    test('restore pick: newest first, head marked, stats, unrestorable left out', () => {
        const data = sampleTimeline();
        const broken = checkpoint({ id: 'bad', parent: 'c4', recoverability: 'none' });
        const picks = checkpointPicks({ ...data, checkpoints: [...data.checkpoints, broken] }, Date.now());
        assert.deepEqual(picks.map(p => p.checkpointId), [...data.checkpoints].reverse().map(c => c.id));
        const head = picks.find(p => p.checkpointId === data.head);
        assert.match(head?.description ?? '', /you are here/);
        assert.equal(picks.filter(p => p.description.includes('you are here')).length, 1);
        assert.equal(lineStats(checkpoint({ id: 'x', files: [file('a', 3, 1), file('b', 2, 0)] })), '+5 −1 · 2 files');
        assert.equal(lineStats(checkpoint({ id: 'y', files: [] })), 'no file changes');
        // A big file's lines are counted on request: its zeros are never shown as a figure.
        const big = { ...file('big.sql', 0, 0), counted: false };
        assert.equal(lineStats(checkpoint({ id: 'z', files: [file('a', 3, 1), big] })), '2 files · lines not counted yet');
        assert.deepEqual(MODE_PICKS.map(m => m.mode), ['code', 'conversation', 'both']);
    });

    test('chat banner: untrusted wins, demo says scripted, no key offers the fixes', () => {
        assert.equal(chatBanner('live', true), null);
        assert.equal(chatBanner(undefined, true), null);
        assert.equal(chatBanner('demo', true)?.text, 'Demo: the answers are scripted; nothing here is your project.');
        assert.deepEqual(chatBanner('noKey', true)?.actions.map(a => a.command), ['retrace.chooseModelProvider', 'retrace.tryDemo']);
        assert.deepEqual(chatBanner('demo', true)?.actions.map(a => a.command), ['retrace.chooseModelProvider']);
        for (const mode of ['live', 'demo', 'noKey', undefined] as const) {
            assert.deepEqual(chatBanner(mode, false)?.actions.map(a => a.command), ['workbench.trust.manage']);
        }
        assert.ok(isWebviewMessage({ type: 'command', command: 'retrace.tryDemo' }));
        assert.equal(isWebviewMessage({ type: 'command', command: 'workbench.action.terminal.new' }), false, 'a webview runs only banner commands');
        assert.ok(BANNER_COMMANDS.every(c => c.startsWith('retrace.') || c === 'workbench.trust.manage'));
    });

    test('manifest: palette and keys gated on trust, walkthrough wired, welcome views', () => {
        const declared = new Set(manifest.contributes.commands.map(c => c.command));
        for (const id of ['retrace.open', 'retrace.restoreToCheckpoint', 'retrace.tryDemo', 'retrace.undoLastRestore']) {
            assert.ok(declared.has(id), id);
        }
        const palette = new Map(manifest.contributes.menus.commandPalette.map(e => [e.command, e.when]));
        for (const id of ['retrace.restoreToCheckpoint', 'retrace.undoLastRestore', 'retrace.prompt']) {
            assert.match(palette.get(id) ?? '', /isWorkspaceTrusted/, id);
        }
        for (const entry of manifest.contributes.menus['view/item/context'].filter(e => /restore|fork|summarize/.test(e.command))) {
            assert.match(entry.when, /isWorkspaceTrusted/, entry.command);
        }
        const keys = new Map(manifest.contributes.keybindings.map(k => [k.command, k.when ?? '']));
        assert.ok(keys.has('retrace.open'));
        assert.match(keys.get('retrace.restoreToCheckpoint') ?? '', /isWorkspaceTrusted/);
        assert.match(keys.get('retrace.undoLastRestore') ?? '', /isWorkspaceTrusted/);
        const steps = manifest.contributes.walkthroughs[0]?.steps ?? [];
        assert.deepEqual(steps.slice(0, 2).map(s => s.completionEvents[0]), ['onCommand:retrace.tryDemo', 'onCommand:retrace.chooseModelProvider']);
        for (const step of steps) {
            assert.ok(fs.existsSync(path.join(root, step.media.markdown ?? '')), step.id);
        }
        assert.ok(manifest.contributes.viewsWelcome.some(v => v.when.includes("retrace.modelMode == 'noKey'")));
        assert.ok(manifest.contributes.viewsWelcome.some(v => v.when.includes('!isWorkspaceTrusted')));
    });
});
