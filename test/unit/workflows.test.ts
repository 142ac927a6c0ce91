// The GitHub workflows pass actionlint (built with `go install
// github.com/rhysd/actionlint/cmd/actionlint@v1.7.7`, see .ci/run), and carry
// the shape users rely on: preview with a PR comment per stack, up per
// environment on main. Without actionlint the lint tests fail: .ci/run installs it.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, it } from "node:test";
import * as yaml from "js-yaml";

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
const ACTIONLINT_MISSING = "actionlint not found (.ci/run installs it: go install github.com/rhysd/actionlint/cmd/actionlint@v1.7.7)";

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

    it("preview on pull requests for dev and prod, commenting the diff", () => {
        const wf = yaml.load(fs.readFileSync(path.join(WORKFLOWS, "preview.yml"), "utf8")) as any;
        assert.ok(wf.on.pull_request);
        const job = wf.jobs.preview;
        assert.deepEqual(job.strategy.matrix.stack, ["dev", "prod"]);
        const pulumi = job.steps.find((s: any) => String(s.uses).startsWith("pulumi/actions@"));
        assert.equal(pulumi.uses, "pulumi/actions@v6");
        assert.equal(pulumi.with.command, "preview");
        assert.equal(pulumi.with.diff, true);
        assert.equal(pulumi.with["comment-on-pr"], true);
        assert.equal(job.steps.find((s: any) => String(s.uses).startsWith("actions/setup-node@")).with["node-version"], 22);
        assert.ok(job.steps.some((s: any) => s.run === "npm ci"));
    });

    it("up on main per environment, prod after dev", () => {
        const wf = yaml.load(fs.readFileSync(path.join(WORKFLOWS, "deploy.yml"), "utf8")) as any;
        assert.deepEqual(wf.on.push.branches, ["main"]);
        assert.equal(wf.jobs.prod.needs, "dev");
        assert.deepEqual([wf.jobs.dev.with.stack, wf.jobs.prod.with.stack], ["dev", "prod"]);
        const up = yaml.load(fs.readFileSync(path.join(WORKFLOWS, "up.yml"), "utf8")) as any;
        assert.equal(up.jobs.up.environment, "${{ inputs.stack }}");
        const step = up.jobs.up.steps.find((s: any) => String(s.uses).startsWith("pulumi/actions@"));
        assert.equal(step.with.command, "up");
        assert.equal(step.env.PULUMI_ACCESS_TOKEN, "${{ secrets.PULUMI_ACCESS_TOKEN }}");
    });
});
