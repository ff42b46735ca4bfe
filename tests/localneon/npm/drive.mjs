// Drives a running localneon with Neon's own client libraries, as Neon's MCP servers use them:
// @neondatabase/api-client for the REST API, @neondatabase/serverless's neon() for SQL over HTTP.
// Environment: LOCALNEON_API_URL (.../api/v2), LOCALNEON_TOKEN, LOCALNEON_SQL_URL (.../sql).
// Prints one JSON object of what each call returned; the Python test asserts on it. The project it
// creates is deleted before it exits, whatever happened.
import { createApiClient } from '@neondatabase/api-client';
import { neon, neonConfig } from '@neondatabase/serverless';

const { LOCALNEON_API_URL, LOCALNEON_TOKEN, LOCALNEON_SQL_URL } = process.env;
if (!LOCALNEON_API_URL || !LOCALNEON_TOKEN || !LOCALNEON_SQL_URL) {
  console.error('drive.mjs: set LOCALNEON_API_URL, LOCALNEON_TOKEN and LOCALNEON_SQL_URL');
  process.exit(2);
}
neonConfig.fetchEndpoint = LOCALNEON_SQL_URL;
const api = createApiClient({ apiKey: LOCALNEON_TOKEN, baseURL: LOCALNEON_API_URL });

const out = {};
const { data: auth } = await api.getAuthDetails();
const { data: user } = await api.getCurrentUserInfo();
const { data: orgs } = await api.getCurrentUserOrganizations();
const { data: org } = await api.getOrganization(orgs.organizations[0].id);
const { data: shared } = await api.listSharedProjects({});
out.account = { auth, user_id: user.id, org_id: org.id, shared: shared.projects.length };

const { data: created } = await api.createProject({ project: { name: 'neon-clients-test' } });
const projectId = created.project.id;
try {
  out.created = { project_id: projectId, uri: created.connection_uris[0].connection_uri };
  const { data: branches } = await api.listProjectBranches({ projectId });
  const main = branches.branches.find((b) => b.default);
  const { data: db } = await api.getProjectBranchDatabase(projectId, main.id, 'neondb');
  const { data: roles } = await api.listProjectBranchRoles(projectId, main.id);
  const { data: conn } = await api.getConnectionUri({
    projectId,
    branch_id: main.id,
    database_name: db.database.name,
    role_name: roles.roles[0].name,
  });
  out.rest = { branches: branches.branches.map((b) => b.name), database: db.database, uri: conn.uri };

  const sql = neon(conn.uri);
  await sql`CREATE TABLE notes (id serial PRIMARY KEY, body text NOT NULL, tags text[], at timestamptz)`;
  const inserted = await sql`INSERT INTO notes (body, tags, at) VALUES (${"it's"}, ${['a', 'b']}, ${new Date(0)}) RETURNING id, body, tags, at`;
  const full = await sql.query('SELECT $1::int + 1 AS answer, $2::text IS NULL AS missing', [41, null], {
    fullResults: true,
  });
  const [first, second, count] = await sql.transaction(
    [sql`INSERT INTO notes (body) VALUES ('second') RETURNING id`, sql`INSERT INTO notes (body) VALUES ('third')`, sql`SELECT count(*)::int AS n FROM notes`],
    { isolationLevel: 'Serializable' },
  );
  out.sql = {
    inserted: { ...inserted[0], at: inserted[0].at.toISOString() },
    full: { rows: full.rows, command: full.command, rowCount: full.rowCount, fields: full.fields.map((f) => [f.name, f.dataTypeID]) },
    transaction: { first, second, count },
  };

  const failures = {};
  try {
    await sql`SELEC 1`;
  } catch (err) {
    failures.syntax = { name: err.name, message: err.message, code: err.code, severity: err.severity, position: err.position };
  }
  try {
    await sql.transaction([sql`INSERT INTO notes (body) VALUES ('rolled back')`, sql`INSERT INTO notes (body) VALUES (NULL)`]);
  } catch (err) {
    failures.transaction = { message: err.message, code: err.code, column: err.column, table: err.table };
  }
  const [{ n }] = await sql`SELECT count(*)::int AS n FROM notes`;
  failures.rows_after_failed_transaction = n;
  try {
    await neon(conn.uri.replace(/:[^:@/]+@/, ':wrong-password@'))`SELECT 1`;
  } catch (err) {
    failures.password = { message: err.message, code: err.code };
  }
  out.failures = failures;
} finally {
  const { data: deleted } = await api.deleteProject(projectId);
  out.deleted = deleted.project.id;
}
console.log(JSON.stringify(out));
