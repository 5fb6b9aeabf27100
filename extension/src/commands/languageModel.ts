/**
 * "Retrace: Choose Language Model": a quick pick of the models VS Code's Language Model API offers
 * for the configured vendor (`retrace.model.vscodeLm.vendor`, `copilot` by default: the models a
 * GitHub Copilot subscription gives), writing `retrace.model.provider = vscode-lm` and
 * `retrace.model.id` in the user settings. The first-run choice "Use my Copilot subscription"
 * runs it.
 */
import * as vscode from 'vscode';
import { CONFIG_SECTION } from '../constants';
import { log } from '../logging';
import { prompter } from '../ui';

/** What the quick pick shows for each model (its name, its id). */
export function modelLabels(models: readonly Pick<vscode.LanguageModelChat, 'name' | 'id'>[]): string[] {
    return models.map(m => (m.name !== '' && m.name !== m.id ? `${m.name} (${m.id})` : m.id));
}

/** Resolves to the chosen model's id (undefined: none available, or dismissed). */
export async function chooseLanguageModel(): Promise<string | undefined> {
    const config = vscode.workspace.getConfiguration(CONFIG_SECTION);
    const vendor = config.get<string>('model.vscodeLm.vendor') || 'copilot';
    const models = await vscode.lm.selectChatModels({ vendor });
    if (models.length === 0) {
        void prompter().notify(
            'warning',
            vscode.l10n.t('Retrace: VS Code offers no language model from "{0}". Install and sign in to GitHub Copilot (or that vendor\'s extension), then choose again.', vendor),
            [],
        );
        return undefined;
    }
    const labels = modelLabels(models);
    const ask = prompter();
    const picked = ask.choose ? await ask.choose(vscode.l10n.t("The model Retrace's agent uses (through VS Code's Language Model API)"), labels) : undefined;
    const model = picked === undefined ? undefined : models[labels.indexOf(picked)];
    if (model === undefined) {
        return undefined;
    }
    try {
        await config.update('model.provider', 'vscode-lm', vscode.ConfigurationTarget.Global);
        await config.update('model.id', model.id, vscode.ConfigurationTarget.Global);
    } catch (err) {
        log.error('writing the model settings failed', err);
        void prompter().notify('error', vscode.l10n.t('Retrace: cannot write the model settings: {0}', err instanceof Error ? err.message : String(err)), []);
        return undefined;
    }
    log.info(`model: vscode-lm ${vendor}/${model.id}`);
    return model.id;
}
