// The GitHub workflows pass actionlint (built with `go install
// github.com/rhysd/actionlint/cmd/actionlint@v1.7.7` by tools/setup.bash, which
// npm test runs first), and the lint can fail. Needs actionlint, so CI's
// `test` job does not run it (test/host-tools/README.md); the workflows' rules
// are test/unit/workflows.test.ts.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, it } from "node:test";

const ROOT = path.resolve(__dirname, "../..");
const WORKFLOWS = path.join(ROOT, ".github/workflows");

function findActionlint(): string | undefined {
    const candidates = [process.env.ACTIONLINT ?? ""];
    for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
        candidates.push(path.join(dir, "actionlint"));
    }
    try {
        const gopath = execFileSync("go", ["env", "GOPATH"], { timeout: 10_000 }).toString().trim();
        candidates.push(path.join(gopath, "bin", "actionlint"));
    } catch {
        // no Go: PATH is all there is
    }
    return candidates.find((c) => c !== "" && fs.existsSync(c));
}

const actionlint = findActionlint();
const ACTIONLINT_MISSING = "actionlint not found (npm test installs it: go install github.com/rhysd/actionlint/cmd/actionlint@v1.7.7)";

const files = fs.readdirSync(WORKFLOWS).filter((f) => f.endsWith(".yml")).map((f) => path.join(WORKFLOWS, f));

describe("workflows", () => {
    it("pass actionlint", () => {
        assert.ok(actionlint, ACTIONLINT_MISSING);
        const r = spawnSync(actionlint!, ["-no-color", ...files], { cwd: ROOT, timeout: 60_000 });
        assert.equal(r.status, 0, `actionlint:\n${r.stdout}${r.stderr}`);
    });

    it("actionlint catches a broken workflow (the lint can fail)", () => {
        assert.ok(actionlint, ACTIONLINT_MISSING);
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hg-actionlint-"));
        try {
            const bad = path.join(dir, "bad.yml");
            fs.writeFileSync(bad, "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.nosuchcontext.x }}\n");
            const r = spawnSync(actionlint!, ["-no-color", bad], { timeout: 60_000 });
            assert.notEqual(r.status, 0);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});
