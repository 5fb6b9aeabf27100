/**
 * "Retrace: Set remote credentials": the S3 access key id, secret, optional session token and
 * optional encryption key, kept in VS Code's SecretStorage (never in settings, never logged) and
 * handed to the server on pipes at its start (`serverLaunch`); the server restarts to take them.
 * `parseRemoteSecrets` / `remoteSecretsFrom` are pure (unit-tested).
 */
import * as vscode from 'vscode';
import { SECRET_REMOTE } from '../constants';
import type { Ctx } from '../ctx';
import { log } from '../logging';

export const REMOTE_SECRET_NAMES = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'RETRACE_REMOTE_KEY'] as const;
export type RemoteSecretName = (typeof REMOTE_SECRET_NAMES)[number];

/** The stored JSON → variable name → value (unknown names, non-strings and blanks dropped). */
export function parseRemoteSecrets(raw: string | undefined): Record<string, string> {
    if (raw === undefined || raw === '') {
        return {};
    }
    let value: unknown;
    try {
        value = JSON.parse(raw);
    } catch {
        log.warn('the stored remote credentials are unreadable; set them again (Retrace: Set remote credentials)');
        return {};
    }
    const out: Record<string, string> = {};
    if (typeof value === 'object' && value !== null) {
        for (const name of REMOTE_SECRET_NAMES) {
            const v = (value as Record<string, unknown>)[name];
            if (typeof v === 'string' && v.trim() !== '') {
                out[name] = v.trim();
            }
        }
    }
    return out;
}

/** The answers of the four prompts → what to store (`undefined`: forget the credentials). */
export function remoteSecretsFrom(answers: Partial<Record<RemoteSecretName, string>>): Record<string, string> | undefined {
    const out: Record<string, string> = {};
    for (const name of REMOTE_SECRET_NAMES) {
        const v = answers[name]?.trim();
        if (v !== undefined && v !== '') {
            out[name] = v;
        }
    }
    return out['AWS_ACCESS_KEY_ID'] === undefined && out['AWS_SECRET_ACCESS_KEY'] === undefined && out['RETRACE_REMOTE_KEY'] === undefined ? undefined : out;
}

const PROMPTS: readonly { name: RemoteSecretName; prompt: string; password: boolean }[] = [
    { name: 'AWS_ACCESS_KEY_ID', prompt: vscode.l10n.t('S3 access key id (empty: use the standard AWS credential chain)'), password: false },
    { name: 'AWS_SECRET_ACCESS_KEY', prompt: vscode.l10n.t('S3 secret access key'), password: true },
    { name: 'AWS_SESSION_TOKEN', prompt: vscode.l10n.t('S3 session token (optional)'), password: true },
    { name: 'RETRACE_REMOTE_KEY', prompt: vscode.l10n.t('Encryption key, base64 of 32 bytes (optional: only for an encrypted remote)'), password: true },
];

export async function setRemoteCredentials(ctx: Ctx): Promise<void> {
    const answers: Partial<Record<RemoteSecretName, string>> = {};
    for (const p of PROMPTS) {
        const value = await vscode.window.showInputBox({ prompt: vscode.l10n.t('Retrace remote: {0}', p.prompt), password: p.password, ignoreFocusOut: true });
        if (value === undefined) {
            return; // cancelled: nothing changes
        }
        answers[p.name] = value;
    }
    const secrets = remoteSecretsFrom(answers);
    if (secrets === undefined) {
        await ctx.extension.secrets.delete(SECRET_REMOTE);
        log.info('remote credentials removed');
    } else {
        await ctx.extension.secrets.store(SECRET_REMOTE, JSON.stringify(secrets));
        log.info(`remote credentials stored (${Object.keys(secrets).join(', ')}; values not logged)`);
    }
    if (ctx.started) {
        await ctx.restart(); // credentials reach the server only at its start
    }
}
