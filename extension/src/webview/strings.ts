/**
 * Every word the webviews (chat and Health panel) show, in one place. `WEBVIEW_TEXT` is the English
 * source: `scripts/l10n.mjs` lists its values in `l10n/bundle.l10n.json` like any `l10n.t` message,
 * and its `--check` fails on a user-visible literal in any other webview script. The extension
 * host translates the table (`views/models/webviewStrings.ts`, `vscode.l10n.t` of each value) and embeds
 * the result in the page (`<script type="application/json" id="retrace-strings">`, data, never run);
 * the browser side reads it once here (`S`), falling back to English per key (and wholly under
 * unit tests, where there is no page). Values may hold `{0}`, `{1}`… filled by `fmt`.
 *
 * Contract: keys are stable identifiers; a value changed here is a new message for translators.
 */

export const WEBVIEW_TEXT = {
    // chat page (host-rendered HTML)
    chatTitle: 'Retrace Chat',
    conversation: 'Conversation',
    promptPlaceholder: 'Ask the agent… (Enter to send, Shift+Enter for a new line, ↑/↓ for history)',
    prompt: 'Prompt',
    send: 'Send',
    cancel: 'Cancel',
    attachedRow: 'Attached to the next prompt',
    workspaceFiles: 'Workspace files',
    // chat log
    failedError: 'This turn failed; the prompt was not kept in the conversation.',
    failedCancelled: 'Cancelled; the prompt was not kept in the conversation.',
    failedInterrupted: 'Interrupted (the server stopped); the prompt was not kept in the conversation.',
    failedOther: 'Not completed ({0}).',
    retry: 'Retry',
    toolRunning: 'running…',
    toolNoOutput: '(no output)',
    allow: 'Allow',
    deny: 'Deny',
    allowAlways: 'Always allow for this session',
    allowed: 'Allowed',
    denied: 'Denied',
    allowedAlways: 'Always allowed for this session',
    showEarlier: 'Show earlier messages ({0} more)',
    permissionHeading: 'Allow {0}?',
    permissionHeadingTitled: 'Allow {0}? {1}',
    permissionCut: 'The text is cut here — Show all',
    changes: 'Changes',
    loading: 'loading…',
    checkpointLink: 'Checkpoint {0}',
    checkpointLinkLabel: 'Open the changes of checkpoint {0} ({1})',
    copy: 'Copy',
    copied: 'Copied',
    copyCode: 'Copy {0} code',
    codeLabel: 'code',
    codeBlockSpoken: 'Code block.',
    codeBlockSpokenLanguage: 'Code block ({0}).',
    restoreMenu: 'Restore…',
    restorePromptLabel: 'Restore to before this prompt: {0}',
    restoreCheckpointLabel: 'Restore checkpoint {0} ({1})',
    choiceBothBefore: 'Code and conversation before this prompt',
    choiceCodeBefore: 'Code only, before this prompt',
    choiceConversationBefore: 'Conversation only, before this prompt',
    choiceBothEnd: 'Code and conversation at the end of this turn',
    choiceBothCheckpoint: 'Code and conversation to this checkpoint',
    choiceCode: 'Code only',
    choiceConversation: 'Conversation only',
    editPrompt: 'Edit the prompt',
    editResend: 'Edit and resend',
    chipSent: 'Sent with the next prompt',
    chipNotSent: 'Not sent with the next prompt',
    chipDetach: 'Do not attach the editor context',
    chipAttach: 'Attach the editor context',
    chipRemove: 'Remove @{0}',
    announceError: 'Error: {0}',
    announcePermission: 'Permission needed: {0}',
    statusRunning: 'running',
    statusOk: 'done',
    statusError: 'failed',
    statusDenied: 'denied',
    statusInterrupted: 'interrupted',
    statusCancelled: 'cancelled',
    usageLine: '{0} in · {1} out · {2}',
    usageLineCached: '{0} in ({1} cached) · {2} out · {3}',
    costUnknown: 'cost unknown',
    costUnknownSpoken: 'unknown',
    chipSelections: '{0} ({1} selections)',
    chipSelection: '{0}:{1} (selection)',
    chipVisible: '{0} (visible {1})',
    chipActiveFile: '{0} (active file)',
    image: '[image]',
    imageAlt: '[image: {0}]',
    usageSpoken: 'Turn used {0} input tokens, {1} of them cached, and {2} output tokens; cost {3}.',
    // chat banner (computed by the host, `chatBanner`)
    bannerUntrusted: 'This workspace is not trusted: Retrace only shows its timeline. The agent does not run and nothing is restored until you trust the folder.',
    bannerManageTrust: 'Manage Workspace Trust',
    bannerDemo: 'Demo: the answers are scripted; nothing here is your project.',
    bannerNoKey: 'No model is set up: choose who answers the agent in this folder (your Copilot subscription, an Anthropic API key, Amazon Bedrock, Google Vertex AI or a local model), or try the demo on a sample project (nothing of yours is touched).',
    bannerChooseModel: 'Choose Model',
    bannerTryDemo: 'Try the Demo',
    // Health panel page (host-rendered HTML)
    healthTitle: 'Retrace Health',
    healthHeading: 'Retrace health',
    refresh: 'Refresh',
    noCheckpointsYet: 'No checkpoints yet',
    healthEmpty: 'Health shows up here once the agent has made a checkpoint: storage against its budget, how fast checkpoints and restores are, and why you restored.',
    healthContent: 'Checkpoint health',
    // Health panel script
    onTarget: '✓ on target',
    offTarget: '✗ off target',
    noDataYet: 'no data yet',
    checkpointSuccess: 'Checkpoint success',
    restoreQuantile: 'Restore {0}',
    storage: 'Storage',
    duration: 'Duration',
    count: 'Count',
    slowestCheckpoints: 'Slowest checkpoints',
    noCheckpointCaptured: 'No checkpoint captured yet.',
    checkpoint: 'Checkpoint',
    kind: 'Kind',
    captureTime: 'Capture time',
    showInTimeline: 'Show checkpoint {0} in the timeline',
    otherNumbers: 'Other numbers',
    collectGarbage: 'Collect garbage now',
    retentionSettings: 'Retention settings',
    storageOverTime: 'Storage over time',
    time: 'Time',
    used: 'Used',
    restoresByReason: 'Restores by reason',
    reason: 'Reason',
    restores: 'Restores',
    updatedAt: 'Updated {0}',
    updating: 'Updating…',
    couldNotUpdate: 'Could not update: {0}',
    budget: 'Budget',
    urgentLine: '90 % (urgent)',
    warningLine: '80 % (warning)',
    mib: 'MiB',
    axisDuration: 'duration',
    axisCount: 'count',
    axisRestores: 'restores',
    noRestoreYet: 'no restore yet',
    storageAlmostFull: 'Checkpoint storage is almost full',
    storageFillingUp: 'Checkpoint storage is filling up',
    storageBanner: '{0}: {1}.',
} as const;

export type WebviewText = { readonly [K in keyof typeof WEBVIEW_TEXT]: string };

/** The id of the page's JSON element holding the translated table. */
export const STRINGS_ELEMENT_ID = 'retrace-strings';

/** `{0}`, `{1}`… of `template` filled from `args` (a missing one stays as written). */
export function fmt(template: string, ...args: readonly (string | number)[]): string {
    return template.replace(/\{(\d+)\}/g, (whole, i: string) => {
        const value = args[Number(i)];
        return value === undefined ? whole : String(value);
    });
}

/** The table `given` (untrusted JSON from the page) overrides: strings for known keys only. */
export function mergeText(given: unknown): WebviewText {
    const out: Record<string, string> = { ...WEBVIEW_TEXT };
    if (typeof given === 'object' && given !== null) {
        for (const [k, v] of Object.entries(given)) {
            if (Object.hasOwn(WEBVIEW_TEXT, k) && typeof v === 'string') {
                out[k] = v;
            }
        }
    }
    return out as WebviewText;
}

/** The part of a page `pageText` reads. */
export interface TextPage {
    getElementById(id: string): { readonly textContent: string | null } | null;
}

/** The words a page carries (`STRINGS_ELEMENT_ID`); English for a missing page, element or bad JSON. */
export function pageText(page: TextPage | undefined): WebviewText {
    const node = page?.getElementById(STRINGS_ELEMENT_ID) ?? null;
    try {
        return mergeText(node === null ? undefined : JSON.parse(node.textContent ?? ''));
    } catch {
        return WEBVIEW_TEXT;
    }
}

/** The page's words (translated by the host; English where it gave none). */
export const S: WebviewText = pageText(typeof document === 'undefined' ? undefined : document);

/** The JSON to embed in a page: `<` escaped so the text can never close its element. */
export function stringsJson(text: WebviewText): string {
    return JSON.stringify(text).replace(/</g, '\\u003c');
}

/** `text` for HTML: the five characters that could end a text or an attribute value escaped. */
export function escapeHtml(text: string): string {
    return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}
