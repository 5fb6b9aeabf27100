/** The chat's prompt actions and restore menus (`promptActions.ts`), styled with theme variables only. */
export const PROMPT_ACTIONS_CSS = `
.prompt-actions { display: flex; gap: 10px; align-items: flex-start; flex-wrap: wrap; margin-top: 4px; white-space: normal; font-size: 0.9em; }
.restore-menu summary { list-style: none; cursor: pointer; color: var(--vscode-textLink-foreground); }
.restore-menu summary::-webkit-details-marker { display: none; }
.restore-choices { display: flex; flex-direction: column; align-items: flex-start; gap: 2px; padding: 2px 0 2px 8px; }
textarea.edit-prompt { width: 100%; box-sizing: border-box; }
.edit-row { display: flex; gap: 6px; margin-top: 4px; }
`;
