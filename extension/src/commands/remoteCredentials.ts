/**
 * "Retrace: Set remote credentials": the S3 access key id, secret, optional session token and
 * optional encryption key, kept in VS Code's SecretStorage (never in settings, never logged) and
 * handed to the server on pipes at its start (`serverLaunch`); the server restarts to take them.
 * The stored form is `client/remoteSecrets.ts` (pure).
 */
import * as vscode from 'vscode';
import { SECRET_REMOTE } from '../constants';
import type { Ctx } from '../ctx';
import { log } from '../logging';
import { remoteSecretsFrom, type RemoteSecretName } from '../client/remoteSecrets';


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
