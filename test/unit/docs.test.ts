// The READMEs and docs/ stay true about the tree: every file path they name
// exists (in the repository: a fresh clone has nothing beside it), and the
// Layout table of docs/development.md names every component and test folder.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";

const ROOT = path.resolve(__dirname, "../..");
const README = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
const READMES = ["README.md", "scripts/README.md", "tools/README.md", "docs/configuration.md", "docs/aws.md", "docs/development.md", "docs/fleets.md", "docs/host.md", "docs/ci.md"];

/** Backquoted file paths (a folder and a known extension) a README names. */
function namedPaths(text: string): string[] {
    return [...new Set([...text.matchAll(/`([\w./-]*\/[\w.-]+\.(?:md|ts|sh|bash|py|yaml|json))`/g)].map((m) => m[1]))];
}

/** The first column of the Layout table of docs/development.md. */
function layoutPaths(): string[] {
    const readme = fs.readFileSync(path.join(ROOT, "docs/development.md"), "utf8");
    const section = readme.split(/^## Layout$/m)[1]?.split(/^## /m)[0] ?? "";
    return [...section.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]);
}

/** Where scripts/files.table puts files on a host (its third column). */
function hostDestinations(): Set<string> {
    const table = fs.readFileSync(path.join(ROOT, "scripts/files.table"), "utf8");
    return new Set(table.split("\n").filter((l) => l.trim() && !l.trim().startsWith("#")).map((l) => l.trim().split(/\s+/)[2]));
}

describe("the READMEs", () => {
    for (const readme of READMES) {
        it(`${readme} names only files of the repository (or, for a host path, of the file table)`, () => {
            const dir = path.dirname(path.join(ROOT, readme));
            const onHost = hostDestinations();
            const missing = namedPaths(fs.readFileSync(path.join(ROOT, readme), "utf8"))
                .filter((p) => (p.startsWith("/") ? !onHost.has(p) : !fs.existsSync(path.resolve(ROOT, p)) && !fs.existsSync(path.resolve(dir, p))));
            assert.deepEqual(missing, []);
        });
    }

    it("the Layout table of docs/development.md names every component and test folder, and nothing that is gone", () => {
        const layout = layoutPaths();
        const wanted = [
            ...fs.readdirSync(path.join(ROOT, "components")).filter((f) => f.endsWith(".ts")).map((f) => `components/${f}`),
            ...fs.readdirSync(path.join(ROOT, "test"), { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => `test/${e.name}/`),
        ];
        assert.deepEqual(wanted.filter((p) => !layout.includes(p)), []);
        assert.deepEqual(layout.filter((p) => !fs.existsSync(path.join(ROOT, p))), []);
    });
});

/** Every doc a user reads: the README and docs/. */
function userDocs(): Array<[string, string]> {
    const names = ["README.md", "CHANGELOG.md", ...fs.readdirSync(path.join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];
    return names.map((n) => [n, fs.readFileSync(path.join(ROOT, n), "utf8")]);
}

describe("what the docs claim (issue 44)", () => {
    it("the README lists every ending the deny snippet refuses", () => {
        const snippet = fs.readFileSync(path.join(ROOT, "scripts/nginx/hostguard-deny.conf"), "utf8");
        const rule = /^if \(\$uri ~\* "(.*)"\) \{$/m.exec(snippet);
        assert.ok(rule, "the snippet's if ($uri ~* ...) line");
        const endings = [...rule[1].matchAll(/\\\.([a-z]+)(?=\||\))/g)].map((m) => `.${m[1]}`);
        assert.ok(endings.length >= 7, `endings read from the rule: ${endings}`);
        assert.ok(rule[1].includes("\\.aws") && rule[1].includes("credentials"), "the rule has .aws/credentials");
        const intro = README.split(/^## /m)[0];
        for (const ending of [...new Set(endings), ".aws/credentials", ".config.env"]) {
            assert.ok(intro.includes(`\`${ending}\``), `the README's first lines name ${ending}`);
        }
    });

    it("every supported chat service is named in the README's Does it fit", () => {
        const fit = README.split(/^## /m).find((p) => p.startsWith("Does it fit")) ?? "";
        for (const name of ["Slack", "Mattermost", "Rocket.Chat", "Teams", "Google Chat", "Discord", "PagerDuty", "generic"]) {
            assert.ok(fit.includes(name), `Does it fit names ${name}`);
        }
    });

    it("no doc names an image the defaults do not fit, nor a claim found false", () => {
        const FALSE = [
            [/Amazon Linux/, "Amazon Linux: the defaults assume Debian's paths and packages"],
            [/before anything changes/, "a missing program leaves the other parts and the group changed"],
            [/the host's `name` in `hosts`/, "alertHostLabel uses the kernel's host name"],
            [/^\| `slack` \|[^|]*\|[^|]*\| yes \|/m, "only Slack's legacy webhooks honour a channel override"],
            [/CPU 93% over 90%/, "not a text the monitors produce"],
            [/export [^\n]*WEBHOOK=/, "the webhook URL is exported to every command"],
            [/WEBHOOK='https:/, "the webhook URL typed into shell history"],
            [/run as written/, "the Quick start test substitutes the AWS steps"],
            [/alias\/hostguard/, "a fleet's KMS key has no alias (an alias refuses the period a stack name may hold)"],
            [/\/hostguard\/<stack>|hostguard-stack=<stack>|hostguard-<stack>/, "fleet names are <project>/<stack> (ssmDocument.ts fleetNames)"],
            [/429\) only warns|permanent refusal fails/, "a 'try later' fails a rotation too, keeping the old webhook (rotation.py)"],
            [/dead-msg-/, "dead letters are rows of spool.db's table dead, not files"],
        ] as const;
        const found = userDocs().flatMap(([name, text]) => FALSE.filter(([re]) => re.test(text)).map(([, why]) => `${name}: ${why}`));
        assert.deepEqual(found, []);
    });

    it("every apt line that installs the ban tool holds the packages of both Debians (iptables: 12's banaction, nftables: 13's)", () => {
        assert.ok(/tried: Debian 12 and 13/.test(README), "Does it fit says which Debians were tried");
        const lines = userDocs().flatMap(([name, text]) =>
            [...text.matchAll(/apt-get\x20install((?:[ \t]+|\n[ \t]+)[\w.-]+)+/g)].map((m) => [name, m[0].split(/\s+/)] as const));
        const withBantool = lines.filter(([, words]) => words.includes("fail2ban"));
        assert.ok(withBantool.length >= 2, `apt lines found: ${lines.map(([n]) => n)}`);
        for (const [name, words] of withBantool) {
            const missing = ["python3", "fail2ban", "nginx", "cron", "util-linux", "iptables", "nftables"].filter((p) => !words.includes(p));
            assert.deepEqual(missing, [], `${name}: ${words.join(" ")}`);
        }
    });

    it("docs/host.md's What lands where names every file install places, the sshd journal drop-in and the code record included", () => {
        const host = fs.readFileSync(path.join(ROOT, "docs/host.md"), "utf8");
        const section = host.split(/^## What lands where$/m)[1]?.split(/^## /m)[0] ?? "";
        const listed = [...section.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]);
        const agent = (file: string, name: string): string => {
            const m = new RegExp(`^${name} = (f"\\{paths\\.STATE_PATH\\}|")([^"]+)"`, "m").exec(fs.readFileSync(path.join(ROOT, "scripts/hostguard", file), "utf8"));
            assert.ok(m, `${name} in scripts/hostguard/${file}`);
            return m[1] === '"' ? m[2] : `/var/lib/hostguard${m[2]}`;
        };
        const wanted = [...hostDestinations(), agent("install/sshjournal.py", "DROPIN"), agent("install/f2bcode.py", "RECORD")];
        const missing = wanted.filter((d) => !listed.some((l) => l === d || (d.endsWith("/") && l.startsWith(d))));
        assert.deepEqual(missing, []);
    });
});
