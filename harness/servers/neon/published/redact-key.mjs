// Preload for Neon's published MCP server: keep its API key out of its stderr.
//   node --import /path/to/redact-key.mjs .../dist/index.js start <KEY> --no-analytics
// 0.6.5 takes its key only as an argument, and when a call fails at start it prints the whole
// HTTP client error, request headers (Authorization: Bearer <KEY>) included, to stderr, which
// the harness passes on to its own (and so to CI logs). Every write to stderr has the key replaced.
const MARK = '[REDACTED]';
const at = process.argv.indexOf('start');
const key = at > 0 ? process.argv[at + 1] : undefined;

if (key && key.length >= 4) {
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = (chunk, ...rest) => {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    return write(text.split(key).join(MARK), ...rest);
  };
}
