// CI's `test` job (.github/workflows/preview.yml) on a stock runner: its run:
// steps, read from the workflow, run one by one as GitHub runs them
// (`bash -e FILE`, in the job's working directory) in a copy of this tree,
// with a PATH that holds only what GitHub's ubuntu-24.04 image documents
// (bash, coreutils and the other base utilities, git, python3, perl, curl,
// jq, ...) and Node 22 with npm, which the job's actions/setup-node step puts
// there. fail2ban, actionlint, nginx, bats, shellcheck, Go and the other
// programs npm test installs on a developer's machine are not on it, so a test
// that needs one fails here as it would in CI: such a test belongs in
// test/host-tools/ (npm test runs it), or the job must install the program in
// a step of its own. The other jobs' run: steps must be among the ones run
// here. npm test runs this file in place of running test/unit and the policy
// pack's tests itself, so they run once.
//
// What this cannot hide: a program called by absolute path, and Python
// modules of this machine's python3 (fail2ban's among them). The runner's
// python3 is 3.12, this one Debian's.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import * as yaml from "js-yaml";

const ROOT = path.resolve(__dirname, "../..");
const WORKFLOWS = path.join(ROOT, ".github/workflows");

/** Debian packages whose programs GitHub's ubuntu-24.04 image documents (its base system and "Tools"), all put on the stock PATH. */
const IMAGE_PACKAGES = [
    "bash", "dash", "coreutils", "findutils", "grep", "sed", "diffutils", "tar", "gzip", "bzip2", "xz-utils", "zstd",
    "zip", "unzip", "procps", "hostname", "debianutils", "git", "python3", "perl", "curl", "wget", "jq", "openssl",
    "openssh-client", "make", "python3-minimal",
];
/** Single programs the image documents that come from packages named otherwise here. */
const IMAGE_PROGRAMS = ["awk", "sh"];
/** What npm test installs and a stock runner lacks: none of it may be on the stock PATH. */
const HOST_TOOLS = [
    "fail2ban-client", "fail2ban-server", "actionlint", "nginx", "bats", "shellcheck", "go", "pulumi", "sshd", "cron",
    "nft", "iptables", "unshare", "logrotate", "mvn", "java",
];
/** The actions a job here may use, and what each leaves on the runner that this test stands in for. */
const KNOWN_ACTIONS: Record<string, string> = {
    "actions/checkout": "the tree: a copy of this one (tracked and new files, as they are now)",
    "actions/setup-node": "Node and npm on PATH: this Node (checked against node-version) and this npm",
    "aws-actions/configure-aws-credentials": "AWS credentials in the environment only",
    "pulumi/actions": "runs its command with its own Pulumi CLI",
};

interface Step { name?: string; run?: string; uses?: string; shell?: string; env?: Record<string, string>; with?: Record<string, unknown>; "working-directory"?: string }
interface Job { "runs-on"?: string; "timeout-minutes"?: number; steps?: Step[]; uses?: string; defaults?: { run?: { "working-directory"?: string; shell?: string } } }

function workflow(name: string): { jobs: Record<string, Job> } {
    return yaml.load(fs.readFileSync(path.join(WORKFLOWS, name), "utf8")) as { jobs: Record<string, Job> };
}

/** The program NAME as the calling environment finds it. */
function hostProgram(name: string): string {
    return execFileSync("sh", ["-c", 'command -v "$1"', "sh", name]).toString().trim();
}

/** A directory of symlinks to the programs of IMAGE_PACKAGES and IMAGE_PROGRAMS, plus node, npm and npx. */
function stockBin(dir: string): string {
    fs.mkdirSync(dir);
    const link = (name: string, target: string) => {
        if (!fs.existsSync(path.join(dir, name))) {
            fs.symlinkSync(target, path.join(dir, name));
        }
    };
    for (const pkg of IMAGE_PACKAGES) {
        const files = execFileSync("dpkg-query", ["-L", pkg]).toString().split("\n");
        for (const file of files) {
            if (/\/s?bin\/[^/]+$/.test(file) && fs.existsSync(file) && fs.statSync(file).isFile()) {
                link(path.basename(file), file);
            }
        }
    }
    for (const name of IMAGE_PROGRAMS) {
        link(name, hostProgram(name));
    }
    link("node", fs.realpathSync(process.execPath));
    const npm = fs.realpathSync(hostProgram("npm"));
    link("npm", npm);
    link("npx", path.join(path.dirname(npm), "npx-cli.js"));
    return dir;
}

/** This tree as actions/checkout would give it (tracked files, plus new ones not ignored), copied to DIR. */
function copyTree(dir: string): void {
    fs.mkdirSync(dir);
    const files = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: ROOT, maxBuffer: 64 << 20 })
        .toString().split("\0").filter((f) => f !== "" && fs.existsSync(path.join(ROOT, f)) && !fs.lstatSync(path.join(ROOT, f)).isDirectory());
    execFileSync("tar", ["-C", ROOT, "--null", "-T", "-", "-cf", path.join(dir, "..", "tree.tar")], { input: files.join("\0") });
    execFileSync("tar", ["-C", dir, "-xf", path.join(dir, "..", "tree.tar")]);
    fs.rmSync(path.join(dir, "..", "tree.tar"));
}

/** The argv GitHub runs a run: step's script FILE with (its documented defaults on Linux). */
function shellArgv(shell: string | undefined, file: string): string[] {
    switch (shell) {
        case undefined:
            return ["bash", "-e", file];
        case "bash":
            return ["bash", "--noprofile", "--norc", "-eo", "pipefail", file];
        case "sh":
            return ["sh", "-e", file];
        default:
            throw new Error(`shell: ${shell} is not one this test knows how GitHub runs`);
    }
}

/** The lines of a step's log that say what failed, and its end. */
function failureExcerpt(log: string): string {
    const lines = log.split("\n");
    const failing = lines.filter((l) => /^\s*not ok |^# (tests|pass|fail) |Error:/.test(l)).slice(0, 80);
    return [...failing, "--- the log's last 60 lines:", ...lines.slice(-60)].join("\n");
}

let work = "";
before(() => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), "hg-stock-runner-"));
});
after(() => {
    fs.rmSync(work, { recursive: true, force: true });
});

describe("CI on a stock runner", () => {
    const preview = workflow("preview.yml");
    const testJob = preview.jobs.test;

    it("the stock PATH has what the image documents and none of the programs npm test installs", () => {
        const bin = stockBin(path.join(work, "bin-check"));
        const found = (name: string) => spawnSync("sh", ["-c", 'command -v "$1"', "sh", name], { env: { PATH: bin } }).status === 0;
        for (const name of ["bash", "sh", "env", "git", "python3", "node", "npm", "npx", "tar", "awk", "jq", "curl"]) {
            assert.ok(found(name), `${name} missing from the stock PATH`);
        }
        for (const name of HOST_TOOLS) {
            assert.ok(!found(name), `${name} is on the stock PATH: GitHub's image does not document it`);
        }
        const version = spawnSync("node", ["--version"], { env: { PATH: bin } }).stdout.toString().trim();
        assert.match(version, /^v22\./, "Node 22, as the setup-node step installs");
    });

    it("preview.yml's test job: every run: step passes there", () => {
        assert.equal(testJob["runs-on"], "ubuntu-latest");
        const bin = stockBin(path.join(work, "bin"));
        const tree = path.join(work, "tree");
        const home = path.join(work, "home");
        fs.mkdirSync(home);
        const npmCache = execFileSync("npm", ["config", "get", "cache"]).toString().trim();
        const timeout = hostProgram("timeout");
        const deadline = Date.now() + (testJob["timeout-minutes"] ?? 360) * 60_000;
        let ran = 0;
        for (const [i, step] of (testJob.steps ?? []).entries()) {
            const label = `step ${i + 1} (${step.name ?? step.run ?? step.uses})`;
            if (step.uses !== undefined) {
                const action = step.uses.split("@")[0];
                assert.ok(action in KNOWN_ACTIONS, `${label}: teach this test what ${action} leaves on the runner`);
                if (action === "actions/checkout") {
                    copyTree(tree);
                } else if (action === "actions/setup-node") {
                    assert.equal(String(step.with?.["node-version"]), process.versions.node.split(".")[0], `${label}: this test stands in with Node ${process.versions.node}`);
                }
                continue;
            }
            assert.ok(fs.existsSync(tree), `${label} runs before the checkout`);
            const script = String(step.run);
            assert.ok(!script.includes("${{") && !JSON.stringify(step.env ?? {}).includes("${{"), `${label}: an expression this test cannot evaluate`);
            const file = path.join(work, `step-${i + 1}.sh`);
            fs.writeFileSync(file, script);
            const log = path.join(work, `step-${i + 1}.log`);
            const fd = fs.openSync(log, "w");
            const cwd = path.resolve(tree, step["working-directory"] ?? testJob.defaults?.run?.["working-directory"] ?? ".");
            const seconds = Math.max(1, Math.floor((deadline - Date.now()) / 1000));
            const r = spawnSync(timeout, ["-k", "10", String(seconds), ...shellArgv(step.shell ?? testJob.defaults?.run?.shell, file)], {
                cwd,
                stdio: ["ignore", fd, fd],
                env: {
                    PATH: bin, HOME: home, LANG: "C.UTF-8", CI: "true", GITHUB_ACTIONS: "true", RUNNER_OS: "Linux", RUNNER_TEMP: work,
                    // Only where npm finds packages and whether it asks the registry first: what npm ci installs is the lock file's.
                    npm_config_cache: npmCache, npm_config_prefer_offline: "true", npm_config_audit: "false", npm_config_fund: "false",
                    ...(step.env ?? {}),
                },
            });
            fs.closeSync(fd);
            const text = fs.readFileSync(log, "utf8");
            assert.equal(r.status, 0, `${label} failed on the stock runner's PATH (exit ${r.status}${r.signal ? `, ${r.signal}` : ""}):\n${failureExcerpt(text)}`);
            // The counts of the suites it ran, in this test's own output.
            for (const line of text.split("\n").filter((l) => /^# (tests|pass|fail) /.test(l))) {
                process.stdout.write(`${label}: ${line}\n`);
            }
            ran++;
        }
        assert.ok(ran >= 3, "the job runs npm ci, npm ci in policy/ and the tests");
    });

    it("every other job runs only run: steps the test job ran, and known actions", () => {
        const tested = new Set((testJob.steps ?? []).flatMap((s) => (s.run === undefined ? [] : [s.run])));
        for (const file of fs.readdirSync(WORKFLOWS).filter((f) => f.endsWith(".yml"))) {
            for (const [id, job] of Object.entries(workflow(file).jobs)) {
                if (job.uses !== undefined) {
                    assert.match(job.uses, /^\.\/\.github\/workflows\/[^/]+\.yml$/, `${file}: job ${id} calls a workflow outside this repository`);
                    continue;
                }
                assert.equal(job["runs-on"], "ubuntu-latest", `${file}: job ${id}`);
                for (const step of job.steps ?? []) {
                    if (step.run !== undefined) {
                        assert.ok(tested.has(step.run), `${file}: job ${id} runs ${JSON.stringify(step.run)}, which the stock-runner run of the test job does not`);
                    } else {
                        assert.ok(String(step.uses).split("@")[0] in KNOWN_ACTIONS, `${file}: job ${id} uses ${step.uses}: say what it needs on the runner`);
                    }
                }
            }
        }
    });
});
