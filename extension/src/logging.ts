/**
 * The one log of the extension: a `LogOutputChannel` named "Retrace", shared with the language
 * client (its output and trace channel). Mirrors to the console when `CI` is set so failed CI runs
 * show the extension's log. Never log secrets.
 */
import * as vscode from 'vscode';

let channel: vscode.LogOutputChannel | undefined;

export function createLog(): vscode.LogOutputChannel {
    channel ??= vscode.window.createOutputChannel('Retrace', { log: true });
    return channel;
}

function mirror(level: string, message: string): void {
    if (process.env['CI'] !== undefined || process.env['RETRACE_LOG_CONSOLE'] !== undefined) {
        console.log(`[retrace ${level}] ${message}`);
    }
}

export const log = {
    info(message: string): void {
        channel?.info(message);
        mirror('info', message);
    },
    warn(message: string): void {
        channel?.warn(message);
        mirror('warn', message);
    },
    error(message: string, err?: unknown): void {
        const detail = err === undefined ? '' : `: ${errorMessage(err)}`;
        channel?.error(message + detail);
        mirror('error', message + detail);
    },
    debug(message: string): void {
        channel?.debug(message);
    },
};

export function errorMessage(err: unknown): string {
    if (err instanceof Error) {
        return err.message;
    }
    return typeof err === 'string' ? err : JSON.stringify(err);
}
