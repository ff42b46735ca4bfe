// Preload for Neon's published MCP server: keep its API key off its command line and out of its stderr.
//   NEON_API_KEY=<KEY> node --import /path/to/redact-key.mjs .../dist/index.js start key-from-NEON_API_KEY --no-analytics
// 0.6.5 reads its key only from its arguments, which any user of the machine can read (ps,
// /proc/<pid>/cmdline); the harness passes a placeholder there and the key in the environment, and
// this preload, which runs before the server's own code, puts the key into process.argv.
// 0.6.5 takes its key only as an argument, and when a call fails at start it prints the whole
// HTTP client error, request headers (Authorization: Bearer <KEY>) included, to stderr, which
// the harness passes on to its own (and so to CI logs). Every write to stderr has the key replaced.
const MARK = '[REDACTED]';
export const PLACEHOLDER = 'key-from-NEON_API_KEY';
const at = process.argv.indexOf('start');
if (at > 0 && process.argv[at + 1] === PLACEHOLDER && process.env.NEON_API_KEY) {
  process.argv[at + 1] = process.env.NEON_API_KEY;
}
const key = at > 0 ? process.argv[at + 1] : undefined;

if (key && key.length >= 4) {
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = (chunk, ...rest) => {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    return write(text.split(key).join(MARK), ...rest);
  };
}
