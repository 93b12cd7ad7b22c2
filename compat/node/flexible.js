// flexible.js runs one fixed sequence of rate-limiter-flexible calls against two Redis servers
// at once, through ioredis or node-redis: each call goes to the server on 127.0.0.1:<portA>,
// then the same call to the one on <portB>, and the two answers go out as one JSON line,
// [a, b]. compat/libraries_test.go runs it with redis-server as A and throttled as B and
// compares each line's two answers: exactly, but for msBeforeNext, which counts down in real
// time. In lockstep, the two servers see each call within a few milliseconds of each other,
// however slowly a loaded machine runs the whole sequence.
//
//   node flexible.js <portA> <portB> ioredis|node-redis|node-redis-resp3
//
// The keys start with the client's name, so that both clients can run on one server at once.
'use strict';

const { RateLimiterRedis } = require('rate-limiter-flexible');

async function connect(port, kind) {
  if (kind === 'ioredis') {
    const Redis = require('ioredis');
    const client = new Redis({ host: '127.0.0.1', port });
    await client.ping();
    return { client, opts: {}, close: () => client.quit() };
  }
  if (kind === 'node-redis' || kind === 'node-redis-resp3') {
    const { createClient } = require('redis');
    const client = createClient({ url: `redis://127.0.0.1:${port}`, RESP: kind === 'node-redis' ? 2 : 3 });
    client.on('error', (err) => { console.error('node-redis:', err.message); });
    await client.connect();
    return { client, opts: { useRedisPackage: true }, close: () => client.quit() };
  }
  throw new Error(`unknown client ${kind}`);
}

// answer turns what a limiter call resolved or rejected with into one plain object.
function answer(outcome, v) {
  if (v instanceof Error) {
    return { outcome: 'error', error: v.message };
  }
  if (v === null || typeof v !== 'object' || !('consumedPoints' in v)) {
    return { outcome, value: v === undefined ? null : v };
  }
  return {
    outcome,
    consumedPoints: v.consumedPoints,
    remainingPoints: v.remainingPoints,
    isFirstInDuration: v.isFirstInDuration,
    msBeforeNext: v.msBeforeNext,
  };
}

// limiters makes the sequence's limiters on one server.
function limiters(client, opts, kind) {
  const store = (o) => new RateLimiterRedis({ storeClient: client, ...opts, ...o, keyPrefix: `${kind}:${o.keyPrefix}` });
  return {
    // 5 points a minute: the script (SET NX EX, INCRBY, PTTL) until denied, then the
    // reads, penalty, reward, delete and set (MULTI: GET and PTTL, SET EX and PTTL).
    perMinute: store({ keyPrefix: 'rlf', points: 5, duration: 60 }),
    // 2 points in 10 s, blocked for 30 s once over: the block rewrites the key with SET EX.
    blocking: store({ keyPrefix: 'rlb', points: 2, duration: 10, blockDuration: 30 }),
    // duration 0: the points never expire (MULTI: INCRBY and PTTL, which is -1).
    forever: store({ keyPrefix: 'rlf0', points: 3, duration: 0 }),
  };
}

async function main() {
  const [portA, portB, kind] = [Number(process.argv[2]), Number(process.argv[3]), process.argv[4]];
  const conns = [await connect(portA, kind), await connect(portB, kind)];
  const sides = conns.map(({ client, opts }) => limiters(client, opts, kind));

  const call = async (step, fn) => {
    const line = [];
    for (const side of sides) {
      try {
        line.push({ step, ...answer('resolved', await fn(side)) });
      } catch (v) {
        line.push({ step, ...answer('rejected', v) });
      }
    }
    console.log(JSON.stringify(line));
  };

  for (let i = 1; i <= 6; i++) {
    await call(`consume u1 #${i}`, (s) => s.perMinute.consume('u1'));
  }
  await call('consume u1 2 points', (s) => s.perMinute.consume('u1', 2));
  await call('get u1', (s) => s.perMinute.get('u1'));
  await call('penalty u1 2', (s) => s.perMinute.penalty('u1', 2));
  await call('reward u1 5', (s) => s.perMinute.reward('u1', 5));
  await call('consume u1 after reward', (s) => s.perMinute.consume('u1'));
  await call('delete u1', (s) => s.perMinute.delete('u1'));
  await call('get u1 deleted', (s) => s.perMinute.get('u1'));
  await call('consume u1 fresh', (s) => s.perMinute.consume('u1', 3));
  await call('get never seen', (s) => s.perMinute.get('nobody'));
  await call('set u2 4 for 30s', (s) => s.perMinute.set('u2', 4, 30));
  await call('consume u2', (s) => s.perMinute.consume('u2'));
  await call('consume u2 again', (s) => s.perMinute.consume('u2'));
  await call('block u3 for 20s', (s) => s.perMinute.block('u3', 20));
  await call('consume u3 blocked', (s) => s.perMinute.consume('u3'));
  await call('consume u1 decimal', (s) => s.perMinute.consume('u1', 1.5));
  await call('consume u4 for 5s', (s) => s.perMinute.consume('u4', 2, { customDuration: 5 }));
  await call('consume u4 again', (s) => s.perMinute.consume('u4', 1, { customDuration: 5 }));
  await call('consume u5 forever', (s) => s.perMinute.consume('u5', 1, { customDuration: 0 }));
  for (let i = 1; i <= 4; i++) {
    await call(`consume b #${i}`, (s) => s.blocking.consume('b'));
  }
  for (let i = 1; i <= 4; i++) {
    await call(`consume forever #${i}`, (s) => s.forever.consume('n'));
  }

  for (const c of conns) await c.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
