// The GitHub workflows carry the shape users rely on (preview with a PR comment
// per stack, up per environment on main) and keep secrets from pull-request
// code: `workflowProblems` checks the rules below on each file, and each rule
// is shown to fire on a workflow that breaks it. actionlint on them needs the
// program (npm test installs it): test/host-tools/actionlint.test.ts.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";
import * as yaml from "js-yaml";

const ROOT = path.resolve(__dirname, "../..");
const WORKFLOWS = path.join(ROOT, ".github/workflows");

const files = fs.readdirSync(WORKFLOWS).filter((f) => f.endsWith(".yml")).map((f) => path.join(WORKFLOWS, f));


// ---- the rules -------------------------------------------------------------------

/** Triggers that run a pull request's code (or, for pull_request_target, could be made to). */
const PR_TRIGGERS = ["pull_request", "pull_request_target", "workflow_run"];
/** The only environments a job running pull-request code may use, and why each is safe. */
const PR_ENVIRONMENTS: Record<string, string> = {
    "dev-preview": "holds dev's secrets only",
    "prod-preview": "holds prod's secrets behind required reviewers (README: CI setup)",
};
/** Scopes a job may be given, at most at this level. */
const ALLOWED_SCOPES: Record<string, string[]> = {
    "contents": ["read", "none"],
    "id-token": ["write", "none"],      // AWS OIDC
    "pull-requests": ["write", "read", "none"], // the preview comment
};
const PINNED = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_./-]+@[0-9a-f]{40}$/;
const PR_REF = /github\.event\.pull_request|github\.head_ref|refs\/pull\/|github\.event\.workflow_run\.head/;

function triggers(wf: any): string[] {
    const on = wf?.on ?? wf?.[true as any]; // js-yaml reads a bare `on:` as the key "on"
    return typeof on === "string" ? [on] : Array.isArray(on) ? on : Object.keys(on ?? {});
}

function permissionProblems(where: string, perms: unknown): string[] {
    if (perms === undefined) {
        return [`${where} has no permissions: block (the default token is read-write)`];
    }
    if (typeof perms === "string") {
        return [`${where} permissions: ${perms} is not least privilege; name each scope`];
    }
    return Object.entries(perms as Record<string, string>).flatMap(([scope, level]) =>
        (ALLOWED_SCOPES[scope] ?? []).includes(level) ? [] : [`${where} grants ${scope}: ${level}`]);
}

/** Every problem of one workflow file: `name` is its file name, `text` its source (for the pin comments). */
export function workflowProblems(name: string, text: string, callers: Array<{ name: string; wf: any }> = []): string[] {
    const wf = yaml.load(text) as any;
    const out: string[] = [];
    const on = triggers(wf);
    const runsPrCode = on.some((t) => PR_TRIGGERS.includes(t))
        || (on.includes("workflow_call") && callers.some((c) => triggers(c.wf).some((t) => PR_TRIGGERS.includes(t))));
    if (wf.permissions === undefined || (typeof wf.permissions === "object" && Object.keys(wf.permissions).length > 0)) {
        out.push(`${name}: the workflow's permissions must be {} (each job names what it needs)`);
    }
    // Third-party actions pinned by full commit, the release in a comment on the same line.
    for (const line of text.split("\n")) {
        const m = /^\s*(?:-\s+)?uses:\s*([^\s#]+)\s*(#.*)?$/.exec(line);
        if (!m || m[1].startsWith("./")) {
            continue;
        }
        if (!PINNED.test(m[1])) {
            out.push(`${name}: ${m[1]} is not pinned by a full commit SHA`);
        } else if (!/^#\s*v\d+\.\d+\.\d+\b/.test(m[2] ?? "")) {
            out.push(`${name}: ${m[1]} has no "# vX.Y.Z" comment naming its release`);
        }
    }
    if (/secrets:\s*inherit/.test(text)) {
        out.push(`${name}: secrets: inherit hands every repository secret on; use environment secrets`);
    }
    for (const [id, job] of Object.entries<any>(wf.jobs ?? {})) {
        const where = `${name}: job ${id}`;
        out.push(...permissionProblems(where, job.permissions));
        const jobText = JSON.stringify(job);
        const secrets = [...jobText.matchAll(/secrets\.([A-Za-z0-9_]+)/g)].map((m) => m[1]).filter((s) => s !== "GITHUB_TOKEN");
        if (secrets.length > 0 && job.environment === undefined) {
            out.push(`${where} reads ${[...new Set(secrets)].join(", ")} outside a GitHub environment (repository secrets reach every branch)`);
        }
        const env = typeof job.environment === "object" ? job.environment?.name : job.environment;
        if (runsPrCode) {
            if (env !== undefined && !(env in PR_ENVIRONMENTS)) {
                out.push(`${where} runs pull-request code in environment ${env}; only ${Object.keys(PR_ENVIRONMENTS).join(", ")} may be used there`);
            }
            if (typeof job.uses === "string") {
                out.push(`${where} calls ${job.uses} from a pull-request workflow`);
            }
        }
        for (const step of job.steps ?? []) {
            if (!String(step.uses ?? "").startsWith("actions/checkout@")) {
                continue;
            }
            if (step.with?.["persist-credentials"] !== false) {
                out.push(`${where}: checkout keeps the token in .git/config (set persist-credentials: false)`);
            }
            if (on.includes("pull_request_target") && PR_REF.test(JSON.stringify(step.with ?? {}))) {
                out.push(`${where}: pull_request_target checks out pull-request code`);
            }
        }
    }
    return out;
}

function readWorkflows(): Array<{ name: string; text: string; wf: any }> {
    return files.map((f) => {
        const text = fs.readFileSync(f, "utf8");
        return { name: path.basename(f), text, wf: yaml.load(text) };
    });
}

/** The workflows that call `name` as a reusable workflow. */
function callersOf(name: string, all: Array<{ name: string; wf: any }>): Array<{ name: string; wf: any }> {
    return all.filter((o) => Object.values<any>(o.wf.jobs ?? {}).some((j) => j.uses === `./.github/workflows/${name}`));
}

describe("workflows", () => {
    it("keep secrets from pull-request code: every rule holds on every file", () => {
        const all = readWorkflows();
        assert.deepEqual(all.map((w) => w.name).sort(), ["deploy.yml", "preview.yml", "up.yml"]);
        for (const w of all) {
            assert.deepEqual(workflowProblems(w.name, w.text, callersOf(w.name, all)), [], w.name);
        }
    });

    it("run tests on pull requests with no secret, previews in the preview environments only", () => {
        const wf = yaml.load(fs.readFileSync(path.join(WORKFLOWS, "preview.yml"), "utf8")) as any;
        assert.deepEqual(Object.keys(wf.on), ["pull_request"]);
        assert.equal(JSON.stringify(wf.jobs.test).includes("secrets."), false);
        assert.equal(wf.jobs.test.environment, undefined);
        const stacks: Record<string, string> = {};
        for (const id of ["preview-dev", "preview-prod"]) {
            const job = wf.jobs[id];
            assert.equal(job.needs, "test");
            assert.equal(job.if, "github.event.pull_request.head.repo.full_name == github.repository", "forks get no secrets: skip");
            const pulumi = job.steps.find((s: any) => String(s.uses).startsWith("pulumi/actions@"));
            assert.equal(pulumi.with.command, "preview");
            assert.equal(pulumi.with.diff, true);
            assert.equal(pulumi.with["comment-on-pr"], true);
            stacks[job.environment] = pulumi.with["stack-name"];
            assert.equal(job.steps.find((s: any) => String(s.uses).startsWith("actions/setup-node@")).with["node-version"], 22);
            assert.ok(job.steps.some((s: any) => s.run === "npm ci"));
        }
        assert.deepEqual(stacks, { "dev-preview": "${{ vars.PULUMI_ORG }}/dev", "prod-preview": "${{ vars.PULUMI_ORG }}/prod" });
    });

    it("up on main per environment, prod after dev, nothing inherited", () => {
        const wf = yaml.load(fs.readFileSync(path.join(WORKFLOWS, "deploy.yml"), "utf8")) as any;
        assert.deepEqual(Object.keys(wf.on), ["push"]);
        assert.deepEqual(wf.on.push.branches, ["main"]);
        assert.equal(wf.jobs.prod.needs, "dev");
        assert.deepEqual([wf.jobs.dev.with.stack, wf.jobs.prod.with.stack], ["dev", "prod"]);
        assert.equal(wf.jobs.prod.secrets, undefined);
        const up = yaml.load(fs.readFileSync(path.join(WORKFLOWS, "up.yml"), "utf8")) as any;
        assert.deepEqual(Object.keys(up.on), ["workflow_call"]);
        assert.equal(up.jobs.up.environment, "${{ inputs.stack }}");
        const step = up.jobs.up.steps.find((s: any) => String(s.uses).startsWith("pulumi/actions@"));
        assert.equal(step.with.command, "up");
        assert.equal(step.env.PULUMI_ACCESS_TOKEN, "${{ secrets.PULUMI_ACCESS_TOKEN }}");
    });
});

describe("workflowProblems fires on each broken rule", () => {
    const CHECKOUT = "actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1 # v7.0.1";
    const job = (body: string) => `permissions: {}\njobs:\n  j:\n    runs-on: ubuntu-latest\n${body}`;
    const ok = job(`    permissions:\n      contents: read\n    steps:\n      - uses: ${CHECKOUT}\n        with:\n          persist-credentials: false\n`);
    const cases: Array<[string, string, RegExp]> = [
        ["workflow-level write permissions", ok.replace("permissions: {}", "permissions:\n  contents: write"), /the workflow's permissions must be \{\}/],
        ["no workflow permissions", ok.replace("permissions: {}\n", ""), /the workflow's permissions must be \{\}/],
        ["a job without permissions", ok.replace("    permissions:\n      contents: read\n", ""), /job j has no permissions/],
        ["write-all", ok.replace("    permissions:\n      contents: read\n", "    permissions: write-all\n"), /permissions: write-all is not least privilege/],
        ["contents: write", ok.replace("contents: read", "contents: write"), /job j grants contents: write/],
        ["a tag instead of a commit", ok.replace(CHECKOUT, "actions/checkout@v4"), /actions\/checkout@v4 is not pinned/],
        ["a commit without its release", ok.replace(" # v7.0.1", ""), /has no "# vX.Y.Z" comment/],
        ["a repository secret", ok.replace("    steps:\n", "    steps:\n      - run: echo\n        env:\n          T: ${{ secrets.PULUMI_ACCESS_TOKEN }}\n"), /reads PULUMI_ACCESS_TOKEN outside a GitHub environment/],
        ["secrets: inherit", `on: push\n${ok}  k:\n    uses: ./.github/workflows/up.yml\n    permissions: {}\n    secrets: inherit\n`, /secrets: inherit/],
        ["prod environment on pull requests", `on: pull_request\n${ok.replace("    steps:", "    environment: prod\n    steps:")}`, /runs pull-request code in environment prod/],
        ["a reusable workflow called on pull requests", `on: pull_request\n${ok}  k:\n    uses: ./.github/workflows/up.yml\n    permissions: {}\n`, /calls .\/.github\/workflows\/up.yml from a pull-request workflow/],
        ["a credential left in .git/config", ok.replace("persist-credentials: false", "fetch-depth: 1"), /set persist-credentials: false/],
        ["pull_request_target checking out the head", `on: pull_request_target\n${ok.replace("persist-credentials: false", "persist-credentials: false\n          ref: ${{ github.event.pull_request.head.sha }}")}`, /pull_request_target checks out pull-request code/],
    ];
    it("passes the well-formed example", () => {
        assert.deepEqual(workflowProblems("ok.yml", `on: push\n${ok}`), []);
    });
    for (const [what, text, expected] of cases) {
        it(`flags ${what}`, () => {
            const problems = workflowProblems("bad.yml", text.startsWith("on:") ? text : `on: push\n${text}`);
            assert.ok(problems.some((p) => expected.test(p)), `${expected} not in ${JSON.stringify(problems)}`);
        });
    }
    it("treats a reusable workflow as pull-request code when a pull-request workflow calls it", () => {
        const reusable = `on: workflow_call\n${ok.replace("    steps:", "    environment: prod\n    steps:")}`;
        assert.deepEqual(workflowProblems("up.yml", reusable, [{ name: "deploy.yml", wf: { on: { push: {} } } }]), []);
        assert.ok(workflowProblems("up.yml", reusable, [{ name: "pr.yml", wf: { on: { pull_request: {} } } }])
            .some((p) => /runs pull-request code in environment prod/.test(p)));
    });
});
