/**
 * The row a tree command was clicked on, when the command carries no argument. Row commands
 * carry none on purpose: the workbench holds a command's arguments per rendered item and drops
 * them when the tree re-renders (it does after every tool call), so a click on a row just
 * re-rendered would do nothing. The selection survives a re-render, but the extension host can
 * name the selected element only once the view has asked for the new rows (a few hundred ms
 * after a refresh): until then it is empty, so this waits briefly for it.
 */
import type * as vscode from 'vscode';

const WAIT_MS = 3000;
const STEP_MS = 50;

export async function selectedRow<T, K extends T>(view: vscode.TreeView<T>, accept: (node: T) => node is K): Promise<K | undefined> {
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
        const hit = view.selection.find(accept);
        if (hit !== undefined || Date.now() >= deadline) {
            return hit;
        }
        await new Promise(resolve => setTimeout(resolve, STEP_MS));
    }
}
