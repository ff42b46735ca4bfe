// Drives a running localneon with @neon/sdk, the client Neon's hosted server (its repository's HEAD)
// uses, called the way that server calls it (mcp/neon-client.ts): the ergonomic resources with
// throwOnError, and `raw` where the server uses raw. SQL goes through @neondatabase/serverless's neon().
// Environment: LOCALNEON_API_URL (.../api/v2), LOCALNEON_TOKEN, LOCALNEON_SQL_URL (.../sql).
// Prints one JSON object of what each call returned; the Python test asserts on it. The project it
// creates is deleted before it exits, whatever happened.
import { createNeonClient, raw } from '@neon/sdk';
import { neon as sqlOver, neonConfig } from '@neondatabase/serverless';

const { LOCALNEON_API_URL, LOCALNEON_TOKEN, LOCALNEON_SQL_URL } = process.env;
if (!LOCALNEON_API_URL || !LOCALNEON_TOKEN || !LOCALNEON_SQL_URL) {
  console.error('drive-sdk.mjs: set LOCALNEON_API_URL, LOCALNEON_TOKEN and LOCALNEON_SQL_URL');
  process.exit(2);
}
neonConfig.fetchEndpoint = LOCALNEON_SQL_URL;
const neon = createNeonClient({ apiKey: LOCALNEON_TOKEN, baseUrl: LOCALNEON_API_URL, throwOnError: true });
const client = neon.client;
const rawCall = (fn, options = {}) => fn({ client, throwOnError: true, ...options });

async function failure(promise) {
  try {
    await promise;
    return null;
  } catch (err) {
    return { name: err.name, status: err.status, message: err.message };
  }
}

const out = {};
const auth = await rawCall(raw.getAuthDetails);
const me = await neon.user.me();
const orgs = await neon.user.organizations();
const org = await rawCall(raw.getOrganization, { path: { org_id: orgs[0].id } });
const members = await rawCall(raw.getOrganizationMembers, { path: { org_id: org.id } });
const shared = await rawCall(raw.listSharedProjects, { query: { limit: 400 } });
out.account = { auth, user_id: me.id, org_ids: orgs.map((o) => o.id), org_id: org.id, members: members.members.length, shared };

// A name of this run's own: a project another run left on the shared twin must not answer the search.
const projectName = `sdk-test-${process.pid}-${Date.now().toString(36)}`;
const created = await rawCall(raw.createProject, { body: { project: { name: projectName } } });
const projectId = created.project.id;
try {
  const project = await neon.projects.get(projectId);
  const inOrg = await neon.projects.list({ org_id: org.id, limit: 400 }).page();
  const searched = await neon.projects.list({ search: projectName, limit: 400 }).page();
  out.projects = {
    name: project.name,
    asked: projectName,
    in_org: inOrg.data.items.some((p) => p.id === projectId),
    searched: searched.data.items.map((p) => p.id),
    missing: await failure(neon.projects.get('no-such-project-1')),
  };

  const branches = await neon.branches.list(projectId).page();
  const main = branches.data.items.find((b) => b.default);
  const databases = await neon.postgres.databases.list(projectId, main.id);
  const database = await neon.postgres.databases.get(projectId, main.id, 'neondb');
  const roles = await neon.postgres.roles.list(projectId, main.id);
  const resolved = await neon.postgres.connectionString({ projectId }); // lists branches, roles, databases itself
  const explicit = await neon.postgres.connectionString({
    projectId,
    branchId: main.id,
    databaseName: 'neondb',
    roleName: roles[0].name,
  });
  const endpoints = await neon.postgres.endpoints.list(projectId);
  const branchEndpoints = await neon.postgres.endpoints.listByBranch(projectId, main.id);
  out.rest = {
    branches: branches.data.items.map((b) => b.name),
    databases: databases.map((d) => d.name),
    database,
    resolved,
    explicit,
    endpoints: endpoints.map((e) => e.branch_id),
    branch_endpoints: branchEndpoints.map((e) => e.type),
    missing_database: await failure(neon.postgres.databases.get(projectId, main.id, 'nope')),
  };

  const sql = sqlOver(resolved);
  await sql`CREATE TABLE items (id serial PRIMARY KEY, name text NOT NULL)`;
  const [, , [{ n }]] = await sql.transaction([
    sql`INSERT INTO items (name) VALUES ('a')`,
    sql`INSERT INTO items (name) VALUES ('b')`,
    sql`SELECT count(*)::int AS n FROM items`,
  ]);
  out.sql = { count: n };

  const dev = await rawCall(raw.createProjectBranch, {
    path: { project_id: projectId },
    body: { branch: { name: 'dev' }, endpoints: [{ type: 'read_write' }] },
  });
  await sqlOver(resolved)`ALTER TABLE items ADD COLUMN note text`;
  const comparison = await rawCall(raw.getProjectBranchSchemaComparison, {
    path: { project_id: projectId, branch_id: dev.branch.id },
    query: { db_name: 'neondb' },
  });
  const restored = await rawCall(raw.restoreProjectBranch, {
    path: { project_id: projectId, branch_id: dev.branch.id },
    body: { source_branch_id: main.id },
  });
  await neon.branches.delete(projectId, dev.branch.id);
  out.branching = {
    dev_parent: dev.branch.parent_id,
    dev_uri: dev.connection_uris?.[0]?.connection_uri ?? null,
    diff_mentions_note: comparison.diff.includes('note'),
    restored: restored.branch.id === dev.branch.id,
    after_delete: await failure(neon.branches.get(projectId, dev.branch.id)),
  };

  const path = { project_id: projectId, branch_id: main.id };
  const before = await failure(neon.auth.get(projectId, main.id));
  const enabled = await neon.auth.create(projectId, main.id, { auth_provider: 'better_auth' });
  const again = await failure(neon.auth.create(projectId, main.id, { auth_provider: 'better_auth' }));
  await neon.auth.trustedDomains.add(projectId, main.id, { domain: 'https://app.example.com', auth_provider: 'better_auth' });
  await neon.auth.trustedDomains.add(projectId, main.id, { domain: 'https://admin.example.com', auth_provider: 'better_auth' });
  await neon.auth.trustedDomains.delete(projectId, main.id, {
    auth_provider: 'better_auth',
    domains: [{ domain: 'https://admin.example.com' }, { domain: 'https://never-added.example.com' }],
  });
  const domains = await neon.auth.trustedDomains.list(projectId, main.id);
  const badDomain = await failure(
    neon.auth.trustedDomains.add(projectId, main.id, { domain: 'http://plain.example.com', auth_provider: 'better_auth' }),
  );
  const localhost = await rawCall(raw.updateNeonAuthAllowLocalhost, { path, body: { allow_localhost: false } });
  const emailPassword = await rawCall(raw.updateNeonAuthEmailAndPasswordConfig, {
    path,
    body: { disable_sign_up: true, email_verification_method: 'link' },
  });
  const added = await neon.auth.oauthProviders.add(projectId, main.id, {
    id: 'microsoft',
    client_id: 'cid',
    client_secret: 'client-secret-value',
    microsoft_tenant_id: 'tenant',
  });
  const updated = await neon.auth.oauthProviders.update(projectId, main.id, 'microsoft', { client_id: 'cid2' });
  await neon.auth.oauthProviders.delete(projectId, main.id, 'github');
  const providers = await neon.auth.oauthProviders.list(projectId, main.id);
  const smtp = {
    host: 'smtp.example.com',
    port: 587,
    username: 'mailer',
    password: 'smtp-password-value',
    sender_email: 'noreply@example.com',
    sender_name: 'Example',
  };
  const emailProvider = await rawCall(raw.updateNeonAuthEmailProvider, { path, body: { type: 'standard', ...smtp } });
  const testEmail = await rawCall(raw.sendNeonAuthTestEmail, {
    path,
    body: { recipient_email: 'someone@example.com', ...smtp },
  });
  const badBody = await failure(rawCall(raw.updateNeonAuthAllowLocalhost, { path, body: { allow_localhost: 'yes' } }));
  out.neon_auth = {
    before,
    enabled: { base_url: enabled.base_url, schema_name: enabled.schema_name },
    again,
    domains,
    bad_domain: badDomain,
    localhost,
    email_password: emailPassword,
    added,
    updated,
    providers,
    email_provider: emailProvider,
    test_email: testEmail,
    bad_body: badBody,
    read_back: {
      localhost: await rawCall(raw.getNeonAuthAllowLocalhost, { path }),
      email_password: await rawCall(raw.getNeonAuthEmailAndPasswordConfig, { path }),
      email_provider: await rawCall(raw.getNeonAuthEmailProvider, { path }),
    },
  };
} finally {
  const deleted = await neon.projects.delete(projectId);
  out.deleted = deleted.id;
}
console.log(JSON.stringify(out));
