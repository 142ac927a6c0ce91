// The README's Quick start against the program, without a cloud: its fenced
// `sh` blocks are read in order, the first block's values are the
// environment, and every `pulumi config set` is applied to the shipped
// Pulumi.dev.yaml as the CLI would (`--path` into lists and objects,
// `--secret` values marked secret). The result must be a stack preview
// accepts: no placeholder left, no warning, every secret set. It fails when
// the README and the program disagree (a key renamed, a placeholder the
// Quick start does not replace). The blocks are run against a host, with
// Verify and Uninstall, by e2e scenario 17 (test/e2e/lib/quickstart.sh).
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";
import { configWarnings, refusePlaceholders, SECRET_KEYS, validateConfig, type RawConfig } from "../../components/config";
import { readStackFile } from "../../tools/render";

const ROOT = path.resolve(__dirname, "../..");
const README = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
const HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHostKeyFake0000000000000000000000000000000A";
const PRIVATE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nKEY\n-----END OPENSSH PRIVATE KEY-----\n";

/** The text of the level-2 section whose title starts with TITLE. */
function section(title: string): string {
    const parts = README.split(/^## /m);
    const found = parts.find((p) => p.startsWith(title));
    assert.ok(found, `README has no section ${title}`);
    return found;
}

/** The fenced sh blocks of TEXT, each as its logical lines (continuations joined, comments dropped). */
function shBlocks(text: string): string[][] {
    return [...text.matchAll(/^ *```sh\n([\s\S]*?)^ *```/gm)].map((m) => m[1].replace(/\\\n\s*/g, "").split("\n")
        .map((l) => l.replace(/\s+#.*$/, "").trim()).filter((l) => l !== "" && !l.startsWith("#")));
}

/** Shell words of LINE (single and double quotes, $VAR from ENV; a command substitution stays as one word). */
function words(line: string, env: Record<string, string>): string[] {
    const out: string[] = [];
    const re = /'([^']*)'|"((?:[^"\\]|\\.|\$\((?:[^()]|\([^()]*\))*\))*)"|(\S+)/g;
    for (const m of line.matchAll(re)) {
        const raw = m[1] ?? m[2] ?? m[3];
        out.push(m[1] !== undefined ? raw : raw.replace(/\$(\w+)|\$\{(\w+)\}/g, (_s, a, b) => env[a ?? b] ?? `$${a ?? b}`));
    }
    return out;
}

/** Sets VALUE at a `--path` key such as `hosts[0].instanceId` inside RAW (lists and objects as YAML gives them). */
function setPath(raw: RawConfig, key: string, value: string): void {
    const steps = [...key.matchAll(/([^.[\]]+)|\[(\d+)\]/g)].map((m) => (m[2] !== undefined ? Number(m[2]) : m[1]));
    let node: any = raw;
    steps.forEach((step, i) => {
        if (i === steps.length - 1) {
            node[step] = value;
            return;
        }
        node[step] ??= typeof steps[i + 1] === "number" ? [] : {};
        node = node[step];
    });
}

describe("the README's Quick start, applied to Pulumi.dev.yaml (issue 35)", () => {
    it("its config commands replace every placeholder and leave a stack preview accepts without a warning", () => {
        const blocks = shBlocks(section("Quick start"));
        const env: Record<string, string> = {};
        // The webhook URL is typed without echo (`read -rsp ... WEBHOOK`): never in a line, history or argv.
        const typed = blocks[0].filter((l) => /^read -rsp '[^']*' WEBHOOK\b/.test(l));
        assert.equal(typed.length, 1, "the first block reads the webhook URL without echo");
        env.WEBHOOK = "https://hooks.slack.com/services/T000/B000/XXXX";
        for (const line of blocks[0].filter((l) => !typed.includes(l))) {
            assert.match(line, /^(export )?[A-Z_]+=/, "the first block sets the user's values");
            for (const w of words(line.replace(/^export /, ""), env)) {
                const [k, ...v] = w.split("=");
                env[k] = v.join("=").replace(/^'(.*)'$/, "$1");
            }
        }
        const raw: RawConfig = readStackFile(path.join(ROOT, "Pulumi.dev.yaml"));
        const secretKeys: string[] = [];
        const seen: string[] = [];
        // A secret comes on stdin (`printf '%s' "$X" | pulumi config set ...`), never in argv.
        const piped = /^printf '%s' "\$(\w+)" \| (pulumi config set .*)$/;
        for (const text of blocks.flat().filter((l) => l.startsWith("pulumi config set ") || piped.test(l))) {
            const m = piped.exec(text);
            const line = m ? `${m[2]} "$${m[1]}"` : text;
            const w = words(line, env).slice(3);
            const stack = w.indexOf("--stack");
            assert.ok(stack >= 0 && w[stack + 1] === "dev", `${line}: names the stack`);
            w.splice(stack, 2);
            const secret = w.includes("--secret");
            const rest = w.filter((x) => x !== "--secret" && x !== "--path");
            const [full, value] = rest;
            const ns = full.slice(0, full.indexOf(":"));
            const key = full.slice(full.indexOf(":") + 1);
            seen.push(full);
            if (ns !== "hostguard") {
                continue;
            }
            // `< file` (the deploy key) and `$(ssh-keyscan ...)` (the host key) stand for what they read.
            const v = rest.includes("<") ? PRIVATE_KEY : value.startsWith("$(ssh-keyscan") ? HOST_KEY : value;
            assert.ok(v !== undefined && !v.includes("$"), `${line}: every value comes from the first block`);
            setPath(raw, key, v);
            if (secret) {
                secretKeys.push(key);
            }
        }
        assert.ok(seen.includes("aws:region"), "the region is set");
        assert.ok(!blocks.flat().some((l) => /^pulumi config set .*webhookUrl "/.test(l)), "the webhook URL is never in argv");
        assert.ok(!blocks[0].some((l) => /^export .*WEBHOOK=/.test(l)), "the webhook URL is not exported to every command");
        const config = validateConfig(raw, { secretKeys: SECRET_KEYS.filter((k) => secretKeys.includes(k)) });
        assert.deepEqual(config.placeholders, [], "the Quick start replaces every placeholder of Pulumi.dev.yaml");
        refusePlaceholders(config);
        assert.deepEqual(configWarnings(config), []);
        assert.deepEqual([config.hasWebhookUrl, config.hasSshPrivateKey], [true, true]);
        assert.equal(config.hosts[0].host, env.HOST);
        assert.equal(config.hosts[0].instanceId, env.INSTANCE);
        assert.equal(config.securityGroupId, env.GROUP);
    });

    it("creates the stack, the deploy key and its authorized_keys line, previews and deploys; Uninstall destroys", () => {
        const lines = shBlocks(section("Quick start")).flat();
        for (const want of [/^pulumi login /, /^pulumi stack init "\$STACK"/, /^ssh-keygen .*-f ~\/\.ssh\/hostguard_deploy$/, /^ssh-copy-id /,
            /^pulumi preview --stack "\$STACK" --diff$/, /^pulumi up --stack "\$STACK"/]) {
            assert.ok(lines.some((l) => want.test(l)), `Quick start: ${want}`);
        }
        assert.ok(shBlocks(section("Uninstall")).flat().some((l) => /^pulumi destroy --stack \w+/.test(l)), "Uninstall: pulumi destroy");
        const quick = README.indexOf("## Quick start");
        const end = README.indexOf("\n## ", quick + 1);
        assert.ok(README.slice(0, end).split("\n").length <= 150, "the Quick start ends within the first 150 lines");
        assert.ok(README.split("\n").length <= 401, "README.md is at most 400 lines");
    });
});
