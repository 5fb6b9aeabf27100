/**
 * The first-run choice of who answers the agent, as data: which choices come first, the settings
 * each one writes, the checks of what the user types, and the one-line summary of the active
 * provider the status bar shows. Pure (no editor calls except `l10n.t`): the quick pick and the
 * input boxes live in `commands/modelProvider.ts`.
 *
 * The settings are the `retrace.model` section the server reads (`ServerSettings.model`); a plain
 * string there is the old setting (the Anthropic model id). Credentials are never settings: the
 * Anthropic key and a local endpoint's key are kept in SecretStorage and handed to the server on
 * a pipe; AWS and Google credentials stay in their standard chains.
 */
import * as vscode from 'vscode';

export type ChoiceId = 'copilot' | 'anthropic' | 'bedrock' | 'vertex' | 'local';

/** Ollama's OpenAI-compatible endpoint, prefilled for "Use a local model". */
export const LOCAL_DEFAULT_BASE_URL = 'http://localhost:11434/v1';

/**
 * The choices, least effort first: the Copilot subscription when the editor already offers its
 * models (nothing to type), else the API key (one paste); then the clouds; then a local server.
 */
export function orderChoices(copilotModels: number): ChoiceId[] {
    const first: ChoiceId[] = copilotModels > 0 ? ['copilot', 'anthropic'] : ['anthropic', 'copilot'];
    return [...first, 'bedrock', 'vertex', 'local'];
}

/**
 * The choices a welcome or walkthrough link offers (its argument: `copilot`, `anthropic`, `cloud`
 * for Bedrock and Vertex, `local`, or one choice); anything else: all of them, in order.
 */
export function choicesOfArg(arg: unknown, copilotModels: number): ChoiceId[] {
    const all = orderChoices(copilotModels);
    if (arg === 'cloud') {
        return ['bedrock', 'vertex'];
    }
    return typeof arg === 'string' && (all as string[]).includes(arg) ? [arg as ChoiceId] : all;
}

const PROVIDER_OF: Readonly<Record<ChoiceId, string>> = {
    copilot: 'vscode-lm',
    anthropic: 'anthropic',
    bedrock: 'bedrock',
    vertex: 'vertex',
    local: 'openai-compatible',
};

/** The choice that set `retrace.model.provider` to this value (undefined: none does). */
export function choiceOfProvider(provider: unknown): ChoiceId | undefined {
    return (Object.keys(PROVIDER_OF) as ChoiceId[]).find(c => PROVIDER_OF[c] === provider);
}

/** What the user answered for a choice (the Copilot choice writes through its own command). */
export type Answers =
    | { readonly choice: 'anthropic' }
    | { readonly choice: 'bedrock'; readonly id: string; readonly region: string; readonly profile: string }
    | { readonly choice: 'vertex'; readonly id: string; readonly projectId: string; readonly region: string }
    | { readonly choice: 'local'; readonly baseUrl: string; readonly id: string };

/** [key below `retrace.`, value]; `undefined` removes the user's value (the default applies). */
export type SettingWrite = readonly [string, string | undefined];

function orUnset(value: string): string | undefined {
    const v = value.trim();
    return v === '' ? undefined : v;
}

/**
 * The user settings a choice writes, in order: the provider's own settings and the model id
 * first, the provider last (the server never sees the new provider with the old one's model id).
 * A model id of another provider means nothing to this one: the Anthropic choice clears it.
 */
export function settingWrites(a: Answers): SettingWrite[] {
    switch (a.choice) {
        case 'anthropic':
            return [['model.id', undefined], ['model.provider', 'anthropic']];
        case 'bedrock':
            return [
                ['model.bedrock.region', orUnset(a.region)],
                ['model.bedrock.profile', orUnset(a.profile)],
                ['model.id', orUnset(a.id)],
                ['model.provider', 'bedrock'],
            ];
        case 'vertex':
            return [
                ['model.vertex.projectId', orUnset(a.projectId)],
                ['model.vertex.region', orUnset(a.region)],
                ['model.id', orUnset(a.id)],
                ['model.provider', 'vertex'],
            ];
        case 'local':
            return [['model.openaiCompatible.baseUrl', orUnset(a.baseUrl)], ['model.id', orUnset(a.id)], ['model.provider', 'openai-compatible']];
    }
}

/** Why this is not a usable endpoint URL (an input box's message), or undefined. */
export function checkBaseUrl(text: string): string | undefined {
    const value = text.trim();
    let url: URL;
    try {
        url = new URL(value);
    } catch {
        return vscode.l10n.t('Enter the endpoint as a URL, e.g. {0}', LOCAL_DEFAULT_BASE_URL);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
        return vscode.l10n.t('The endpoint must be an http:// or https:// URL');
    }
    return undefined;
}

/** A region, profile or project name: empty (the standard chain decides) or one short word. */
export function checkCloudName(text: string): string | undefined {
    return /^[A-Za-z0-9._-]{0,100}$/.test(text.trim()) ? undefined : vscode.l10n.t('Letters, digits, dots, dashes and underscores only');
}

function field(section: Record<string, unknown>, group: string, key: string): string {
    const g = section[group];
    const v = typeof g === 'object' && g !== null ? (g as Record<string, unknown>)[key] : undefined;
    return typeof v === 'string' ? v.trim() : '';
}

/** An endpoint as a tooltip may show it: no user, password or query string. */
function shownUrl(raw: string): string {
    try {
        const url = new URL(raw);
        return `${url.protocol}//${url.host}${url.pathname === '/' ? '' : url.pathname}`;
    } catch {
        return raw.replace(/[?#].*$/, '').replace(/\/\/[^/@]*@/, '//');
    }
}

function providerLabel(provider: string, section: Record<string, unknown>): string {
    const where = (text: string): string => (text === '' ? '' : ` (${text})`);
    switch (provider) {
        case 'anthropic':
            return vscode.l10n.t('Anthropic API');
        case 'bedrock':
            return vscode.l10n.t('Amazon Bedrock') + where(field(section, 'bedrock', 'region'));
        case 'vertex':
            return vscode.l10n.t('Google Vertex AI') + where(field(section, 'vertex', 'region'));
        case 'vscode-lm':
            return vscode.l10n.t('VS Code language models') + where(field(section, 'vscodeLm', 'vendor'));
        default:
            return vscode.l10n.t('OpenAI-compatible') + where(shownUrl(field(section, 'openaiCompatible', 'baseUrl')));
    }
}

/** "Amazon Bedrock (eu-west-1) · us.anthropic…": the `retrace.model` section, in one line. */
export function modelSummary(raw: unknown): string {
    const section: Record<string, unknown> = typeof raw === 'string' ? { id: raw } : typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>) : {};
    const provider = typeof section['provider'] === 'string' ? section['provider'] : 'anthropic';
    if (choiceOfProvider(provider) === undefined) {
        return vscode.l10n.t('unknown provider "{0}"', provider);
    }
    const id = typeof section['id'] === 'string' ? section['id'].trim() : '';
    let model = id;
    if (id === '') {
        model =
            provider === 'anthropic'
                ? vscode.l10n.t('default model')
                : provider === 'vscode-lm'
                  ? vscode.l10n.t('picked in the editor')
                  : vscode.l10n.t('no model set');
    }
    return `${providerLabel(provider, section)} · ${model}`;
}
