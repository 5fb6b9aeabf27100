/** The chat webview's one element factory: text goes in as `textContent`, never as HTML. */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls: string, text?: string): HTMLElementTagNameMap[K] {
    const node = document.createElement(tag);
    node.className = cls;
    if (text !== undefined) {
        node.textContent = text;
    }
    return node;
}
