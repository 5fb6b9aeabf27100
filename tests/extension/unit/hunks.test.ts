import * as assert from 'node:assert/strict';
import { parseUnifiedDiff, previewPatch } from '../../../extension/src/diff/hunks';

const PATCH = [
    '--- a/src/app.py',
    '+++ b/src/app.py',
    '@@ -5,4 +5,5 @@',
    ' ',
    ' ',
    '+# Touched by the Retrace e2e scenario.',
    ' def main():',
    '     names = sys.argv[1:] or ["world"]',
    '@@ -20,3 +21,2 @@',
    ' a',
    '-b',
    ' c',
    '--- /dev/null',
    '+++ b/hello.txt',
    '@@ -0,0 +1 @@',
    '+Hello from Retrace',
    '--- a/old.txt',
    '+++ /dev/null',
    '@@ -1,2 +0,0 @@',
    '-one',
    '-two',
    '--- a/notes.txt',
    '+++ b/notes.txt',
    '@@ -1,3 +1,3 @@',
    ' TODO',
    '-- support a --shout flag',
    '+- support a --loud flag',
    ' - greet in other languages',
    '\\ No newline at end of file',
    '',
].join('\n');

suite('diff hunks', () => {
    test('changed lines come from the new side of each hunk, per file', () => {
        const files = parseUnifiedDiff(PATCH);
        assert.deepEqual([...files.keys()].sort(), ['hello.txt', 'notes.txt', 'old.txt', 'src/app.py']);
        const app = files.get('src/app.py');
        assert.ok(app);
        assert.deepEqual(app.changed, [6]); // 1-based line 7 of the new file
        assert.equal(app.additions, 1);
        assert.equal(app.deletions, 1);
        // "-b" between new lines 21 ("a") and 22 ("c"): marked after 0-based line 20.
        assert.deepEqual(app.removedAfter, [20]);
    });

    test('new, deleted and modified files', () => {
        const files = parseUnifiedDiff(PATCH);
        assert.deepEqual(files.get('hello.txt')?.changed, [0]);
        assert.deepEqual(files.get('old.txt')?.changed, []);
        assert.equal(files.get('old.txt')?.deletions, 2);
        // A replaced line is a change on the new line, not also a removal marker.
        assert.deepEqual(files.get('notes.txt')?.changed, [1]);
        assert.deepEqual(files.get('notes.txt')?.removedAfter, []);
    });

    test('content lines that look like headers stay content inside a hunk', () => {
        const tricky = ['--- a/x.md', '+++ b/x.md', '@@ -1,2 +1,2 @@', '--- old rule', '+++ new rule', ' end', ''].join('\n');
        const x = parseUnifiedDiff(tricky).get('x.md');
        assert.ok(x);
        assert.deepEqual(x.changed, [0]);
        assert.equal(x.deletions, 1);
        assert.equal(parseUnifiedDiff(tricky).size, 1);
    });

    test('a truncated patch yields what it has and no crash', () => {
        const cut = PATCH.slice(0, PATCH.indexOf('+# Touched') + 5);
        const files = parseUnifiedDiff(cut);
        assert.deepEqual(files.get('src/app.py')?.changed, [6]);
        assert.equal(parseUnifiedDiff('').size, 0);
    });

    test('preview keeps the first lines and counts what it left out', () => {
        const p = previewPatch(PATCH, 4);
        assert.equal(p.text.split('\n').length, 4);
        assert.equal(p.omittedLines, PATCH.replace(/\n$/, '').split('\n').length - 4);
        assert.equal(p.omittedFiles, 3);
        assert.deepEqual(previewPatch('', 10), { text: '', omittedLines: 0, omittedFiles: 0 });
    });
});
