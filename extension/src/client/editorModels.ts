/**
 * The `vscode-lm` provider's editor side: the server asks `retrace/model/chat` (its request
 * already in `vscode.lm`'s shapes: the server owns the mapping from the agent's conversation);
 * this module only forwards it to `vscode.lm` and the reply back. The reply's text streams to
 * the server as `retrace/model/chatDelta` (each sent before the answer, in order), its tool
 * calls are collected, and the whole reply is the answer. `$/cancelRequest` (a cancelled turn)
 * cancels `vscode.lm`'s request. Failures are answered as `{ error: { code, message } }`
 * (`LanguageModelError`'s code, or `NoModel` / `Cancelled` / `Failed`); the server words them.
 */
import * as vscode from 'vscode';
import { log } from '../logging';
import type { ChatMessage, ChatModelRef, ChatTool, ModelChatParams, ModelChatResult } from './protocol';

type ReplyPart = NonNullable<ModelChatResult['parts']>[number];

/** The bridge's messages as `vscode.lm` messages (parts a role cannot hold are left out). */
export function toLmMessages(messages: readonly ChatMessage[]): vscode.LanguageModelChatMessage[] {
    return messages.map(m => {
        if (m.role === 'assistant') {
            const parts: (vscode.LanguageModelTextPart | vscode.LanguageModelToolCallPart)[] = [];
            for (const p of m.parts) {
                if (p.kind === 'text') {
                    parts.push(new vscode.LanguageModelTextPart(p.text));
                } else if (p.kind === 'toolCall') {
                    parts.push(new vscode.LanguageModelToolCallPart(p.callId, p.name, p.input));
                }
            }
            return vscode.LanguageModelChatMessage.Assistant(parts);
        }
        const parts: (vscode.LanguageModelTextPart | vscode.LanguageModelToolResultPart)[] = [];
        for (const p of m.parts) {
            if (p.kind === 'text') {
                parts.push(new vscode.LanguageModelTextPart(p.text));
            } else if (p.kind === 'toolResult') {
                parts.push(new vscode.LanguageModelToolResultPart(p.callId, p.content.map(t => new vscode.LanguageModelTextPart(t))));
            }
        }
        return vscode.LanguageModelChatMessage.User(parts);
    });
}

export function toLmTools(tools: readonly ChatTool[]): vscode.LanguageModelChatTool[] {
    return tools.map(t => ({ name: t.name, description: t.description, inputSchema: t.inputSchema }));
}

/** The configured model: the vendor's model of that id, else (no id) the vendor's first. */
export async function chooseModel(ref: ChatModelRef): Promise<vscode.LanguageModelChat | undefined> {
    const models = await vscode.lm.selectChatModels(ref.id !== '' ? { vendor: ref.vendor, id: ref.id } : { vendor: ref.vendor });
    return models[0];
}

function failure(err: unknown, token: vscode.CancellationToken): ModelChatResult {
    if (token.isCancellationRequested || err instanceof vscode.CancellationError) {
        return { parts: [], error: { code: 'Cancelled', message: '' } };
    }
    if (err instanceof vscode.LanguageModelError) {
        return { parts: [], error: { code: err.code || 'Failed', message: err.message } };
    }
    return { parts: [], error: { code: 'Failed', message: err instanceof Error ? err.message : String(err) } };
}

/** A cancellation signal (the connection's token for the request). */
export interface Cancellable {
    readonly isCancellationRequested: boolean;
    onCancellationRequested(listener: () => unknown): { dispose(): unknown };
}

/** Answer one `retrace/model/chat`: `send(text)` streams a piece of text (awaited, so in order). */
export async function answerChat(params: ModelChatParams, cancel: Cancellable, send: (text: string) => Promise<void>): Promise<ModelChatResult> {
    const source = new vscode.CancellationTokenSource();
    const link = cancel.onCancellationRequested(() => {
        log.info('language model request cancelled (the turn was)');
        source.cancel();
    });
    if (cancel.isCancellationRequested) {
        source.cancel();
    }
    try {
        return await answerWith(params, source.token, send);
    } finally {
        link.dispose();
        source.dispose();
    }
}

async function answerWith(params: ModelChatParams, token: vscode.CancellationToken, send: (text: string) => Promise<void>): Promise<ModelChatResult> {
    let model: vscode.LanguageModelChat | undefined;
    try {
        model = await chooseModel(params.model);
    } catch (err) {
        return failure(err, token);
    }
    if (model === undefined) {
        const which = params.model.id !== '' ? `${params.model.vendor}/${params.model.id}` : params.model.vendor;
        return { parts: [], error: { code: 'NoModel', message: which } };
    }
    const parts: ReplyPart[] = [];
    try {
        const options: vscode.LanguageModelChatRequestOptions = {
            tools: toLmTools(params.tools),
            justification: vscode.l10n.t("Retrace's agent sends this model your prompt, the files it reads and its tools' results."),
        };
        const response = await model.sendRequest(toLmMessages(params.messages), options, token);
        if (!(await readStream(response, token, parts, send))) {
            return { parts: [], error: { code: 'Cancelled', message: '' } };
        }
    } catch (err) {
        log.info(`language model request failed: ${err instanceof Error ? err.message : String(err)}`);
        return failure(err, token);
    }
    return { parts, model: model.id };
}

/**
 * Collect the reply's parts, streaming its text; `false` once `token` is cancelled. VS Code 1.100
 * does not pass a consumer's cancellation on to the model's provider once its answer has started
 * (the provider's token belongs to the call that started it, which has returned), so the stream is
 * left here rather than waited out.
 */
async function readStream(response: vscode.LanguageModelChatResponse, token: vscode.CancellationToken, parts: ReplyPart[], send: (text: string) => Promise<void>): Promise<boolean> {
    const cancelled = new Promise<'cancelled'>(resolve => {
        token.onCancellationRequested(() => resolve('cancelled'));
        if (token.isCancellationRequested) {
            resolve('cancelled');
        }
    });
    const stream = response.stream[Symbol.asyncIterator]();
    for (;;) {
        const next = await Promise.race([stream.next(), cancelled]);
        if (next === 'cancelled') {
            void stream.return?.();
            return false;
        }
        if (next.done === true) {
            return true;
        }
        const part: unknown = next.value;
        if (part instanceof vscode.LanguageModelTextPart && part.value !== '') {
            parts.push({ kind: 'text', text: part.value });
            await send(part.value);
        } else if (part instanceof vscode.LanguageModelToolCallPart) {
            parts.push({ kind: 'toolCall', callId: part.callId, name: part.name, input: part.input as Record<string, unknown> });
        }
    }
}

/** The connection's side: what `registerEditorModels` needs of the typed client. */
export interface ModelConnection {
    onChat(handler: (params: ModelChatParams, cancel: Cancellable) => Promise<ModelChatResult>): vscode.Disposable;
    delta(requestId: string, text: string): Promise<void>;
}

export function registerEditorModels(connection: ModelConnection): vscode.Disposable {
    return connection.onChat((params, cancel) => answerChat(params, cancel, text => connection.delta(params.requestId, text)));
}
