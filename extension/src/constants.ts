/**
 * Every identifier the extension shares with package.json or the server, in one place:
 * view ids, command ids, context keys, the checkpoint URI scheme.
 */

export const EXTENSION_ID = 'retrace.retrace';
export const CONFIG_SECTION = 'retrace';
export const SECRET_API_KEY = 'retrace.anthropicApiKey';
/** An OpenAI-compatible endpoint's key ("Use a local model"; optional), never in settings. */
export const SECRET_OPENAI_COMPATIBLE_KEY = 'retrace.openaiCompatibleApiKey';
/** The remote's credentials and encryption key (JSON: variable name → value), never in settings. */
export const SECRET_REMOTE = 'retrace.remoteCredentials';

export const VIEW_CONTAINER = 'retrace';
export const VIEW_CHAT = 'retrace.chat';
export const VIEW_TIMELINE = 'retrace.timeline';
export const VIEW_FILE_HISTORY = 'retrace.fileHistory';
export const VIEW_REMOTE_SESSIONS = 'retrace.remoteSessions';
/** The other folders of a multi-root workspace (the Timeline view is the first folder's). */
/** Whether the running server has a remote (shows the Remote Sessions view). */
export const CONTEXT_REMOTE_CONFIGURED = 'retrace.remoteConfigured';

/** `retrace-cp:/<workspace-relative path>?cp=<checkpoint id | "current">` → file text at that checkpoint. */
export const CHECKPOINT_SCHEME = 'retrace-cp';

export const CONTEXT_AGENT_RUNNING = 'retrace.agentRunning';
/** `live` | `demo` | `noKey` (the server's `retrace/server/state`); unset until the server answered. */
export const CONTEXT_MODEL_MODE = 'retrace.modelMode';
/** Whether the editor offers Copilot's language models (the welcome view puts that choice first). */
export const CONTEXT_COPILOT_MODELS = 'retrace.copilotModels';

/**
 * Workspace state: the store the server last said it holds (`retrace/server/state` `storeDir`).
 * The server owns where a folder's store lives; the extension only remembers the answer, to know
 * at its next activation, without a server, whether this folder already has Retrace sessions.
 */
export const STATE_STORE_DIR = 'retrace.storeDir';

/** A file at a workspace root that makes it a demo folder (the server's `DEMO_MARKER`). */
export const DEMO_MARKER = '.retrace-demo.json';

/** VS Code's own command that opens the workspace trust editor. */
export const MANAGE_TRUST_COMMAND = 'workbench.trust.manage';

export const COMMANDS = {
    open: 'retrace.open',
    restoreToCheckpoint: 'retrace.restoreToCheckpoint',
    bookmarkCurrentState: 'retrace.bookmarkCurrentState',
    bookmarkCheckpoint: 'retrace.checkpoint.bookmark',
    tryDemo: 'retrace.tryDemo',
    prompt: 'retrace.prompt',
    cancel: 'retrace.cancel',
    backgroundStop: 'retrace.background.stop',
    newSession: 'retrace.newSession',
    restartServer: 'retrace.restartServer',
    installServer: 'retrace.installServer',
    setApiKey: 'retrace.setApiKey',
    chooseLanguageModel: 'retrace.chooseLanguageModel',
    chooseModelProvider: 'retrace.chooseModelProvider',
    remoteSetCredentials: 'retrace.remote.setCredentials',
    remotePush: 'retrace.remote.push',
    remoteOpen: 'retrace.remote.openSession',
    remoteSessionsRefresh: 'retrace.remote.refreshSessions',
    showLogs: 'retrace.showLogs',
    timelineRefresh: 'retrace.timeline.refresh',
    timelineReveal: 'retrace.timeline.reveal',
    decorationsLastTurn: 'retrace.decorations.lastTurn',
    decorationsClear: 'retrace.decorations.clear',
    openDiff: 'retrace.checkpoint.openDiff',
    restoreCode: 'retrace.checkpoint.restoreCode',
    restoreConversation: 'retrace.checkpoint.restoreConversation',
    restoreBoth: 'retrace.checkpoint.restoreBoth',
    summarizeFrom: 'retrace.checkpoint.summarizeFrom',
    summarizeUpTo: 'retrace.checkpoint.summarizeUpTo',
    fork: 'retrace.checkpoint.fork',
    compareWithCurrent: 'retrace.checkpoint.compareWithCurrent',
    copyId: 'retrace.checkpoint.copyId',
    exportGit: 'retrace.checkpoint.exportGit',
    showChangesSince: 'retrace.checkpoint.showChangesSince',
    restoreFileBefore: 'retrace.restoreFileBefore',
    restoreToPrompt: 'retrace.restoreToPrompt',
    undoRestore: 'retrace.undoRestore',
    undoLastRestore: 'retrace.undoLastRestore',
    hunkKeep: 'retrace.hunk.keep',
    hunkUndo: 'retrace.hunk.undo',
    rowRestoreFile: 'retrace.checkpoint.restoreFile',
    rowRestoreHunk: 'retrace.checkpoint.restoreHunk',
    diffRestoreFile: 'retrace.diff.restoreFile',
    diffRestoreHunk: 'retrace.diff.restoreHunk',
    verifyStore: 'retrace.verifyStore',
    collectGarbage: 'retrace.collectGarbage',
    integrateClaudeCode: 'retrace.agents.integrateClaudeCode',
    removeClaudeCode: 'retrace.agents.removeClaudeCode',
    integrateGeminiCli: 'retrace.agents.integrateGeminiCli',
    removeGeminiCli: 'retrace.agents.removeGeminiCli',
    showHealth: 'retrace.showHealth',
    taskApplyAgain: 'retrace.task.applyAgain',
    taskDiscard: 'retrace.task.discard',
    taskResume: 'retrace.task.resume',
    fileHistoryShow: 'retrace.fileHistory.show',
    fileHistoryOpenVersion: 'retrace.fileHistory.openVersion',
    fileHistoryComparePrevious: 'retrace.fileHistory.comparePrevious',
    fileHistoryRestoreVersion: 'retrace.fileHistory.restoreVersion',
    fileHistoryLoadOlder: 'retrace.fileHistory.loadOlder',
    fileHistoryTogglePin: 'retrace.fileHistory.togglePin',
} as const;

export type CommandId = (typeof COMMANDS)[keyof typeof COMMANDS];

/** Settings whose change needs a new server process; every other key is pushed live. */
export const RESTART_SETTINGS: readonly string[] = ['retrace.pythonPath'];

export const EDITOR_STATE_DEBOUNCE_MS = 300;
