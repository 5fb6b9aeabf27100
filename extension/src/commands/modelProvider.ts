/**
 * "Retrace: Choose Model Provider": the first-run choice of who answers the agent (the welcome
 * view, the walkthrough, the chat banner and the server's no-model message lead here). What is
 * offered first, the settings written and the checks of the answers are `modelChoice.ts`; this is
 * the quick pick, the input boxes and the writes.
 *
 * Settings are written to the user's settings (endpoints and regions are machine-scoped) and
 * reach the running server through the settings pipeline, without a restart. Only a key change
 * restarts the server: keys are handed over on a pipe when it starts. Credentials never go into
 * settings: AWS and Google credentials stay in their own chains, and the prompts say so.
 */
import * as vscode from 'vscode';
import { COMMANDS, CONFIG_SECTION, CONTEXT_COPILOT_MODELS, SECRET_OPENAI_COMPATIBLE_KEY } from '../constants';
import type { Ctx } from '../ctx';
import { log } from '../logging';
import { localCommand, type Registration } from './registry';
import { checkBaseUrl, checkCloudName, choiceOfProvider, choicesOfArg, LOCAL_DEFAULT_BASE_URL, modelSummary, settingWrites, type Answers, type ChoiceId } from '../views/models/modelChoice';

/** The vscode-lm bridge's model picker (writes `retrace.model.provider = vscode-lm` and the id). */
const CHOOSE_LANGUAGE_MODEL = 'retrace.chooseLanguageModel';
const COPILOT_CHAT_EXTENSION = 'GitHub.copilot-chat';

function section(): vscode.WorkspaceConfiguration {
    return vscode.workspace.getConfiguration(CONFIG_SECTION);
}

/** How many chat models the editor offers from Copilot (0 where the API is missing). */
async function copilotModelCount(): Promise<number> {
    const lm = (vscode as Partial<typeof vscode>).lm;
    if (typeof lm?.selectChatModels !== 'function') {
        return 0;
    }
    try {
        return (await lm.selectChatModels({ vendor: 'copilot' })).length;
    } catch (err) {
        log.debug(`language models unavailable: ${String(err)}`);
        return 0;
    }
}

/**
 * Keep the welcome view's order in step with what the editor offers. Asked only while no model
 * answers (the only time the choice is shown): nothing is asked of the editor's models at start-up.
 */
export function watchCopilotModels(ctx: Ctx): void {
    const update = async (): Promise<void> => {
        if (ctx.modelMode === 'noKey') {
            await vscode.commands.executeCommand('setContext', CONTEXT_COPILOT_MODELS, (await copilotModelCount()) > 0);
        }
    };
    const lm = (vscode as Partial<typeof vscode>).lm;
    if (typeof lm?.onDidChangeChatModels === 'function') {
        ctx.extension.subscriptions.push(lm.onDidChangeChatModels(() => void update()));
    }
    ctx.extension.subscriptions.push(ctx.onDidChangeModelMode(() => void update()));
}

function choiceItem(choice: ChoiceId, copilotModels: number, current: ChoiceId | undefined): vscode.QuickPickItem & { choice: ChoiceId } {
    const labels: Record<ChoiceId, [string, string]> = {
        copilot: [
            vscode.l10n.t('Use my Copilot subscription'),
            copilotModels > 0
                ? vscode.l10n.t("VS Code's language models ({0} available): no key; VS Code asks once for your consent", copilotModels)
                : vscode.l10n.t('Needs GitHub Copilot Chat, signed in to GitHub'),
        ],
        anthropic: [vscode.l10n.t('Use an Anthropic API key'), vscode.l10n.t("Kept in VS Code's secret storage")],
        bedrock: [vscode.l10n.t('Use Amazon Bedrock'), vscode.l10n.t('Claude in your AWS account; credentials from your AWS profile, SSO or environment')],
        vertex: [vscode.l10n.t('Use Google Vertex AI'), vscode.l10n.t('Claude in your Google Cloud project; credentials from gcloud (Application Default Credentials)')],
        local: [vscode.l10n.t('Use a local model'), vscode.l10n.t('Ollama, vLLM, LM Studio or any OpenAI-compatible server')],
    };
    const [label, detail] = labels[choice];
    return choice === current ? { label, detail, description: vscode.l10n.t('(current)'), choice } : { label, detail, choice };
}

async function ask(prompt: string, value: string, options: { placeHolder?: string; validate?: (s: string) => string | undefined; password?: boolean } = {}): Promise<string | undefined> {
    const box: vscode.InputBoxOptions = { prompt, value, ignoreFocusOut: true, password: options.password === true };
    return vscode.window.showInputBox({
        ...box,
        ...(options.placeHolder !== undefined ? { placeHolder: options.placeHolder } : {}),
        ...(options.validate !== undefined ? { validateInput: options.validate } : {}),
    });
}

const required = (s: string): string | undefined => (s.trim() === '' ? vscode.l10n.t('Required') : undefined);

function current(key: string): string {
    const v = section().get<unknown>(key);
    return typeof v === 'string' ? v : '';
}

/** The current model id when the provider stays the same, else the example for the new one. */
function idFor(provider: string, example: string): string {
    return section().get<unknown>('model.provider') === provider && current('model.id') !== '' ? current('model.id') : example;
}

async function askBedrock(): Promise<Answers | undefined> {
    const region = await ask(
        vscode.l10n.t('Amazon Bedrock: AWS region (empty: AWS_REGION or your profile’s). Credentials stay in your AWS configuration (profile, SSO, environment): Retrace never stores them.'),
        current('model.bedrock.region'),
        { placeHolder: 'us-east-1', validate: checkCloudName },
    );
    const profile = region === undefined ? undefined : await ask(vscode.l10n.t('AWS profile from ~/.aws (empty: the default credential chain)'), current('model.bedrock.profile'), { validate: checkCloudName });
    const id = profile === undefined ? undefined : await ask(vscode.l10n.t('Bedrock model id or inference profile'), idFor('bedrock', 'us.anthropic.claude-sonnet-4-5-20250929-v1:0'), { validate: required });
    return region === undefined || profile === undefined || id === undefined ? undefined : { choice: 'bedrock', region, profile, id };
}

async function askVertex(): Promise<Answers | undefined> {
    const projectId = await ask(
        vscode.l10n.t('Google Vertex AI: project id (empty: ANTHROPIC_VERTEX_PROJECT_ID or your credentials’ project). Credentials stay with gcloud (Application Default Credentials): Retrace never stores them.'),
        current('model.vertex.projectId'),
        { validate: checkCloudName },
    );
    const region = projectId === undefined ? undefined : await ask(vscode.l10n.t('Vertex AI region (global, or e.g. us-east5)'), current('model.vertex.region') || 'global', { validate: checkCloudName });
    const id = region === undefined ? undefined : await ask(vscode.l10n.t('Vertex AI model id'), idFor('vertex', 'claude-sonnet-4-5@20250929'), { validate: required });
    return projectId === undefined || region === undefined || id === undefined ? undefined : { choice: 'vertex', projectId, region, id };
}

/** The endpoint and model; the key (optional) is stored here and says whether it changed. */
async function askLocal(ctx: Ctx): Promise<{ answers: Answers; keyChanged: boolean } | undefined> {
    const baseUrl = await ask(vscode.l10n.t('OpenAI-compatible endpoint (Ollama’s is prefilled). Your prompts, the files the agent reads and tool output are sent there.'), current('model.openaiCompatible.baseUrl') || LOCAL_DEFAULT_BASE_URL, {
        validate: checkBaseUrl,
    });
    const id = baseUrl === undefined ? undefined : await ask(vscode.l10n.t('Model name, as the endpoint knows it'), idFor('openai-compatible', ''), { placeHolder: 'qwen2.5-coder:14b', validate: required });
    if (baseUrl === undefined || id === undefined) {
        return undefined;
    }
    const key = await ask(vscode.l10n.t('API key for this endpoint, if it needs one (kept in VS Code secret storage; leave empty for none)'), '', { password: true });
    if (key === undefined) {
        return undefined;
    }
    const before = (await ctx.extension.secrets.get(SECRET_OPENAI_COMPATIBLE_KEY)) ?? '';
    if (key.trim() === '') {
        await ctx.extension.secrets.delete(SECRET_OPENAI_COMPATIBLE_KEY);
    } else {
        await ctx.extension.secrets.store(SECRET_OPENAI_COMPATIBLE_KEY, key.trim());
    }
    return { answers: { choice: 'local', baseUrl, id }, keyChanged: before !== key.trim() };
}

/** The old `"retrace.model": "…"` would shadow the section: it goes (its id stays for Anthropic).
 * Resolves to its value when there was one. */
async function dropLegacyModel(config: vscode.WorkspaceConfiguration): Promise<string | undefined> {
    const legacy = config.inspect<unknown>('model')?.globalValue;
    if (typeof legacy !== 'string') {
        return undefined;
    }
    try {
        await config.update('model', undefined, vscode.ConfigurationTarget.Global);
    } catch (err) {
        log.warn(`could not remove the old retrace.model setting: ${String(err)}`);
        void vscode.window.showWarningMessage(vscode.l10n.t('Remove the old "retrace.model": {0} line from your user settings.json: it hides the new model settings.', JSON.stringify(legacy)));
    }
    return legacy;
}

/** A folder's own provider setting wins over the user's choice there: say so. */
function warnIfFolderOverrides(chosen: unknown): void {
    const provider = section().inspect<unknown>('model.provider');
    const local = provider?.workspaceFolderValue ?? provider?.workspaceValue;
    if (local !== undefined && local !== chosen) {
        void vscode.window.showWarningMessage(vscode.l10n.t('This folder’s settings set retrace.model.provider to {0}, which overrides your choice in this folder.', JSON.stringify(local)));
    }
}

/** Write the choice's settings (user settings), and say what is now active. */
async function write(answers: Answers): Promise<void> {
    const config = section();
    const legacy = await dropLegacyModel(config);
    const writes = settingWrites(answers);
    for (const [key, value] of writes) {
        const kept = key === 'model.id' && answers.choice === 'anthropic' && legacy !== undefined ? legacy : value;
        await config.update(key, kept, vscode.ConfigurationTarget.Global);
    }
    warnIfFolderOverrides(writes[writes.length - 1]?.[1]);
    log.info(`model provider chosen: ${modelSummary(section().get('model'))}`);
    void vscode.window.showInformationMessage(vscode.l10n.t('Retrace now uses {0}.', modelSummary(section().get('model'))));
}

async function useCopilot(copilotModels: number): Promise<void> {
    if (copilotModels === 0) {
        const install = vscode.l10n.t('Show GitHub Copilot Chat');
        const answer = await vscode.window.showWarningMessage(
            vscode.l10n.t('This editor offers no Copilot models: install GitHub Copilot Chat and sign in to GitHub (a free or paid Copilot plan), then choose again.'),
            install,
        );
        if (answer === install) {
            await vscode.commands.executeCommand('workbench.extensions.search', COPILOT_CHAT_EXTENSION);
        }
        return;
    }
    const commands = await vscode.commands.getCommands(true);
    if (commands.includes(CHOOSE_LANGUAGE_MODEL)) {
        await vscode.commands.executeCommand(CHOOSE_LANGUAGE_MODEL);
        return;
    }
    // No model picker in this build: the editor's models answer, its default one first.
    await section().update('model.id', undefined, vscode.ConfigurationTarget.Global);
    await section().update('model.provider', 'vscode-lm', vscode.ConfigurationTarget.Global);
}

async function useAnthropic(): Promise<void> {
    if (section().get<unknown>('model.provider') !== 'anthropic' || typeof section().inspect<unknown>('model')?.globalValue === 'string') {
        await write({ choice: 'anthropic' });
    }
    await vscode.commands.executeCommand(COMMANDS.setApiKey);
}

async function useCloud(ctx: Ctx, ask: () => Promise<Answers | undefined>): Promise<void> {
    const answers = await ask();
    if (answers !== undefined) {
        await write(answers);
        await ctx.installProviderPackages(); // also when the setting did not change: choosing again installs them
    }
}

async function useLocal(ctx: Ctx): Promise<void> {
    const local = await askLocal(ctx);
    if (local !== undefined) {
        await write(local.answers);
        if (local.keyChanged) {
            await ctx.restart(); // the key reaches the server on a pipe at its start
        }
    }
}

/** What each choice does. */
const RUNS: Record<ChoiceId, (ctx: Ctx, copilotModels: number) => Promise<void>> = {
    copilot: (_ctx, copilotModels) => useCopilot(copilotModels),
    anthropic: () => useAnthropic(),
    bedrock: ctx => useCloud(ctx, askBedrock),
    vertex: ctx => useCloud(ctx, askVertex),
    local: ctx => useLocal(ctx),
};

/** The command: `arg` (from a welcome or walkthrough link) narrows the choices. */
async function chooseModelProvider(ctx: Ctx, arg: unknown): Promise<void> {
    const copilotModels = await copilotModelCount();
    const choices = choicesOfArg(arg, copilotModels);
    let choice = choices.length === 1 ? choices[0] : undefined;
    if (choice === undefined) {
        // No "(current)" while nothing answers (the default provider without a key).
        const currentChoice = ctx.modelMode === 'noKey' ? undefined : choiceOfProvider(section().get<unknown>('model.provider'));
        const picked = await vscode.window.showQuickPick(
            choices.map(c => choiceItem(c, copilotModels, currentChoice)),
            { title: vscode.l10n.t('Who answers Retrace’s agent?'), placeHolder: vscode.l10n.t('Your prompts, the files the agent reads and tool output go to the provider you choose'), ignoreFocusOut: true },
        );
        choice = picked?.choice;
    }
    if (choice !== undefined) {
        await RUNS[choice](ctx, copilotModels);
    }
}

export function modelProviderCommands(ctx: Ctx): Registration[] {
    return [localCommand(COMMANDS.chooseModelProvider, (arg?: unknown) => chooseModelProvider(ctx, arg))];
}
