// The one URL rule of the webhook and the heartbeat (RULES.httpsUrl in
// components/settings.ts), on both sides: the stack validator (validateConfig,
// webhookUrl and heartbeatUrl) and the host, where the real `install
// set-webhook` reads the stdin the deploy sends (urlLine, `url=URL`) and checks it
// with the URL files' one parser (hostguard/urltext.py, settings_table.URL_RE), which
// the notifier and the heartbeat read the file install wrote with. The same URLs go to every side: fixed
// hostile cases and fast-check values; they must agree on each.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import fc from "fast-check";
import { ConfigError, SECRET_KEYS, validateConfig } from "../../components/config";
import { urlLine } from "../../components/remoteCommands";

const SCRIPTS = path.resolve(__dirname, "../../scripts");
const RUNS = Number(process.env.CONTRACT_RUNS ?? 3);
const HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIContractTestFake00000000000000000000000000A";

let work = "";
before(() => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), "hg-url-contract-"));
});
after(() => {
    fs.rmSync(work, { recursive: true, force: true });
});

/** Preview's verdict on URL as webhookUrl and as heartbeatUrl (they must agree with each other too). */
function preview(url: string): boolean {
    const verdicts = (["webhookUrl", "heartbeatUrl"] as const).map((key) => {
        try {
            validateConfig({
                aws: "false", hosts: JSON.stringify([{ name: "h", host: "127.0.0.1", hostKey: HOST_KEY }]), [key]: url,
            }, { requireSecrets: false, secretKeys: SECRET_KEYS });
            return true;
        } catch (e) {
            assert.ok(e instanceof ConfigError && e.key === key, String(e));
            assert.ok(url.trim().length < 12 || !e.message.includes(url.trim()), `the secret is echoed: ${e.message}`);
            return false;
        }
    });
    assert.equal(verdicts[0], verdicts[1], `webhookUrl and heartbeatUrl disagree on ${JSON.stringify(url)}`);
    return verdicts[0];
}

/**
 * The real `install set-webhook --root EMPTY` on the stdin the deploy would send, unguarded (`url=`
 * and the trimmed URL: urlLine itself refuses a line break or NUL). It checks the URL before
 * anything else: a refused URL dies "refused"; an accepted one goes on and stops at the missing
 * base install. Then the text install would write goes through the agent's reader of the file
 * (urltext.parse, Debian's python3 as on hosts). One bash per URL for install.
 */
function host(urls: string[]): boolean[] {
    const root = fs.mkdtempSync(path.join(work, "root-"));
    return urls.map((url) => {
        let stderr = "";
        try {
            execFileSync("bash", [path.join(SCRIPTS, "install"), "set-webhook", "--root", root], {
                input: `url=${url.trim()}\n`, stdio: "pipe", timeout: 30_000, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LC_ALL: "C" },
            });
            assert.fail(`install set-webhook succeeded without a base install for ${JSON.stringify(url)}`);
        } catch (e: any) {
            stderr = String(e.stderr ?? "");
        }
        const refused = /set-webhook: refused/.test(stderr);
        assert.ok(refused || /run install --part base first/.test(stderr), `unexpected install output: ${stderr}`);
        assert.ok(url.trim().length < 12 || !stderr.includes(url.trim()), "install echoed the URL");
        if (!refused) {
            // What install writes (urlLine of the trimmed URL) must be a file the agent accepts, as that URL.
            const read = execFileSync("/usr/bin/python3", ["-IS", "-c",
                "import sys; sys.path.insert(0, sys.argv[1]); from hostguard import urltext; print(urltext.parse(sys.argv[2], 'test').url)",
                SCRIPTS, urlLine(url)], { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LC_ALL: "C" } }).toString().trim();
            assert.equal(read, url.trim(), `the agent would refuse the line install wrote for ${JSON.stringify(url)}`);
        }
        return !refused;
    });
}

const HOSTILE: Array<[string, boolean]> = [
    ["https://hooks.slack.com/services/T000/B000/XXXX", true],
    ["https://hc-ping.com/0c6a2f9e-3b1d-4c5e-9f7a-123456789abc", true],
    ["https://hooks.example.test/a?b=c&d=e", true],
    ["https://hooks.example.test:8443/x", true],
    ["https://user:pass@hooks.example.test/x", true],
    ["https://192.0.2.10/hook", true],
    ["https://[2001:db8::1]/hook", true],
    ["https://[2001:db8::1]:443/hook", true],
    ["  https://hooks.example.test/x  ", true],
    ["https://hooks.example.test/x\"", false],
    ["https://hooks.example.test/x\" -o /tmp/x", false],
    ["https://hooks.example.test/x#frag", false],
    ["https://hooks.example.test/a b", false],
    ["https://hooks.example.test/a\nurl = \"https://evil.example.test/\"", false],
    ["https://hooks.example.test/a\tb", false],
    ["http://hooks.example.test/x", false],
    ["HTTPS://hooks.example.test/x", false],
    ["ftp://hooks.example.test/x", false],
    ["https://", false],
    ["https:///path", false],
    ["https://hooks.example.test:0/x", false],
    ["https://hooks.example.test:65536/x", false],
    ["https://hooks.example.test:/x", false],
    ["https://-bad.example.test/x", false],
    ["https://a..b/x", false],
    ["https://hooks.example.test/{a,b}", false],
    ["https://hooks.example.test/[1-2]", false],
    ["https://hooks.example.test/a|b", false],
    ["https://hooks.example.test/a\\b", false],
    ["https://hooks.example.test/a<b>", false],
    ["https://hooks.example.test/é", false],
    ["https://user@name@hooks.example.test/x", false],
    ["SENTINEL", false],
    ["   ", false],
];

describe("URL contract: preview and the host use one rule", () => {
    it("the hostile cases: both sides give the expected verdict", () => {
        const got = host(HOSTILE.map(([u]) => u));
        HOSTILE.forEach(([url, want], i) => {
            assert.equal(preview(url), want, `preview on ${JSON.stringify(url)}`);
            assert.equal(got[i], want, `install on ${JSON.stringify(url)}`);
        });
    });

    it("a line break, CR or NUL: urlLine refuses to write it, never showing the value", () => {
        for (const url of ["https://hooks.example.test/a\nformat=slack", "https://hooks.example.test/a\rb", "https://hooks.example.test/a\u0000b"]) {
            assert.throws(() => urlLine(url), (e: Error) => /url= value of a URL file may not hold a line break or NUL/.test(e.message) && !e.message.includes("hooks"));
        }
    });

    it("a NUL byte: preview refuses it (bash drops NULs when it reads, so the host would see another URL)", () => {
        assert.equal(preview("https://hooks.example.test/a\u0000b"), false);
    });

    it("generated URLs, valid and near-miss: preview accepts exactly what install accepts", () => {
        const char = fc.constantFrom(..."aZ09.-_~%!$&'()*+,;=:@/?#\"\\ {}[]|^`<>é\t".split(""));
        const piece = fc.string({ unit: char, maxLength: 8 });
        const hostName = fc.oneof(fc.domain(), fc.ipV4(), fc.ipV6().map((a) => `[${a}]`), piece);
        const url = fc.oneof(
            fc.webUrl({ validSchemes: ["https"], withQueryParameters: true, withFragments: true }),
            fc.tuple(fc.constantFrom("https://", "http://", "https:/", ""), fc.option(piece.map((p) => `${p}@`), { nil: "" }), hostName,
                fc.option(fc.integer({ min: 0, max: 70000 }).map((p) => `:${p}`), { nil: "" }), piece.map((p) => `/${p}`))
                .map(([s, u, h, p, rest]) => `${s}${u}${h}${p}${rest}`),
        );
        fc.assert(fc.property(fc.array(url, { minLength: 10, maxLength: 10 }), (urls) => {
            const got = host(urls);
            urls.forEach((u, i) => assert.equal(preview(u), got[i], `${JSON.stringify(u)}: install ${got[i] ? "accepts" : "refuses"}`));
        }), { numRuns: RUNS });
    });
});
