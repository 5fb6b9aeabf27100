/** Helpers for the extension-host suites: the extension's API, polling, a scripted prompter. */
import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { RetraceApi } from '../../../extension/src/extension';
import type { AgentEvent } from '../../../extension/src/client/protocol';
import type { Prompter } from '../../../extension/src/ui';

export const EXTENSION_ID = 'retrace.retrace';

export async function api(): Promise<RetraceApi> {
    const ext = vscode.extensions.getExtension<RetraceApi | undefined>(EXTENSION_ID);
    assert.ok(ext, `extension ${EXTENSION_ID} is loaded`);
    const exported = ext.isActive ? ext.exports : await ext.activate();
    assert.ok(exported, 'activate() returned the API');
    return exported;
}

export async function waitFor<T>(what: string, fn: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
        const v = await fn();
        if (v !== undefined && v !== false) {
            return v;
        }
        if (Date.now() > deadline) {
            throw new Error(`timed out waiting for ${what}`);
        }
        await new Promise(r => setTimeout(r, 100));
    }
}

export function workspaceRoot(): vscode.Uri {
    const folder = vscode.workspace.workspaceFolders?.[0];
    assert.ok(folder, 'a workspace folder is open');
    return folder.uri;
}

export async function readText(rel: string): Promise<string | undefined> {
    try {
        return new TextDecoder().decode(await vscode.workspace.fs.readFile(vscode.Uri.joinPath(workspaceRoot(), rel)));
    } catch {
        return undefined;
    }
}

/** Resolves with the first agent event matching `pred` (subscribe BEFORE triggering it). */
export function nextEvent(a: RetraceApi, pred: (e: AgentEvent) => boolean, timeoutMs = 60_000): Promise<AgentEvent> {
    return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
            sub.dispose();
            reject(new Error('timed out waiting for an agent event'));
        }, timeoutMs);
        const sub = a.ctx.onAgentEvent(e => {
            if (pred(e)) {
                clearTimeout(timer);
                sub.dispose();
                resolve(e);
            }
        });
    });
}

/** Answers dialogs from a script and records what was asked. */
export class ScriptedPrompter implements Prompter {
    readonly asked: { kind: 'modal' | 'notify'; message: string; detail: string; buttons: readonly string[] }[] = [];
    constructor(private readonly answer: (message: string, buttons: readonly string[]) => string | undefined) {}
    modal(message: string, detail: string, buttons: readonly string[]): Promise<string | undefined> {
        this.asked.push({ kind: 'modal', message, detail, buttons });
        return Promise.resolve(this.answer(message, buttons));
    }
    notify(_severity: 'info' | 'warning' | 'error', message: string, buttons: readonly string[]): Promise<string | undefined> {
        this.asked.push({ kind: 'notify', message, detail: '', buttons });
        return Promise.resolve(undefined);
    }
}
