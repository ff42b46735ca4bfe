// Preload for Neon's published MCP server (npm @neondatabase/mcp-server-neon):
//   node --import /path/to/sql-endpoint.mjs node_modules/@neondatabase/mcp-server-neon/dist/index.js start <KEY>
// Its SQL goes through @neondatabase/serverless's neon(), an HTTP POST to
// https://api.<host minus its first label>/sql; no environment variable changes that, but
// neonConfig.fetchEndpoint does. This sets it, on the very module instance the server imports
// (found next to the server's entry script, as Node would resolve it from there), to
//   NEON_SQL_URL, or else the origin of NEON_API_HOST + "/sql" (localneon serves both).
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

function sqlEndpoint() {
  if (process.env.NEON_SQL_URL) return process.env.NEON_SQL_URL;
  if (!process.env.NEON_API_HOST) {
    throw new Error('sql-endpoint.mjs: set NEON_SQL_URL or NEON_API_HOST (the API whose origin serves /sql)');
  }
  return new URL('/sql', process.env.NEON_API_HOST).href;
}

const entry = process.argv[1];
if (!entry) throw new Error('sql-endpoint.mjs: no entry script to resolve @neondatabase/serverless from');
const require = createRequire(entry);
// The package's CommonJS entry locates its folder; its "import" export is the instance ESM code shares.
const folder = dirname(require.resolve('@neondatabase/serverless'));
const manifest = JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8'));
const esmEntry = manifest.exports?.import ?? manifest.module ?? manifest.main;
const { neonConfig } = await import(pathToFileURL(join(folder, esmEntry)).href);
const endpoint = sqlEndpoint();
neonConfig.fetchEndpoint = endpoint;
