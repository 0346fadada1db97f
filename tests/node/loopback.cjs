'use strict';
// Preloaded with `node --require tests/node/loopback.cjs`: every TCP server this
// process opens listens on 127.0.0.1 only, whatever host (or none) the program
// asked for, so tests never listen on a public interface.  Unix socket paths and
// handles are left alone.  Each server announces its address on stderr once it
// listens: "loopback: listening on 127.0.0.1:PORT" (tests read the port there).
//
// Programs often read server.address() right after listen(port) returns, which
// works when no host is given (Node binds synchronously) but not with one: Node
// then resolves the host with dns.lookup first, always asynchronously.  So while
// our listen() runs, dns.lookup answers an IP literal synchronously, and the
// bind happens before listen() returns, as the program expects.
const dns = require('dns');
const net = require('net');

const HOST = '127.0.0.1';
const originalListen = net.Server.prototype.listen;
const originalLookup = dns.lookup;
let listening = 0;

dns.lookup = function lookup(hostname, options, callback) {
  if (listening > 0 && net.isIP(hostname)) {
    const done = typeof options === 'function' ? options : callback;
    const all = options !== null && typeof options === 'object' && options.all;
    const family = net.isIP(hostname);
    if (all) {
      done(null, [{ address: hostname, family }]);
    } else {
      done(null, hostname, family);
    }
    return {};
  }
  return originalLookup.apply(this, arguments);
};

function isPort(value) {
  return value === undefined || value === null || typeof value === 'number' ||
    (typeof value === 'string' && /^\d+$/.test(value));
}

net.Server.prototype.listen = function listen(...args) {
  const first = args[0];
  if (typeof first === 'function') {
    args.unshift(0, HOST);
  } else if (first !== null && typeof first === 'object' && !('_handle' in first) && !('fd' in first) &&
             !('path' in first)) {
    args[0] = Object.assign({}, first, { host: HOST });
  } else if (isPort(first)) {
    args[0] = first === undefined || first === null ? 0 : first;
    if (typeof args[1] === 'string') {
      args[1] = HOST;
    } else {
      args.splice(1, 0, HOST);
    }
  }
  this.once('listening', () => {
    const address = this.address();
    if (address && typeof address === 'object') {
      process.stderr.write(`loopback: listening on ${address.address}:${address.port}\n`);
    }
  });
  listening += 1;
  try {
    return originalListen.apply(this, args);
  } finally {
    listening -= 1;
  }
};
