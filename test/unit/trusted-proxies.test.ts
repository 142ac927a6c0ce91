// trustedProxies (issue 25): the config's refusals and warning, the files
// the pure renderers give a host with the setting, and the proof that
// without it the payload is what it was: no conditional row ships, the deny
// snippet is scripts/' file byte for byte, the expanded table and every
// part's hash are those of the setting given as an empty list, and nothing
// a host receives names the proxy machinery. (The jail's bytes without the
// setting are the committed snapshots of render-tool.test.ts, unchanged.)
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";
import { conditionHolds, hostFiles, payloadFile, readPayload, renderHost } from "../../components/bundles";
import { ConfigError, configWarnings, DEFAULT_SETTINGS, validateConfig, type RawConfig } from "../../components/config";
import { parseFileTable, renderExpandedTable } from "../../components/fileTable";
import { jailIgnoreIps, renderJail, renderProxiedDenySnippet, renderRealIpDropIn } from "../../components/hostFiles";
import { validateSettings } from "../../components/settings";

const SCRIPTS = path.resolve(__dirname, "../../scripts");
const HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFake00000000000000000000000000000000000000A";
const KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAAfake\n-----END OPENSSH PRIVATE KEY-----\n";
const PROXIES = ["10.9.1.0/24", "fd00:9::/64"];

function good(overrides: RawConfig = {}): RawConfig {
    return {
        hosts: JSON.stringify([{ name: "web1", host: "10.0.1.10", hostKey: HOST_KEY, instanceId: "i-0123456789abcdef0" }]),
        vpcId: "vpc-0123456789abcdef0",
        adminCidrs: JSON.stringify(["203.0.113.0/24"]),
        webhookUrl: "https://hooks.example.test/services/T000/B000/x",
        sshPrivateKey: KEY,
        ...overrides,
    };
}

function refusal(raw: RawConfig): ConfigError {
    try {
        validateConfig(raw);
    } catch (e) {
        assert.ok(e instanceof ConfigError, String(e));
        return e;
    }
    assert.fail("expected a ConfigError");
}

const proxied = validateSettings({ trustedProxies: JSON.stringify(PROXIES) });

describe("trustedProxies: config", () => {
    it("defaults to empty and takes v4 and v6 addresses and CIDRs", () => {
        assert.deepEqual(DEFAULT_SETTINGS.trustedProxies, []);
        const c = validateConfig(good({ trustedProxies: JSON.stringify([...PROXIES, "192.0.2.7", "2001:db8::5"]) }));
        assert.deepEqual(c.settings.trustedProxies, [...PROXIES, "192.0.2.7", "2001:db8::5"]);
    });
    it("refuses a proxy list wider than a /16 of public space, by the union rule (private ranges do not count)", () => {
        assert.match(refusal(good({ trustedProxies: JSON.stringify(["0.0.0.0/0"]) })).message,
            /^hostguard:trustedProxies together cover .* more than a \/16 .*nginx would take any of them at its word/);
        assert.equal(refusal(good({ trustedProxies: JSON.stringify(["198.18.0.0/15"]) })).key, "trustedProxies");
        // Two /16 entries, each allowed alone, are refused together.
        validateConfig(good({ trustedProxies: JSON.stringify(["198.18.0.0/16"]) }));
        assert.equal(refusal(good({ trustedProxies: JSON.stringify(["198.18.0.0/16", "203.0.0.0/16"]) })).key, "trustedProxies");
        assert.equal(refusal(good({ trustedProxies: JSON.stringify(["2001:db8::/31"]) })).key, "trustedProxies");
        // A VPC's whole private space is no public share.
        validateConfig(good({ trustedProxies: JSON.stringify(["10.0.0.0/8", "172.16.0.0/12", "fd00::/8"]) }));
    });
    it("refuses what is no address, naming the entry", () => {
        assert.equal(refusal(good({ trustedProxies: JSON.stringify(["10.9.1.0/24", "example.com"]) })).key, "trustedProxies[1]");
        assert.equal(refusal(good({ trustedProxies: JSON.stringify(["10.0.0.0/33"]) })).key, "trustedProxies[0]");
        assert.equal(refusal(good({ trustedProxies: JSON.stringify(["999.1.1.1"]) })).key, "trustedProxies[0]");
        assert.equal(refusal(good({ trustedProxies: "10.9.1.0/24" })).key, "trustedProxies");
    });
    it("warns when keepSecurityGroupIds is set and trustedProxies is empty, and only then", () => {
        const keep = { keepSecurityGroupIds: JSON.stringify(["sg-0aaaaaaaaaaaaaaa1"]) };
        const warned = configWarnings(validateConfig(good(keep)));
        assert.equal(warned.filter((w) => w.includes("trustedProxies is empty")).length, 1);
        assert.match(warned.find((w) => w.includes("trustedProxies"))!, /^hostguard:keepSecurityGroupIds is set .*Behind a load balancer/);
        assert.deepEqual(configWarnings(validateConfig(good({ ...keep, trustedProxies: JSON.stringify(PROXIES) }))).filter((w) => w.includes("trustedProxies")), []);
        assert.deepEqual(configWarnings(validateConfig(good())).filter((w) => w.includes("trustedProxies")), []);
    });
    it("warns about repeated or overlapping proxies", () => {
        const w = configWarnings(validateConfig(good({ trustedProxies: JSON.stringify(["10.9.1.0/24", "10.9.1.7"]) })));
        assert.ok(w.some((x) => /trustedProxies\[1\] 10\.9\.1\.7 lies inside trustedProxies\[0\]/.test(x)), w.join("\n"));
    });
});

describe("trustedProxies: rendered files", () => {
    it("the drop-in: set_real_ip_from per proxy, X-Forwarded-For, recursive, and the ban map", () => {
        const text = renderRealIpDropIn(proxied);
        const directives = text.split("\n").filter((l) => l !== "" && !l.startsWith("#"));
        assert.deepEqual(directives, [
            "set_real_ip_from 10.9.1.0/24;",
            "set_real_ip_from fd00:9::/64;",
            "real_ip_header X-Forwarded-For;",
            "real_ip_recursive on;",
            "map $remote_addr $hostguard_banned {",
            "    default \"\";",
            "    include /var/lib/hostguard/nginx-bans.ma[p];",
            "}",
        ]);
    });
    it("the deny snippet: the banned clients' refusal first, then scripts/' deny rule byte for byte", () => {
        const deny = fs.readFileSync(path.join(SCRIPTS, "nginx/hostguard-deny.conf"), "utf8");
        const text = renderProxiedDenySnippet(deny);
        assert.ok(text.endsWith(`\n${deny}`));
        assert.match(text, /^(# [^\n]*\n)+if \(\$hostguard_banned\) \{\n {4}return 403;\n\}\n/);
    });
    it("the jail: the proxies in ignoreip, the nginx ban action between the firewall's and the chat's; nothing else changes", () => {
        assert.deepEqual(jailIgnoreIps(proxied, ["203.0.113.0/24"]), ["127.0.0.1/8", "::1", "203.0.113.0/24", ...PROXIES]);
        const plain = renderJail(DEFAULT_SETTINGS).split("\n");
        const with_ = renderJail(proxied).split("\n");
        // The added comment block: "#", then the 6 lines from "# trustedProxies:".
        const start = with_.indexOf("# trustedProxies: nginx logs the client's address from the proxies'") - 1;
        assert.ok(start > 0);
        const without = [...with_.slice(0, start), ...with_.slice(start + 7)];
        assert.deepEqual(without.filter((l) => !l.startsWith("ignoreip") && l !== "            hostguard-nginx-ban.py"),
            plain.filter((l) => !l.startsWith("ignoreip")));
        assert.ok(with_.includes("ignoreip  = 127.0.0.1/8 ::1 10.9.1.0/24 fd00:9::/64"));
        const action = with_.indexOf("action    = %(action_)s");
        assert.deepEqual(with_.slice(action, action + 3), [
            "action    = %(action_)s", "            hostguard-nginx-ban.py", "            slack-notify.py[slack_channel=\"alerts\"]",
        ]);
    });
    it("ships the action in bantool, the drop-in and the proxied snippet in web", () => {
        const plain = renderHost(DEFAULT_SETTINGS, undefined, { cronMinute: 3 });
        const with_ = renderHost(proxied, undefined, { cronMinute: 3 });
        const dest = (r: typeof plain) => Object.fromEntries(r.files.map((f) => [f.destination, `${f.part} ${f.path} ${f.mode.toString(8)}`]));
        const d = dest(with_);
        assert.equal(d["/etc/fail2ban/action.d/hostguard-nginx-ban.py"], "bantool fail2ban/action.d/hostguard-nginx-ban.py 644");
        assert.equal(d["/etc/nginx/conf.d/hostguard-realip.conf"], "web nginx/hostguard-realip.conf 644");
        assert.equal(d["/etc/nginx/snippets/hostguard-deny.conf"], "web nginx/hostguard-deny-proxied.conf 644");
        // Every bundle carries the expanded table, so every part is new; web and bantool by their own files too.
        const hash = (r: typeof plain, part: string) => r.bundles.find((b) => b.part === part)!.sha256;
        assert.notEqual(hash(with_, "web"), hash(plain, "web"));
        assert.notEqual(hash(with_, "bantool"), hash(plain, "bantool"));
    });
});

describe("trustedProxies: without it the payload is today's", () => {
    const payload = readPayload();
    const plain = renderHost(DEFAULT_SETTINGS, payload, { cronMinute: 3 });
    it("an empty list renders exactly what no setting renders (every part's hash)", () => {
        const empty = renderHost(validateSettings({ trustedProxies: "[]" }), payload, { cronMinute: 3 });
        assert.deepEqual(empty.bundles.map((b) => b.sha256), plain.bundles.map((b) => b.sha256));
    });
    it("ships exactly the unconditional and `unless` rows; the expanded table is theirs", () => {
        const rows = parseFileTable(fs.readFileSync(path.join(SCRIPTS, "files.table"), "utf8"));
        const shipped = rows.filter((r) => r.condition === undefined || conditionHolds(r.condition, DEFAULT_SETTINGS));
        assert.deepEqual([...new Set(plain.files.map((f) => f.tableSource))], shipped.map((r) => r.source));
        assert.equal(plain.files.find((f) => f.path === "files.table")!.content.toString("utf8"), renderExpandedTable(plain.files));
        assert.ok(rows.some((r) => r.condition?.setting === "trustedProxies"), "the table has the conditional rows");
    });
    it("the deny snippet is scripts/' file; no file names the proxy machinery", () => {
        const deny = plain.files.find((f) => f.destination === "/etc/nginx/snippets/hostguard-deny.conf")!;
        assert.deepEqual(deny.content, fs.readFileSync(path.join(SCRIPTS, "nginx/hostguard-deny.conf")));
        // The agent's package is code every host has (hostguard/ban/nginxban.py among it):
        // inert without the program and the action that run it, which are not shipped.
        for (const f of plain.files.filter((file) => !file.path.startsWith("hostguard/"))) {
            for (const word of ["hostguard_banned", "real_ip", "hostguard-nginx-ban", "nginx-bans.map"]) {
                assert.ok(!f.content.toString("utf8").includes(word), `${f.path} names ${word}`);
            }
        }
        assert.ok(!plain.files.some((f) => f.destination.includes("conf.d")));
    });
});

describe("file table conditions", () => {
    it("parses `when`/`unless SETTING` on a source row; the expanded grammar has none", () => {
        const rows = parseFileTable("web a/b.conf /etc/x/b.conf 0644 when trustedProxies\nweb a/c.conf /etc/x/c.conf 0644  unless trustedProxies\nweb a/d /etc/d 0755\n");
        assert.deepEqual(rows.map((r) => r.condition), [{ setting: "trustedProxies", negate: false }, { setting: "trustedProxies", negate: true }, undefined]);
        assert.throws(() => parseFileTable("web a/b.conf /etc/x/b.conf 0644 if trustedProxies\n"), /expected PART SOURCE DESTINATION MODE/);
        assert.equal(conditionHolds({ setting: "trustedProxies", negate: false }, proxied), true);
        assert.equal(conditionHolds({ setting: "trustedProxies", negate: true }, proxied), false);
        assert.equal(conditionHolds({ setting: "banIncrement", negate: false }, DEFAULT_SETTINGS), false);
        assert.throws(() => conditionHolds({ setting: "noSuchKey", negate: false }, DEFAULT_SETTINGS), /no setting of components\/settings.ts/);
    });
    it("refuses two shipped rows with one destination", () => {
        const payload = readPayload();
        const table = payload.find((f) => f.path === "files.table")!;
        const text = table.content.toString("utf8").replace(/ +unless trustedProxies/, "");
        const changed = payload.map((f) => (f === table ? payloadFile(f.path, text) : f));
        assert.throws(() => hostFiles({ settings: proxied, cronMinute: 0 }, changed), /two rows ship \/etc\/nginx\/snippets\/hostguard-deny.conf/);
    });
});
