/**
 * What the command families are built from: the parts the composition root (`extension.ts`)
 * made, and what several families share (`CommandKit`: the target rule and the restore hooks).
 */
import type { Ctx } from '../ctx';
import type { ChangeHighlighter } from '../diff/inlineDecorations';
import type { HunkLens } from '../diff/hunkLens';
import type { EditorStatePusher } from '../editorState/capture';
import type { BackgroundItem } from '../views/providers/backgroundItem';
import type { ChatViewProvider } from '../views/providers/chatView';
import type { FileHistoryProvider } from '../views/providers/fileHistoryProvider';
import type { HealthPanel } from '../views/providers/healthPanel';
import type { RemoteSessionsProvider } from '../views/providers/remoteSessions';
import type { TimelineProvider } from '../views/providers/timeline/provider';
import type { RestoreHooks } from './restoreHooks';
import type { Targets } from './targets';

export interface Parts {
    readonly ctx: Ctx;
    readonly timeline: TimelineProvider;
    readonly chat: ChatViewProvider;
    readonly highlighter: ChangeHighlighter;
    readonly hunkLens: HunkLens;
    readonly fileHistory: FileHistoryProvider;
    readonly background: BackgroundItem;
    readonly remoteSessions: RemoteSessionsProvider;
    readonly health: HealthPanel;
    readonly editorState: EditorStatePusher;
}

/** The parts plus what the families share. */
export interface CommandKit extends Parts {
    readonly targets: Targets;
    /** What a workspace restore refreshes: the timeline, the chat (conversation moved), highlights. */
    readonly hooks: RestoreHooks;
    /** Refresh what any restore moves (timeline, highlights). */
    readonly afterRestore: () => void;
}
