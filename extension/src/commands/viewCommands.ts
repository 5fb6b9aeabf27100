/**
 * The views' own commands: refresh and reveal the timeline, the change highlights' scope, the
 * Health panel, the background commands' Stop.
 */
import * as vscode from 'vscode';
import { COMMANDS, VIEW_TIMELINE } from '../constants';
import type { Parts } from './parts';
import { localCommand, serverCommand, type Registration } from './registry';

export function viewCommands({ timeline, highlighter, health, background }: Parts): Registration[] {
    return [
        serverCommand(COMMANDS.timelineRefresh, () => () => timeline.refresh()),
        localCommand(COMMANDS.timelineReveal, () => vscode.commands.executeCommand(`${VIEW_TIMELINE}.focus`)),
        localCommand(COMMANDS.decorationsLastTurn, () => highlighter.setScope({ kind: 'lastTurn' })),
        localCommand(COMMANDS.decorationsClear, () => highlighter.setScope({ kind: 'off' })),
        localCommand(COMMANDS.showHealth, () => health.show()),
        serverCommand(COMMANDS.backgroundStop, rpc => () => background.stop(rpc)),
    ];
}
