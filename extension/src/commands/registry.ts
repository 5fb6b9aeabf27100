/**
 * A command's registration: its id and how it runs. A server-backed command is a factory over the
 * server's `Rpc` (`Ctx.registerCommand`: while the server is down it says so instead of failing
 * obscurely, and the first one starts a lazily activated server); a local one runs without a
 * server (open the chat, restart, show logs, …). Each command family is a module under
 * `commands/` returning its registrations; `commands/index.ts` walks them once.
 */
import * as vscode from 'vscode';
import type { CommandId } from '../constants';
import type { CommandFactory, CommandHandler, Ctx } from '../ctx';

export interface ServerCommand {
    readonly id: CommandId;
    readonly run: CommandFactory;
}

export interface LocalCommand {
    readonly id: CommandId;
    readonly local: true;
    readonly run: CommandHandler;
}

export type Registration = ServerCommand | LocalCommand;

/** A command that needs the server (the factory receives its `Rpc`). */
export function serverCommand(id: CommandId, run: CommandFactory): Registration {
    return { id, run };
}

/** A command that works without a running server. */
export function localCommand(id: CommandId, run: CommandHandler): Registration {
    return { id, local: true, run };
}

/** Register each command once (VS Code refuses a second registration of an id). */
export function registerAll(ctx: Ctx, registrations: readonly Registration[]): void {
    for (const r of registrations) {
        if ('local' in r) {
            ctx.extension.subscriptions.push(vscode.commands.registerCommand(r.id, r.run));
        } else {
            ctx.registerCommand(r.id, r.run);
        }
    }
}
