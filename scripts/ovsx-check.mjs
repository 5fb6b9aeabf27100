// Open VSX readiness of built .vsix packages, offline and without a token: ovsx's own publish
// (the function `ovsx publish <file.vsix>` runs) uploads each package to a stand-in of the Open VSX publish API on 127.0.0.1 that this
// script runs, which checks what the registry checks on publish and answers as the registry does.
// Nothing is published anywhere (there is no token here, and `ovsx verify-pat` needs open-vsx.org).
//
// What is checked, per package (the registry's own rules, from its ExtensionValidator and publish
// handler, and ovsx's manifest checks):
//   - ovsx's `validateManifest`: publisher, name, version present;
//   - a license: `license` in package.json or a LICENSE file in the package (Open VSX refuses an
//     unlicensed extension);
//   - `repository` present and a valid absolute URL (as `homepage`, `bugs`, `qna` when given);
//   - `engines.vscode` a valid range; name and publisher match [\w\-+$~]+; version a semantic
//     version, not a reserved word; displayName/description within size and printable;
//     galleryBanner.theme dark|light; markdown github|standard;
//   - the target platform (extension.vsixmanifest) is one Open VSX knows, and the package is under
//     the publish size the client allows.
// Usage: node scripts/ovsx-check.mjs <package.vsix> [...]   (exit 0: every package passes)
import fs from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(path.join(root, 'package.json'));
const ovsxPackage = require.resolve('ovsx/package.json');
const { publish, validateManifest } = require('ovsx');
const semver = createRequire(ovsxPackage)('semver');

export const TARGETS = ['win32-x64', 'win32-arm64', 'linux-x64', 'linux-arm64', 'linux-armhf', 'alpine-x64', 'alpine-arm64', 'darwin-x64', 'darwin-arm64', 'web', 'universal'];
const NAME = /^[\w\-+$~]+$/;
const LIMIT = 255;

function validUrl(value) {
  const v = value.startsWith('git+') ? value.slice(4) : value;
  try {
    const u = new URL(v);
    return !(/^https?:$/.test(u.protocol) && u.host === '');
  } catch {
    return false;
  }
}

function printable(value) {
  return typeof value !== 'string' || !/[\p{Cc}\p{Cf}\p{Cn}\p{Co}\p{Zl}\p{Zp}]/u.test(value.replace(/\u200d/g, ''));
}

const urlOf = v => (typeof v === 'string' ? v : v?.url);

/** Every reason the registry would refuse this package (empty: it would take it). */
export function issuesOf(manifest, { targetPlatform, hasLicenseFile, size, maxSize }) {
  const issues = [];
  try {
    validateManifest(manifest);
  } catch (err) {
    issues.push(err.message);
  }
  if (!manifest.license && !hasLicenseFile) issues.push('This extension cannot be accepted because it has no license.');
  if (typeof manifest.license === 'string' && (manifest.license.length > LIMIT || !printable(manifest.license))) issues.push('Invalid license field.');
  if (!urlOf(manifest.repository)) issues.push("Missing field 'repository' (Open VSX shows the source link; ovsx refuses without --allow-missing-repository).");
  for (const field of ['repository', 'homepage', 'bugs']) {
    const url = urlOf(manifest[field]);
    if (url !== undefined && (!validUrl(url) || url.length > LIMIT)) issues.push(`Invalid URL in field '${field}': ${url}`);
  }
  if (manifest.qna !== undefined && manifest.qna !== false && !['marketplace', 'false'].includes(String(manifest.qna)) && !validUrl(String(manifest.qna))) issues.push(`Invalid value in field 'qna': ${manifest.qna}`);
  const range = manifest.engines?.vscode;
  if (typeof range !== 'string' || semver.validRange(range) === null) issues.push(`Missing or invalid engines.vscode: ${range}`);
  for (const [field, value] of [['name', manifest.name], ['publisher', manifest.publisher]]) {
    if (typeof value === 'string' && (!NAME.test(value) || value.length > LIMIT)) issues.push(`Invalid ${field}: ${value}`);
  }
  if (typeof manifest.version === 'string' && (semver.valid(manifest.version) === null || ['latest', 'pre-release', 'reviews'].includes(manifest.version))) issues.push(`Invalid semantic version: ${manifest.version}`);
  if (!printable(manifest.displayName) || (manifest.displayName ?? '').length > LIMIT) issues.push('Invalid displayName.');
  if (!printable(manifest.description) || (manifest.description ?? '').length > 2048) issues.push('Invalid description.');
  for (const word of [...(manifest.keywords ?? []), ...(manifest.categories ?? [])]) {
    if (!printable(word) || word.length > LIMIT) issues.push(`Invalid keyword or category: ${word}`);
  }
  const theme = manifest.galleryBanner?.theme;
  if (theme !== undefined && !['dark', 'light'].includes(theme)) issues.push(`Invalid value in field 'galleryBanner.theme': ${theme}`);
  if ((manifest.galleryBanner?.color ?? '').length > 16) issues.push("Field 'galleryBanner.color' is too long.");
  if (manifest.markdown !== undefined && !['github', 'standard'].includes(manifest.markdown)) issues.push(`Invalid value in field 'markdown': ${manifest.markdown}`);
  if (!TARGETS.includes(targetPlatform)) issues.push(`Unsupported target platform '${targetPlatform}'`);
  if (size > maxSize) issues.push(`The package (${size} bytes) is over the publish size of ${maxSize} bytes.`);
  return issues;
}

/** The entries of a zip whose lower-cased names `want` accepts (central directory; stored or deflated). */
export function readZipEntries(buf, want) {
  const eocd = buf.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (eocd < 0) throw new Error('not a zip file');
  const count = buf.readUInt16LE(eocd + 10);
  let at = buf.readUInt32LE(eocd + 16);
  const out = new Map();
  for (let i = 0; i < count; i++) {
    if (buf.readUInt32LE(at) !== 0x02014b50) throw new Error('damaged zip central directory');
    const method = buf.readUInt16LE(at + 10);
    const compressed = buf.readUInt32LE(at + 20);
    const nameLen = buf.readUInt16LE(at + 28);
    const extraLen = buf.readUInt16LE(at + 30);
    const commentLen = buf.readUInt16LE(at + 32);
    const local = buf.readUInt32LE(at + 42);
    const name = buf.toString('utf8', at + 46, at + 46 + nameLen).toLowerCase();
    if (want(name)) {
      const start = local + 30 + buf.readUInt16LE(local + 26) + buf.readUInt16LE(local + 28);
      const data = buf.subarray(start, start + compressed);
      out.set(name, method === 0 ? data : zlib.inflateRawSync(data));
    }
    at += 46 + nameLen + extraLen + commentLen;
  }
  return out;
}

/** What the registry reads from an uploaded package. */
async function inspect(file) {
  const entries = readZipEntries(fs.readFileSync(file), name => name === 'extension/package.json' || name === 'extension.vsixmanifest' || /^extension\/licen[cs]e(\.(md|txt))?$/.test(name));
  const raw = entries.get('extension/package.json');
  if (raw === undefined) return { error: 'Manifest not found.' };
  const manifest = JSON.parse(raw.toString('utf8'));
  const vsixManifest = entries.get('extension.vsixmanifest')?.toString('utf8') ?? '';
  const targetPlatform = /TargetPlatform="([^"]+)"/.exec(vsixManifest)?.[1] ?? 'universal';
  const hasLicenseFile = [...entries.keys()].some(n => n.startsWith('extension/licen'));
  return { manifest, targetPlatform, hasLicenseFile };
}

/** A stand-in of the registry's publish endpoint on loopback; resolves to { url, received, close }. */
function standInRegistry(maxSize) {
  const received = [];
  const server = http.createServer((req, res) => {
    const reply = (status, body) => {
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const url = new URL(req.url, 'http://127.0.0.1');
    if (req.method === 'POST' && url.pathname === '/api/-/publish') {
      const tmp = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ovsx-check-')), 'upload.vsix');
      const out = fs.createWriteStream(tmp);
      req.pipe(out);
      out.on('finish', async () => {
        try {
          const size = fs.statSync(tmp).size;
          const info = await inspect(tmp);
          const issues = info.error ? [info.error] : issuesOf(info.manifest, { ...info, size, maxSize });
          received.push({ size, targetPlatform: info.targetPlatform, issues, token: url.searchParams.get('token') });
          if (issues.length > 0) {
            reply(400, { error: issues.join('\n') });
          } else {
            reply(201, { namespace: info.manifest.publisher, name: info.manifest.name, version: info.manifest.version, targetPlatform: info.targetPlatform });
          }
        } catch (err) {
          reply(400, { error: String(err) });
        } finally {
          fs.rmSync(path.dirname(tmp), { recursive: true, force: true });
        }
      });
      return;
    }
    reply(404, { error: `not part of the stand-in: ${req.method} ${url.pathname}` });
  });
  return new Promise(resolve => server.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${server.address().port}`, received, close: () => server.close() })));
}

async function main(files) {
  if (files.length === 0) {
    console.error('usage: node scripts/ovsx-check.mjs <package.vsix> [...]');
    process.exit(2);
  }
  const maxSize = require(path.join(path.dirname(ovsxPackage), 'lib', 'registry.js')).DEFAULT_PUBLISH_SIZE;
  const registry = await standInRegistry(maxSize);
  let failed = 0;
  // ovsx's own publish (the function its CLI runs), once per package, in this process: one load
  // of ovsx for all packages. Each upload is told apart by its token.
  const check = async (file, i) => {
    const started = Date.now();
    const token = `offline-check-${i}`;
    const [result] = await publish({ packagePath: [path.resolve(file)], registryUrl: registry.url, pat: token });
    const seen = registry.received.find(x => x.token === token);
    const ok = result?.status === 'fulfilled' && seen !== undefined && seen.issues.length === 0;
    const lines = [`[ovsx-check] ${path.basename(file)} (${seen?.targetPlatform ?? '?'}, ${((seen?.size ?? 0) / 1e6).toFixed(1)} MB): ${ok ? 'accepted' : 'REFUSED'} in ${Date.now() - started} ms`];
    if (!ok) {
      failed++;
      lines.push(result?.status === 'rejected' ? `ovsx: ${result.reason?.message ?? result.reason}` : '', ...(seen?.issues ?? []).map(issue => `  - ${issue}`));
    }
    return lines.join('\n');
  };
  try {
    for (const report of await Promise.all(files.map(check))) console.log(report);
  } finally {
    registry.close();
  }
  process.exit(failed === 0 ? 0 : 1);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await main(process.argv.slice(2));
}
