// Test only (loaded by tests/e2e/run-exthost-tests.mjs for the vscodeLm suite, never shipped):
// a scripted language model registered through VS Code 1.100's proposed `chatProvider` API
// (`vscode.lm.registerChatModelProvider`). Its first answer streams text and calls write_file;
// once the last message carries a tool result it streams a closing text; 'wait for cancel' waits
// until its token is cancelled (counted in `seen.cancelled`) or the suite calls `seen.release()`. Every request it
// receives is recorded (as plain JSON) in the exported `requests`, for the suite to inspect.
// Every part goes to fragment index 0: VS Code 1.100 gives the requester that index's stream only.
'use strict';
const vscode = require('vscode');

const MODEL_ID = 'retrace-test-model';
const CALL_ID = 'lm_call_1';

// By shape, not class: VS Code 1.100 hands a provider its tool results as the proposed
// LanguageModelToolResultPart2, which is not the stable LanguageModelToolResultPart.
function plainPart(part) {
  if (typeof part.callId === 'string' && Array.isArray(part.content)) {
    return { kind: 'toolResult', callId: part.callId, content: part.content.map(c => (typeof c.value === 'string' ? c.value : '?')) };
  }
  if (typeof part.callId === 'string') return { kind: 'toolCall', callId: part.callId, name: part.name, input: part.input };
  if (typeof part.value === 'string') return { kind: 'text', text: part.value };
  return { kind: 'other' };
}

function activate() {
  const requests = [];
  const seen = { cancelled: 0, release: undefined };
  const provider = {
    async provideLanguageModelResponse(messages, options, extensionId, progress, token) {
      const plain = messages.map(m => ({
        role: m.role === vscode.LanguageModelChatMessageRole.Assistant ? 'assistant' : 'user',
        parts: m.content.map(plainPart),
      }));
      requests.push({ messages: plain, tools: (options.tools || []).map(t => t.name), extensionId });
      const last = plain[plain.length - 1];
      const answered = last !== undefined && last.parts.some(p => p.kind === 'toolResult');
      const say = text => progress.report({ index: 0, part: new vscode.LanguageModelTextPart(text) });
      if (last !== undefined && last.parts.some(p => p.kind === 'text' && p.text === 'wait for cancel')) {
        say('Waiting');
        await new Promise(resolve => {
          seen.release = resolve;
          token.onCancellationRequested(() => {
            seen.cancelled += 1;
            resolve();
          });
        });
        return;
      }
      if (!answered) {
        say("I'll write ");
        say('it. ');
        const input = { path: 'lm.txt', content: 'written through vscode.lm\n' };
        progress.report({ index: 0, part: new vscode.LanguageModelToolCallPart(CALL_ID, 'write_file', input) });
        return;
      }
      say('Done');
      say(' via vscode.lm.');
    },
    async provideTokenCount(text) {
      return typeof text === 'string' ? Math.ceil(text.length / 4) : 1;
    },
  };
  const registration = vscode.lm.registerChatModelProvider(MODEL_ID, provider, {
    vendor: 'retrace-test',
    name: 'Retrace Test Model',
    family: 'retrace-test',
    version: '1',
    maxInputTokens: 100000,
    maxOutputTokens: 4096,
    isUserSelectable: true,
    capabilities: { toolCalling: true },
  });
  return { requests, seen, registration, modelId: MODEL_ID, callId: CALL_ID };
}

module.exports = { activate, deactivate() {} };
