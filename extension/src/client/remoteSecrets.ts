/**
 * The remote (S3) credentials as VS Code's SecretStorage keeps them: one JSON object of the four
 * variables the server reads at its start. Pure (unit-tested); asked for and stored by
 * `commands/remoteCredentials.ts`, read at each server start by `ctx.ts`.
 */
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
