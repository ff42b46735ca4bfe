// Preload for a build that bundles @neondatabase/serverless (Neon's hosted server, a Next.js app):
//   NODE_OPTIONS="--import /path/to/sql-fetch.mjs" next start
// A bundler inlines its own copy of the driver, so neonConfig in node_modules is not the one used;
// every copy sends its SQL with the global fetch, though, as a POST carrying the header
// Neon-Connection-String. This wraps the global fetch and sends exactly those requests to
//   NEON_SQL_URL, or else the origin of NEON_API_HOST + "/sql" (localneon serves both);
// everything else passes through untouched. Import it first (it must stay the outermost wrapper:
// Next wraps fetch too, and builds a Request before calling the function it wrapped).
const HEADER = 'neon-connection-string';

function sqlEndpoint() {
  if (process.env.NEON_SQL_URL) return process.env.NEON_SQL_URL;
  if (!process.env.NEON_API_HOST) {
    throw new Error('sql-fetch.mjs: set NEON_SQL_URL or NEON_API_HOST (the API whose origin serves /sql)');
  }
  return new URL('/sql', process.env.NEON_API_HOST).href;
}

const endpoint = sqlEndpoint();
const original = globalThis.fetch;

function carriesConnection(input, init) {
  if (init?.headers && new Headers(init.headers).has(HEADER)) return true;
  return input instanceof Request && input.headers.has(HEADER);
}

function redirected(input, init) {
  if (input instanceof Request) return [new Request(endpoint, input), init];
  return [endpoint, init];
}

function wrapped(input, init) {
  return carriesConnection(input, init) ? original(...redirected(input, init)) : original(input, init);
}

// Stay outermost: whoever assigns fetch later is wrapped, not replaced.
let inner = wrapped;
Object.defineProperty(globalThis, 'fetch', {
  configurable: true,
  get: () => inner,
  set: (next) => {
    const outer = (input, init) => (carriesConnection(input, init) ? original(...redirected(input, init)) : next(input, init));
    inner = Object.assign(outer, next); // keep the markers a patcher sets on its function (Next's __nextPatched)
  },
});
