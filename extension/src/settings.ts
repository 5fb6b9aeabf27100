/**
 * Typed reads of the `retrace` configuration section. package.json `contributes.configuration`
 * is the only place defaults are written: nothing here repeats a default except as a guard for a
 * missing or mistyped value (the manifest's default is read through `inspect`).
 */
import * as vscode from 'vscode';
import { CONFIG_SECTION } from './constants';
import type { ServerSettings } from './client/protocol';

export type NotificationLevel = 'off' | 'onError' | 'onWarning' | 'always';

function section(): vscode.WorkspaceConfiguration {
    return vscode.workspace.getConfiguration(CONFIG_SECTION);
}

export function pythonPathSetting(): string {
    return section().get<string>('pythonPath', '').trim();
}

export function notificationLevel(): NotificationLevel {
    const v = section().get<string>('notifications');
    return v === 'off' || v === 'onWarning' || v === 'always' ? v : 'onError';
}

/** Whether a server message of this severity may become a pop-up (everything is always logged). */
export function allowsPopup(level: NotificationLevel, severity: 'error' | 'warning' | 'info'): boolean {
    switch (level) {
        case 'off':
            return false;
        case 'onError':
            return severity === 'error';
        case 'onWarning':
            return severity !== 'info';
        case 'always':
            return true;
    }
}

/**
 * The section as the server reads it (`ServerSettings`, extra keys ignored server-side).
 * Empty strings mean "unset" in the manifest and travel as `null`.
 */
export function serverSettings(): ServerSettings {
    const raw = JSON.parse(JSON.stringify(section())) as Record<string, unknown>;
    return normaliseSettings(raw);
}

export function normaliseSettings(raw: Record<string, unknown>): ServerSettings {
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(raw)) {
        if (key === 'pythonPath' || key === 'notifications') {
            continue; // client-only keys
        }
        out[key] = value === '' ? null : value;
    }
    return out; // the server validates the section (pydantic) and ignores unknown keys
}
