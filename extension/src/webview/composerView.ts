/**
 * The chat input's context row and `@` completion list: their markup (inserted above the prompt
 * box by chatView.ts) and styles (VS Code theme variables only). Behaviour lives in composer.ts.
 */
import { escapeHtml, type WebviewText } from './strings';

export function composerHtml(text: WebviewText): string {
    return `<div id="context-row" class="context-row" aria-label="${escapeHtml(text.attachedRow)}"></div>
  <div id="mention-list" class="mention-list" role="listbox" aria-label="${escapeHtml(text.workspaceFiles)}" hidden></div>`;
}

export const COMPOSER_CSS = `
.context-row { display: flex; flex-wrap: wrap; gap: 4px; margin-bottom: 4px; }
.context-row:empty { display: none; }
.chip { display: inline-flex; align-items: center; gap: 2px; border: 1px solid var(--vscode-widget-border, var(--vscode-panel-border)); border-radius: 10px; padding: 0 2px 0 8px; font-size: 0.9em; background: var(--vscode-badge-background); color: var(--vscode-badge-foreground); }
.chip.off { opacity: 0.55; text-decoration: line-through; background: transparent; color: var(--vscode-descriptionForeground); }
.chip button { background: none; color: inherit; padding: 0 4px; border-radius: 8px; }
.chip button:hover { background: var(--vscode-toolbar-hoverBackground, transparent); }
.mention-list { border: 1px solid var(--vscode-widget-border, var(--vscode-focusBorder)); background: var(--vscode-editorSuggestWidget-background, var(--vscode-input-background)); max-height: 180px; overflow-y: auto; margin-bottom: 4px; }
.mention-list[hidden] { display: none; }
.mention-option { padding: 2px 6px; cursor: pointer; font-family: var(--vscode-editor-font-family); font-size: 0.92em; }
.mention-option[aria-selected="true"] { background: var(--vscode-editorSuggestWidget-selectedBackground, var(--vscode-list-activeSelectionBackground)); color: var(--vscode-list-activeSelectionForeground, inherit); }
.attached { color: var(--vscode-descriptionForeground); font-size: 0.9em; margin-top: 2px; white-space: normal; }
`;
