/**
 * The chat log's rich items' style (rendered Markdown, code blocks, a tool call's inline diff and
 * checkpoint link, the usage line, the visually hidden live regions). Theme variables only; added
 * to the chat webview's one nonce'd style element.
 */
export const LOG_CSS = `
.markdown { white-space: normal; }
.markdown > :first-child { margin-top: 0; }
.markdown > :last-child { margin-bottom: 0; }
.markdown p, .markdown ul, .markdown ol, .markdown table, .markdown blockquote { margin: 0.4em 0; }
.markdown h1, .markdown h2, .markdown h3, .markdown h4, .markdown h5, .markdown h6 { margin: 0.6em 0 0.3em; line-height: 1.25; }
.markdown h1 { font-size: 1.35em; } .markdown h2 { font-size: 1.2em; } .markdown h3 { font-size: 1.08em; }
.markdown h4, .markdown h5, .markdown h6 { font-size: 1em; }
.markdown ul, .markdown ol { padding-left: 1.6em; }
.markdown a { color: var(--vscode-textLink-foreground); text-decoration: none; }
.markdown a:hover, .markdown a:focus { text-decoration: underline; color: var(--vscode-textLink-activeForeground); }
.markdown code { font-family: var(--vscode-editor-font-family); font-size: 0.92em; background: var(--vscode-textCodeBlock-background); padding: 0 3px; border-radius: 3px; }
.markdown blockquote { border-left: 3px solid var(--vscode-textBlockQuote-border); background: var(--vscode-textBlockQuote-background); padding: 2px 8px; margin-left: 0; }
.markdown table { border-collapse: collapse; display: block; overflow-x: auto; }
.markdown th, .markdown td { border: 1px solid var(--vscode-widget-border, var(--vscode-panel-border)); padding: 2px 6px; }
.markdown th { font-weight: 600; }
.markdown .align-right { text-align: right; } .markdown .align-center { text-align: center; } .markdown .align-left { text-align: left; }
.markdown hr { border: none; border-top: 1px solid var(--vscode-panel-border); }
.image-placeholder { color: var(--vscode-descriptionForeground); font-style: italic; }
.code-block { margin: 0.5em 0; border: 1px solid var(--vscode-widget-border, var(--vscode-panel-border)); border-radius: 3px; background: var(--vscode-textCodeBlock-background); }
.code-head { display: flex; justify-content: space-between; align-items: center; padding: 1px 4px 1px 8px; border-bottom: 1px solid var(--vscode-widget-border, var(--vscode-panel-border)); font-size: 0.85em; color: var(--vscode-descriptionForeground); }
.code-block pre { margin: 0; padding: 6px 8px; overflow-x: auto; white-space: pre; }
.code-block pre code { background: none; padding: 0; font-size: 0.92em; }
button.code-copy { padding: 1px 8px; font-size: 0.95em; background: var(--vscode-button-secondaryBackground); color: var(--vscode-button-secondaryForeground); }
button.code-copy[data-copied] { background: var(--vscode-button-background); color: var(--vscode-button-foreground); }
.tool-call { white-space: normal; }
.tool-call > details.tool { margin-bottom: 0; }
.tool-extras { display: flex; flex-wrap: wrap; align-items: baseline; gap: 4px 10px; padding: 0 6px 2px; font-size: 0.92em; }
details.tool-diff { flex: 1 1 100%; order: 2; }
details.tool-diff summary { cursor: pointer; color: var(--vscode-descriptionForeground); }
.diff-text { margin: 4px 0; max-height: 320px; overflow: auto; white-space: pre; font-family: var(--vscode-editor-font-family); font-size: 0.9em; background: var(--vscode-textCodeBlock-background); padding: 4px 6px; }
.diff-text .d-add { color: var(--vscode-gitDecoration-addedResourceForeground, var(--vscode-terminal-ansiGreen)); }
.diff-text .d-del { color: var(--vscode-gitDecoration-deletedResourceForeground, var(--vscode-errorForeground)); }
.diff-text .d-hunk { color: var(--vscode-descriptionForeground); }
.diff-text .d-file { font-weight: 600; }
.diff-note { color: var(--vscode-descriptionForeground); font-style: italic; }
button.link { background: none; border: none; padding: 0; color: var(--vscode-textLink-foreground); cursor: pointer; }
button.link:hover, button.link:focus { text-decoration: underline; background: none; }
.usage { color: var(--vscode-descriptionForeground); font-size: 0.88em; text-align: right; margin-top: 0; font-variant-numeric: tabular-nums; }
.sr-only { position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
`;
