/**
 * The one owner of Retrace's effective settings. package.json `contributes.configuration` is the
 * only place defaults are written: nothing here repeats a default except as a guard for a missing
 * or mistyped value (the manifest's default is read through `inspect`).
 *
 * A folder's `.vscode/settings.json` is written by whoever wrote the folder, so settings that move
 * the API key or run code are read here with explicit rules (`SETTING_RULES`), whatever scope
 * VS Code applied:
 * - `machine`: only user (or remote) settings count; a workspace or folder value is ignored.
 * - `narrowOnly` (permissions, client-side encryption): a workspace or folder value applies only
 *   when it is at least as strict as the value it overrides (deny > ask > auto; encryption on >
 *   off); it can never widen to "auto" or turn encryption off.
 * Every setting that names where data, credentials or code go is `machine` (the API endpoint, the
 * sync bucket, its endpoint and region, the metrics port, MCP servers, the interpreter):
 * tests/settings/test_where_data_goes.py finds them in package.json and holds this table to it.
 * Each ignored value is reported once per window: a log line and one non-modal note.
 */
import * as fs from 'node:fs';
import { parse as parseJsoncText, type ParseError } from 'jsonc-parser';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { CONFIG_SECTION } from './constants';
import type { ServerSettings } from './client/protocol';

export type NotificationLevel = 'off' | 'onError' | 'onWarning' | 'always';

export type SettingRule = 'machine' | 'narrowOnly';

/** Keys (below `retrace.`) whose workspace values are restricted, and how. */
export const SETTING_RULES: Readonly<Record<string, SettingRule>> = {
    baseUrl: 'machine',
    'model.openaiCompatible.baseUrl': 'machine',
    'model.bedrock.region': 'machine',
    'model.vertex.projectId': 'machine',
    'model.vertex.region': 'machine',
    pythonPath: 'machine',
    'permissions.write': 'narrowOnly',
    'permissions.command': 'narrowOnly',
    'permissions.mcp': 'narrowOnly',
    'mcp.servers': 'machine',
    'remote.url': 'machine',
    'remote.endpoint': 'machine',
    'remote.region': 'machine',
    'remote.encrypt': 'narrowOnly',
    'metrics.port': 'machine',
    'terminal.addToPath': 'machine',
};

/** The parts of `WorkspaceConfiguration.inspect()` the rules read. */
export interface Inspected {
    readonly defaultValue?: unknown;
    readonly globalValue?: unknown;
    readonly workspaceValue?: unknown;
    readonly workspaceFolderValue?: unknown;
}

export interface IgnoredValue {
    readonly key: string;
    readonly scope: 'workspace' | 'workspaceFolder';
    readonly value: unknown;
    readonly reason: string;
}

export interface EffectiveValue {
    readonly value: unknown;
    readonly ignored: readonly IgnoredValue[];
}

const STRICTNESS: Readonly<Record<string, number>> = { auto: 0, ask: 1, deny: 2 };

/**
 * Rank of a permission policy (an unknown value ranks as "ask": the server validates it) or of
 * a safety switch (`true`, e.g. encryption on, is the strict value).
 */
function strictness(value: unknown): number {
    if (typeof value === 'boolean') {
        return value ? 2 : 0;
    }
    return typeof value === 'string' ? (STRICTNESS[value] ?? 1) : 1;
}

/** The value of `key` under its rule, and the workspace values the rule ignored. */
export function effectiveValue(key: string, inspected: Inspected, rule: SettingRule | undefined): EffectiveValue {
    const userValue = inspected.globalValue !== undefined ? inspected.globalValue : inspected.defaultValue;
    const layers: [IgnoredValue['scope'], unknown][] = [
        ['workspace', inspected.workspaceValue],
        ['workspaceFolder', inspected.workspaceFolderValue],
    ];
    const ignored: IgnoredValue[] = [];
    let value = userValue;
    for (const [scope, layer] of layers) {
        if (layer === undefined) {
            continue;
        }
        if (rule === 'machine') {
            ignored.push({ key, scope, value: layer, reason: 'only user settings may set it' });
        } else if (rule === 'narrowOnly' && strictness(layer) < strictness(value)) {
            ignored.push({ key, scope, value: layer, reason: `a workspace may only make it stricter than "${String(value)}"` });
        } else {
            value = layer;
        }
    }
    return { value, ignored };
}

/** One human line for an ignored value (log and note). */
export function describeIgnored(i: IgnoredValue): string {
    const where = i.scope === 'workspace' ? 'workspace' : 'folder';
    return `ignored the ${where} value of ${CONFIG_SECTION}.${i.key} (${JSON.stringify(i.value)}): ${i.reason}`;
}

/** Scoped to the first folder, so `inspect` also sees its folder-level values. */
function section(): vscode.WorkspaceConfiguration {
    return vscode.workspace.getConfiguration(CONFIG_SECTION, vscode.workspace.workspaceFolders?.[0]?.uri);
}

const reported = new Set<string>();
let reporter: ((ignored: readonly IgnoredValue[]) => void) | undefined;

/** Who is told about newly ignored workspace values (set once by the extension's activation). */
export function onIgnoredSettings(report: (ignored: readonly IgnoredValue[]) => void): void {
    reporter = report;
}

let pending: IgnoredValue[] = [];
let flushTimer: ReturnType<typeof setTimeout> | undefined;

/**
 * Report each ignored value once per window (same key, scope and value). Values found while one
 * server launch reads its settings arrive together: they are batched into one report.
 */
function reportIgnored(ignored: readonly IgnoredValue[]): void {
    for (const i of ignored) {
        // Without the scope: one folder's settings.json is both its workspace and folder value.
        const id = `${i.key}\u0000${JSON.stringify(i.value)}`;
        if (!reported.has(id)) {
            reported.add(id);
            pending.push(i);
        }
    }
    if (pending.length > 0 && flushTimer === undefined) {
        flushTimer = setTimeout(() => {
            const batch = pending;
            pending = [];
            flushTimer = undefined;
            reporter?.(batch);
        }, 250);
    }
}

/** Parse settings.json (comments and trailing commas allowed, as VS Code reads it); undefined when it is not valid. */
export function parseJsonc(text: string): unknown {
    const errors: ParseError[] = [];
    const value: unknown = parseJsoncText(text, errors, { allowTrailingComma: true, disallowComments: false });
    return errors.length === 0 ? value : undefined;
}

/**
 * The first folder's `.vscode/settings.json`, parsed. VS Code drops machine-scoped values before
 * `inspect` (they never apply), so this is read only to tell the user such values were ignored.
 */
function folderSettingsFile(): Record<string, unknown> | undefined {
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
    if (folder?.scheme !== 'file') {
        return undefined;
    }
    try {
        const parsed = parseJsonc(fs.readFileSync(path.join(folder.fsPath, '.vscode', 'settings.json'), 'utf8'));
        return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : undefined;
    } catch {
        return undefined;
    }
}

/**
 * The effective value of every restricted key (the folder's settings file is read once). Every
 * key is checked on each read, so what a workspace tried is reported in one batch, whichever key
 * was read first.
 */
function restrictedValues(config: vscode.WorkspaceConfiguration): Record<string, EffectiveValue> {
    let file: Record<string, unknown> | undefined | null = null;
    const out: Record<string, EffectiveValue> = {};
    for (const key of Object.keys(SETTING_RULES)) {
        let inspected: Inspected = config.inspect(key) ?? {};
        if (SETTING_RULES[key] === 'machine' && inspected.workspaceValue === undefined && inspected.workspaceFolderValue === undefined) {
            file = file === null ? folderSettingsFile() : file;
            inspected = { ...inspected, workspaceValue: file?.[`${CONFIG_SECTION}.${key}`] };
        }
        out[key] = effectiveValue(key, inspected, SETTING_RULES[key]);
    }
    reportIgnored(Object.values(out).flatMap(v => v.ignored));
    return out;
}

function restricted(config: vscode.WorkspaceConfiguration, key: string): unknown {
    return restrictedValues(config)[key]?.value;
}

export function pythonPathSetting(): string {
    const value = restricted(section(), 'pythonPath');
    return typeof value === 'string' ? value.trim() : '';
}

/** `retrace.terminal.addToPath` (user settings only): whether terminals get `retrace` on PATH. */
export function terminalAddToPath(): boolean {
    return restricted(section(), 'terminal.addToPath') !== false;
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
 * A group below the section as an object to write into (a copy). A plain string where a group is
 * expected is the setting it replaced: `retrace.model` was the model id (VS Code still gives a
 * user's old `"retrace.model": "…"` as that string), so it becomes `{ id }` and is not lost.
 */
function groupCopy(child: unknown): Record<string, unknown> {
    if (typeof child === 'object' && child !== null) {
        return { ...(child as Record<string, unknown>) };
    }
    return typeof child === 'string' ? { id: child } : {};
}

/** Replace each restricted key of a raw section (nested objects, as `getConfiguration` gives them). */
export function applyRestricted(raw: Record<string, unknown>, valueOf: (key: string) => unknown): Record<string, unknown> {
    const out: Record<string, unknown> = { ...raw };
    for (const key of Object.keys(SETTING_RULES)) {
        const parts = key.split('.');
        const value = valueOf(key);
        if (value === undefined && typeof out[parts[0] ?? key] === 'string') {
            continue; // nothing to remove below a plain string (the old retrace.model)
        }
        let target = out;
        for (const part of parts.slice(0, -1)) {
            const copy = groupCopy(target[part]);
            target[part] = copy;
            target = copy;
        }
        const leaf = parts[parts.length - 1] ?? key;
        if (value === undefined) {
            delete target[leaf];
        } else {
            target[leaf] = value;
        }
    }
    return out;
}

/**
 * The section as the server reads it (`ServerSettings`, extra keys ignored server-side), with
 * the restricted keys' effective values. Empty strings mean "unset" in the manifest and travel
 * as `null`.
 */
export function serverSettings(): ServerSettings {
    const config = section();
    const raw = JSON.parse(JSON.stringify(config)) as Record<string, unknown>;
    const values = restrictedValues(config);
    return normaliseSettings(applyRestricted(raw, key => values[key]?.value));
}

export function normaliseSettings(raw: Record<string, unknown>): ServerSettings {
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(raw)) {
        if (key === 'pythonPath' || key === 'notifications' || key === 'context' || key === 'terminal') {
            continue; // client-only keys
        }
        out[key] = value === '' ? null : value;
    }
    return out; // the server validates the section (pydantic) and ignores unknown keys
}
