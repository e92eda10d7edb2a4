// The official `openai` npm client against `tokenbatch serve` (noop backend):
// embeddings.create with a string, an array, and base64 / float encodings, with an
// API key; then SIGTERM, which must end the server with exit code 0.
//
// Usage: node openai_embeddings.cjs /path/to/tokenbatch /path/to/npm-openai-prefix
// (the prefix is where scripts/fetch_npm_test_deps.sh installed openai).
'use strict';
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const net = require('node:net');
const path = require('node:path');

const [binary, npmPrefix] = process.argv.slice(2);
const OpenAI = require(path.join(npmPrefix, 'node_modules', 'openai'));

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

async function waitHealthy(port, child) {
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    try {
      const r = await fetch(`http://127.0.0.1:${port}/health`);
      if (r.status === 200) return;
    } catch (_) { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('server did not become healthy');
}

async function main() {
  const port = await freePort();
  const child = spawn(binary, ['serve', '--backend', 'noop', '--noop-hidden', '32', '--port', String(port),
                               '--api-key', 'test-key', '--served-model-name', 'tokenbatch-noop'],
                      { stdio: ['ignore', 'inherit', 'inherit'] });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  try {
    await waitHealthy(port, child);
    const client = new OpenAI({ apiKey: 'test-key', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });

    // A string; the client asks for base64 by default and decodes it to floats.
    const one = await client.embeddings.create({ model: 'tokenbatch-noop', input: 'hello world' });
    assert.equal(one.object, 'list');
    assert.equal(one.model, 'tokenbatch-noop');
    assert.equal(one.data.length, 1);
    assert.equal(one.data[0].index, 0);
    assert.equal(one.data[0].embedding.length, 32);
    assert.equal(one.usage.prompt_tokens, 2);  // Qwen3: "hello", " world"
    const norm = Math.hypot(...one.data[0].embedding);
    assert.ok(Math.abs(norm - 1) < 1e-5, `norm ${norm}`);

    // An array, explicitly as floats.
    const texts = ['first input', 'a second, longer input text', 'third'];
    const many = await client.embeddings.create({ model: 'x', input: texts, encoding_format: 'float' });
    assert.equal(many.data.length, 3);
    many.data.forEach((d, i) => assert.equal(d.index, i));
    assert.notDeepEqual(many.data[0].embedding, many.data[1].embedding);

    // Explicit base64 comes back as the base64 string; it decodes to the float answer.
    const b64 = await client.embeddings.create({ model: 'x', input: texts, encoding_format: 'base64' });
    const buf = Buffer.from(b64.data[1].embedding, 'base64');
    const decoded = Array.from(new Float32Array(buf.buffer, buf.byteOffset, buf.length / 4));
    // JSON carries each float32 in its shortest form, so compare as float32.
    assert.deepEqual(decoded, Array.from(Float32Array.from(many.data[1].embedding)));

    // Dimensions, and a wrong key gives the client's AuthenticationError (401).
    const dims = await client.embeddings.create({ model: 'x', input: 'hello', dimensions: 8, encoding_format: 'float' });
    assert.equal(dims.data[0].embedding.length, 8);
    const bad = new OpenAI({ apiKey: 'wrong', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
    await assert.rejects(bad.embeddings.create({ model: 'x', input: 'hello' }), (e) => e.status === 401);
  } finally {
    child.kill('SIGTERM');
  }
  const { code, signal } = await exited;
  assert.equal(signal, null, `server died of ${signal}`);
  assert.equal(code, 0, 'server must exit 0 after SIGTERM');
  console.log('openai client test passed');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
