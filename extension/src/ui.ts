/**
 * The few dialogs commands show, behind one seam so extension-host tests can answer them
 * (a modal dialog would otherwise block a test forever).
 */
import * as vscode from 'vscode';

export interface Prompter {
    /** A modal warning; resolves to the chosen button or undefined (cancel). */
    modal(message: string, detail: string, buttons: readonly string[]): Promise<string | undefined>;
    /** A non-modal notification with optional buttons. */
    notify(severity: 'info' | 'warning' | 'error', message: string, buttons: readonly string[]): Promise<string | undefined>;
    /** A quick pick the user opened themselves (never on its own); undefined when dismissed. */
    choose?(placeHolder: string, items: readonly string[]): Promise<string | undefined>;
}

export const vscodePrompter: Prompter = {
    async modal(message, detail, buttons) {
        return vscode.window.showWarningMessage(message, { modal: true, detail }, ...buttons);
    },
    async notify(severity, message, buttons) {
        const show =
            severity === 'error' ? vscode.window.showErrorMessage : severity === 'warning' ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
        return show(message, ...buttons);
    },
    async choose(placeHolder, items) {
        return vscode.window.showQuickPick([...items], { placeHolder, ignoreFocusOut: false });
    },
};

let current: Prompter = vscodePrompter;

export function prompter(): Prompter {
    return current;
}

/** Tests replace the prompter; returns a function restoring the previous one. */
export function setPrompter(p: Prompter): () => void {
    const previous = current;
    current = p;
    return () => {
        current = previous;
    };
}
