/**
 * Every command, registered once: one line per command family, each family a module under
 * `commands/` returning its registrations (`registry.ts`: server-backed ones say so while the
 * server is down instead of failing obscurely; local ones work without it). Tree commands receive
 * the clicked node; tests may pass a checkpoint id instead (`targets.ts`).
 */
import type { Ctx } from '../ctx';
import { appCommands } from './appCommands';
import { bookmarkCommands } from './bookmarks';
import { chatCommands } from './chatCommands';
import { checkpointCommands } from './checkpointCommands';
import { fileHistoryCommands } from './fileHistory';
import { showStorageAlert } from './health';
import { hunkCommands } from './hunks';
import { modelProviderCommands } from './modelProvider';
import type { CommandKit, Parts } from './parts';
import { registerAll, type Registration } from './registry';
import { remoteCommands } from './remote';
import { restoreCommands } from './restoreCommands';
import { Targets } from './targets';
import { taskCommands } from './tasks';
import { viewCommands } from './viewCommands';

export type { Parts } from './parts';

/** The parts and what the families share: the target rule and the restore hooks. */
function kitOf(parts: Parts): CommandKit {
    const { timeline, chat, highlighter, editorState } = parts;
    const afterRestore = (): void => {
        timeline.scheduleRefresh();
        highlighter.schedule();
    };
    const hooks = {
        // The editor's dirty buffers reach the server now, not after the push's debounce.
        beforeRestore: (): Promise<void> => editorState.push(),
        onConversationRestored: (): void => void chat.reload(),
        onRestored: (): void => afterRestore(),
    };
    return { ...parts, targets: new Targets(timeline), hooks, afterRestore };
}

/** Every command of the extension, family by family. */
export function allCommands(parts: Parts): Registration[] {
    const kit = kitOf(parts);
    const { ctx, timeline, targets } = kit;
    return [
        ...restoreCommands(kit),
        ...checkpointCommands(kit),
        ...hunkCommands({ lens: kit.hunkLens, hooks: kit.hooks, afterRestore: kit.afterRestore, head: () => timeline.head, rowTarget: (rpc, arg) => targets.row(rpc, arg) }),
        ...bookmarkCommands({ rowTarget: (rpc, arg) => targets.row(rpc, arg), rowOf: (id, folder) => timeline.rowOf(id, folder), refresh: () => timeline.scheduleRefresh() }),
        ...taskCommands(timeline, () => kit.highlighter.schedule()),
        ...fileHistoryCommands({ fileHistory: kit.fileHistory, head: () => timeline.head, hooks: kit.hooks }),
        ...remoteCommands(ctx, timeline, () => void kit.remoteSessions.refresh()),
        ...modelProviderCommands(ctx),
        ...chatCommands(kit),
        ...viewCommands(kit),
        ...appCommands(kit),
    ];
}

export function registerCommands(parts: Parts): void {
    const ctx: Ctx = parts.ctx;
    ctx.extension.subscriptions.push(ctx.onStorageAlert(alert => void showStorageAlert(alert)));
    registerAll(ctx, allCommands(parts));
}
