// express.js serves two express apps limited by express-rate-limit with rate-limit-redis's
// store, one on the Redis server at 127.0.0.1:<portA>, one on <portB> (through node-redis or
// ioredis, each connected as rate-limit-redis's README shows), and hits them in a fixed
// sequence: each request goes to app A, then the same to app B, and the two answers (status,
// body, rate-limit headers) go out as one JSON line, [a, b]. compat/libraries_test.go runs it
// with redis-server as A and throttled as B and compares each line's two answers: exactly,
// but for the reset times, which count down in real time (the legacy X-RateLimit-Reset, an
// epoch time, is printed as seconds from now).
//
//   node express.js <portA> <portB> ioredis|node-redis
'use strict';

const express = require('express');
const { rateLimit } = require('express-rate-limit');
const { RedisStore } = require('rate-limit-redis');

async function connect(port, kind) {
  if (kind === 'node-redis') {
    const { createClient } = require('redis');
    const client = createClient({ url: `redis://127.0.0.1:${port}` });
    client.on('error', (err) => { console.error('node-redis:', err.message); });
    await client.connect();
    return { sendCommand: (...args) => client.sendCommand(args), close: () => client.quit() };
  }
  if (kind === 'ioredis') {
    const Redis = require('ioredis');
    const client = new Redis({ host: '127.0.0.1', port });
    await client.ping();
    return { sendCommand: (command, ...args) => client.call(command, ...args), close: () => client.quit() };
  }
  throw new Error(`unknown client ${kind}`);
}

// app serves the sequence's routes with their limiters, all stored on one server.
async function app(sendCommand, kind) {
  const limiter = (prefix, opts) => rateLimit({
    windowMs: 60 * 1000,
    limit: 3,
    legacyHeaders: true,
    keyGenerator: () => 'client', // one fixed client: the key does not depend on the loopback address
    store: new RedisStore({ sendCommand, prefix: `${kind}:${prefix}:` }),
    ...opts,
  });
  const draft7 = limiter('d7', { standardHeaders: 'draft-7' });
  const draft8 = limiter('d8', { standardHeaders: 'draft-8', identifier: 'api' });
  const failures = limiter('sf', { standardHeaders: 'draft-6', skipFailedRequests: true });
  const a = express();
  a.get('/d7', draft7, (req, res) => res.send('ok'));
  a.get('/d8', draft8, (req, res) => res.send('ok'));
  a.get('/fail', failures, (req, res) => res.status(500).send('boom'));
  a.get('/ok', failures, (req, res) => res.send('ok'));
  const server = await new Promise((resolve) => { const s = a.listen(0, '127.0.0.1', () => resolve(s)); });
  return { base: `http://127.0.0.1:${server.address().port}`, server, draft7, failures };
}

const headers = ['ratelimit-policy', 'ratelimit', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset',
  'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'retry-after'];

async function get(url) {
  const res = await fetch(url);
  const out = { status: res.status, body: await res.text(), headers: {} };
  for (const h of headers) {
    let v = res.headers.get(h);
    if (v !== null && h === 'x-ratelimit-reset') {
      v = String(Math.ceil(Number(v) - Date.now() / 1000));
    }
    if (v !== null) out.headers[h] = v;
  }
  return out;
}

async function main() {
  const [portA, portB, kind] = [Number(process.argv[2]), Number(process.argv[3]), process.argv[4]];
  const conns = [await connect(portA, kind), await connect(portB, kind)];
  const apps = [await app(conns[0].sendCommand, kind), await app(conns[1].sendCommand, kind)];

  const step = async (name, fn) => {
    const line = [];
    for (const a of apps) line.push({ step: name, ...(await fn(a)) });
    console.log(JSON.stringify(line));
  };
  const hit = (name, path) => step(name, (a) => get(a.base + path));

  for (let i = 1; i <= 5; i++) await hit(`draft-7 #${i}`, '/d7');
  for (let i = 1; i <= 4; i++) await hit(`draft-8 #${i}`, '/d8');

  // The limiter's own reads and reset: the store's get script and DEL.
  await step('getKey draft-7', async (a) => {
    const seen = await a.draft7.getKey('client');
    return { totalHits: seen.totalHits, reset: Math.ceil((seen.resetTime - Date.now()) / 1000) };
  });
  await step('resetKey draft-7', async (a) => {
    await a.draft7.resetKey('client');
    return { totalHits: (await a.draft7.getKey('client'))?.totalHits ?? null };
  });
  await hit('draft-7 after resetKey', '/d7');

  // skipFailedRequests: a 500 gives its hit back (DECR) once the response is sent; the
  // sequence waits for that before it goes on.
  await hit('ok #1', '/ok');
  for (let i = 1; i <= 3; i++) {
    await step(`fail #${i}`, async (a) => {
      const res = await get(a.base + '/fail');
      const deadline = Date.now() + 5000;
      while ((await a.failures.getKey('client')).totalHits !== 1 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 10));
      }
      return res;
    });
  }
  for (let i = 2; i <= 4; i++) await hit(`ok #${i}`, '/ok');

  for (const a of apps) a.server.close();
  for (const c of conns) await c.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
