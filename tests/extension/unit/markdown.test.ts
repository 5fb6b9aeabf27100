import * as assert from 'node:assert/strict';
import { isAllowedLink, plainText, renderMarkdown } from '../../../extension/src/webview/markdown';

suite('chat Markdown', () => {
    test('raw HTML is shown as text, never as elements', () => {
        const html = renderMarkdown('Hi <script>alert(1)</script> and <img src=x onerror="alert(2)"> <b>bold</b>');
        assert.ok(!/<script/i.test(html), html);
        assert.ok(!/<img/i.test(html), html);
        assert.ok(!/<b>/.test(html), html);
        assert.ok(html.includes('&lt;script&gt;alert(1)&lt;/script&gt;'), html);
        assert.ok(html.includes('&lt;img src=x onerror=&quot;alert(2)&quot;&gt;'), html);
    });

    test('only http, https and mailto links are links', () => {
        const cases: [string, boolean][] = [
            ['[a](https://example.com/x)', true],
            ['[a](http://example.com)', true],
            ['[a](mailto:me@example.com)', true],
            ['[a](javascript:alert(1))', false],
            ['[a](JavaScript:alert(1))', false],
            ['[a](  javascript:alert(1))', false],
            ['[a](vbscript:msgbox)', false],
            ['[a](data:text/html;base64,PHNjcmlwdD4=)', false],
            ['[a](file:///etc/passwd)', false],
            ['[a](command:workbench.action.quit)', false],
            ['[a](src/app.py)', false],
        ];
        for (const [source, isLink] of cases) {
            const html = renderMarkdown(source);
            assert.equal(html.includes('<a '), isLink, `${source} → ${html}`);
            assert.ok(!/href="(?!https?:|mailto:)/i.test(html), html);
        }
        assert.equal(isAllowedLink(' javascript:x'), false);
        assert.equal(isAllowedLink('https://x'), true);
    });

    test('bare URLs are linked; images are never loaded', () => {
        assert.ok(renderMarkdown('see https://example.com now').includes('<a href="https://example.com"'));
        const image = renderMarkdown('![a cat](https://example.com/cat.png)');
        assert.ok(!/<img/i.test(image), image);
        assert.ok(image.includes('[image: a cat]'), image);
    });

    test('fenced code gets a language label and a Copy button; the raw code is the code text', () => {
        const html = renderMarkdown('```python\nprint("<hi>" & 1)\n```\n');
        assert.ok(html.includes('<span class="code-lang">python</span>'), html);
        assert.ok(html.includes('<button type="button" class="code-copy" aria-label="Copy python code">Copy</button>'), html);
        assert.ok(html.includes('<code class="language-python">print(&quot;&lt;hi&gt;&quot; &amp; 1)\n</code>'), html);
        const plain = renderMarkdown('```\nx\n```\n');
        assert.ok(plain.includes('<span class="code-lang">code</span>') && plain.includes('class="code-copy"'), plain);
        const hostile = renderMarkdown('```"><script>x</script>\ny\n```\n');
        assert.ok(!hostile.includes('<script'), hostile);
    });

    test('headings, lists, emphasis, inline code and tables', () => {
        const html = renderMarkdown('## Plan\n\n- **one**\n- `two`\n\n1. a\n2. b\n\n| a | b |\n|:--|--:|\n| 1 | 2 |\n');
        for (const tag of ['<h2>Plan</h2>', '<ul>', '<li><strong>one</strong></li>', '<code>two</code>', '<ol>', '<table>', '<th class="align-left">a</th>', '<td class="align-right">2</td>']) {
            assert.ok(html.includes(tag), `${tag} in ${html}`);
        }
        assert.ok(!html.includes('style='), 'no inline style (the CSP forbids them)');
    });

    test('plain text for screen readers', () => {
        assert.equal(plainText('## Plan\n\n- **one**\n- two\n\n```js\nx()\n```\n'), 'Plan one two Code block (js).');
    });
});
