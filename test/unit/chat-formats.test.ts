// hostguard:chatFormat, pagerdutyRoutingKey and pagerdutyRegion (issue 34): the format detected
// from every known host shape, contradictions and retired Teams connectors refused before deploy
// naming the key (never the URL), PagerDuty's routing key in place of a URL, the webhook file's
// text, and the host agent's detection (scripts/hostguard/notify/formats.py, Debian's python3) agreeing
// with the validator's on the same URLs.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as path from "node:path";
import { describe, it } from "node:test";
import { CHAT_FORMATS, FORMAT_HOSTS, type ChatFormat } from "../../components/chatFormats";
import { ConfigError, SECRET_KEYS, validateConfig, type RawConfig } from "../../components/config";
import { webhookFileText } from "../../components/remoteCommands";

const HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIContractTestFake00000000000000000000000000A";
const KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nKEYSENTINEL\n-----END OPENSSH PRIVATE KEY-----\n";
const ROUTING = "R0123456789abcdef0123456789SENTI";
const SCRIPTS = path.resolve(__dirname, "../../scripts");

function raw(extra: RawConfig): RawConfig {
    return { aws: "false", hosts: JSON.stringify([{ name: "h", host: "127.0.0.1", hostKey: HOST_KEY }]), sshPrivateKey: KEY, ...extra };
}

function formatOf(extra: RawConfig): ChatFormat | undefined {
    return validateConfig(raw(extra), { secretKeys: SECRET_KEYS }).chatFormat;
}

function refusal(extra: RawConfig): ConfigError {
    try {
        validateConfig(raw(extra), { secretKeys: SECRET_KEYS });
    } catch (e) {
        assert.ok(e instanceof ConfigError, String(e));
        for (const secret of [extra.webhookUrl, extra.pagerdutyRoutingKey]) {
            if (typeof secret === "string") {
                assert.ok(!e.message.includes(secret), `secret echoed: ${e.message}`);
            }
        }
        return e;
    }
    assert.fail(`accepted ${JSON.stringify(extra)}`);
}

/** Every known host shape, with the format it names; the self-hosted ones fall back to slack. */
const SHAPES: Array<[string, ChatFormat]> = [
    ["https://hooks.slack.com/services/T000/B000/XXXXXXXX", "slack"],
    ["https://hooks.slack-gov.com/services/T000/B000/XXXXXXXX", "slack"],
    ["https://HOOKS.Slack.com./services/T000/B000/XXXXXXXX", "slack"],
    ["https://default1a2b.3c.environment.api.powerplatform.com:443/powerautomate/automations/direct/workflows/0123456789abcdef0123456789abcdef/triggers/manual/paths/invoke?api-version=1&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig=abcdefgh", "teams"],
    ["https://prod-12.westeurope.logic.azure.com:443/workflows/0123456789abcdef0123456789abcdef/triggers/manual/paths/invoke?api-version=2016-06-01&sig=abc", "teams"],
    ["https://chat.googleapis.com/v1/spaces/AAAA1234/messages?key=KEY&token=TOKEN", "googlechat"],
    ["https://discord.com/api/webhooks/123456789012345678/tokentoken", "discord"],
    ["https://discordapp.com/api/webhooks/123456789012345678/tokentoken", "discord"],
    ["https://ptb.discord.com/api/v10/webhooks/123456789012345678/tokentoken", "discord"],
    ["https://canary.discordapp.com/api/webhooks/1/t", "discord"],
    ["https://mattermost.example.org/hooks/abcdefghijklmnopqrstuvwxyz", "slack"],
    ["https://rocket.example.org/hooks/abc/def", "slack"],
    ["https://notdiscord.com/api/webhooks/1/t", "slack"],
    ["https://discord.com.example.org/api/webhooks/1/t", "slack"],
    ["https://hooks.example.test/services/T0/B0/x", "slack"],
];

const RETIRED = [
    "https://contoso.webhook.office.com/webhookb2/0123@4567/IncomingWebhook/89ab/cdef",
    "https://webhook.office.com/webhookb2/x",
    "https://outlook.office.com/webhook/0123@4567/IncomingWebhook/89ab/cdef",
    "https://outlook.office365.com/webhook/0123/IncomingWebhook/89ab",
];

describe("hostguard:chatFormat detected from the webhook's host", () => {
    for (const [url, format] of SHAPES) {
        it(`${new URL(url).hostname} is ${format}`, () => {
            assert.equal(formatOf({ webhookUrl: url }), format);
            assert.equal(formatOf({ webhookUrl: url, chatFormat: format }), format);
        });
    }
    it("every host row of the table has a shape above", () => {
        for (const row of FORMAT_HOSTS.filter((r) => r.format !== "pagerduty")) {
            assert.ok(SHAPES.some(([url, f]) => f === row.format && new URL(url).hostname.toLowerCase().replace(/\.$/, "").endsWith(row.host)), row.host);
        }
    });
    it("a self-hosted URL takes any format set", () => {
        for (const format of CHAT_FORMATS.filter((f) => f !== "pagerduty")) {
            assert.equal(formatOf({ webhookUrl: "https://chat.example.org/hooks/x", chatFormat: format }), format);
        }
    });
    it("an encrypted URL (render) leaves the format to the deploy unless it is set", () => {
        const opts = { requireSecrets: false, secretKeys: SECRET_KEYS };
        assert.equal(validateConfig(raw({ webhookUrl: { secure: "v1:abc" } }), opts).chatFormat, undefined);
        assert.equal(validateConfig(raw({ webhookUrl: { secure: "v1:abc" }, chatFormat: "teams" }), opts).chatFormat, "teams");
    });
    it("an unknown format is refused with the allowed values", () => {
        const e = refusal({ webhookUrl: SHAPES[0][0], chatFormat: "msteams" });
        assert.equal(e.message, `hostguard:chatFormat must be one of ${CHAT_FORMATS.join(", ")}, got "msteams"`);
    });
});

describe("every format is spoken on the host: no format warning", () => {
    it("no warning for any detected, set or implied format", () => {
        const warned = (extra: RawConfig): boolean => validateConfig(raw(extra), { secretKeys: SECRET_KEYS }).warnings
            .some((w) => w.includes("chatFormat"));
        for (const [url] of SHAPES) {
            assert.equal(warned({ webhookUrl: url }), false, url);
        }
        assert.equal(warned({ webhookUrl: "https://chat.example.org/hooks/x", chatFormat: "webhook" }), false);
        assert.equal(warned({ pagerdutyRoutingKey: ROUTING, alertSendResolved: true }), false);
    });
});

describe("refused before deploy, naming the key and never the URL", () => {
    const contradictions: Array<[string, ChatFormat, ChatFormat]> = [
        [SHAPES[5][0], "slack", "googlechat"], [SHAPES[6][0], "slack", "discord"], [SHAPES[0][0], "teams", "slack"],
        [SHAPES[3][0], "webhook", "teams"], [SHAPES[4][0], "mattermost", "teams"], [SHAPES[7][0], "googlechat", "discord"],
    ];
    for (const [url, set, known] of contradictions) {
        it(`chatFormat ${set} on a ${known} URL`, () => {
            const e = refusal({ webhookUrl: url, chatFormat: set });
            assert.equal(e.key, "chatFormat");
            assert.match(e.message, new RegExp(`^hostguard:chatFormat is ${set}, but hostguard:webhookUrl is a .* URL: set it to ${known}`));
            assert.ok(!e.message.includes(new URL(url).hostname), e.message);
        });
    }
    for (const url of RETIRED) {
        it(`a retired Teams connector: ${new URL(url).hostname}`, () => {
            for (const chatFormat of [undefined, "teams"]) {
                const e = refusal({ webhookUrl: url, chatFormat });
                assert.equal(e.key, "webhookUrl");
                assert.match(e.message, /Office 365 connector URL: Microsoft switched these off in May 2026; create a Workflows webhook/);
                assert.ok(!e.message.includes("office.com"), e.message);
            }
        });
    }
    it("outlook.office.com outside /webhook is no connector", () => {
        assert.equal(formatOf({ webhookUrl: "https://outlook.office.com/owa/hook" }), "slack");
    });
    it("Discord's /slack endpoint", () => {
        assert.equal(refusal({ webhookUrl: `${SHAPES[6][0]}/slack` }).key, "webhookUrl");
    });
});

describe("PagerDuty: a routing key instead of a URL", () => {
    it("the routing key alone is a destination: pagerduty, region us", () => {
        const c = validateConfig(raw({ pagerdutyRoutingKey: ROUTING, alertSendResolved: true }), { secretKeys: SECRET_KEYS });
        assert.deepEqual([c.chatFormat, c.pagerdutyRegion, c.hasPagerdutyRoutingKey, c.hasWebhookUrl], ["pagerduty", "us", true, false]);
        assert.equal(validateConfig(raw({ pagerdutyRoutingKey: ROUTING, pagerdutyRegion: "eu", chatFormat: "pagerduty", alertSendResolved: true }), { secretKeys: SECRET_KEYS }).pagerdutyRegion, "eu");
        const e = refusal({ pagerdutyRoutingKey: ROUTING });
        assert.equal(e.key, "alertSendResolved");
        assert.match(e.message, /^hostguard:alertSendResolved must be true with PagerDuty .*no incident hostguard triggers is ever resolved; set it to true$/);
    });
    it("is a secret: plain text refused, never echoed", () => {
        assert.ok(SECRET_KEYS.includes("pagerdutyRoutingKey"));
        const e = (() => {
            try {
                validateConfig(raw({ pagerdutyRoutingKey: ROUTING }), { secretKeys: ["sshPrivateKey"] });
            } catch (err) {
                return err as ConfigError;
            }
            assert.fail("accepted");
        })();
        assert.equal(e.key, "pagerdutyRoutingKey");
        assert.ok(!e.message.includes(ROUTING));
        const bad = refusal({ pagerdutyRoutingKey: "tooshort-SENTINEL" });
        assert.match(bad.message, /^hostguard:pagerdutyRoutingKey must be a PagerDuty Events API v2 routing key: 32 letters and digits \(the value is not shown/);
        assert.ok(!bad.message.includes("SENTINEL"));
    });
    it("refuses what contradicts it", () => {
        const cases: Array<[RawConfig, string, RegExp]> = [
            [{ pagerdutyRoutingKey: ROUTING, webhookUrl: SHAPES[0][0] }, "pagerdutyRoutingKey", /both set: a stack has one destination/],
            [{ pagerdutyRoutingKey: ROUTING, chatFormat: "slack" }, "chatFormat", /is slack, but hostguard:pagerdutyRoutingKey is set/],
            [{ webhookUrl: SHAPES[0][0], chatFormat: "pagerduty" }, "pagerdutyRoutingKey", /is required with hostguard:chatFormat pagerduty/],
            [{ webhookUrl: SHAPES[0][0], pagerdutyRegion: "eu" }, "pagerdutyRegion", /is only used with hostguard:pagerdutyRoutingKey/],
            [{ pagerdutyRoutingKey: ROUTING, pagerdutyRegion: "ap" }, "pagerdutyRegion", /must be one of us, eu/],
            [{ webhookUrl: "https://events.pagerduty.com/v2/enqueue" }, "webhookUrl", /is PagerDuty's Events API: set the integration's routing key/],
            [{ chatFormat: "teams" }, "webhookUrl", /is required/],
        ];
        for (const [extra, key, message] of cases) {
            const e = refusal(extra);
            assert.equal(e.key, key, e.message);
            assert.match(e.message, message);
        }
    });
});

describe("the webhook file's text (set-webhook's stdin)", () => {
    it("url= alone for slack; the format and the routing key beside the URL otherwise", () => {
        assert.equal(webhookFileText(" https://hooks.slack.com/services/T/B/X "), 'url=https://hooks.slack.com/services/T/B/X\n');
        assert.equal(webhookFileText("https://hooks.slack.com/services/T/B/X", "slack"), 'url=https://hooks.slack.com/services/T/B/X\n');
        assert.equal(webhookFileText("https://chat.example.org/hooks/x", "teams"), 'url=https://chat.example.org/hooks/x\nformat=teams\n');
        assert.equal(webhookFileText("https://events.eu.pagerduty.com/v2/enqueue", "pagerduty", ROUTING),
            `url=https://events.eu.pagerduty.com/v2/enqueue\nformat=pagerduty\nrouting_key=${ROUTING}\n`);
    });
});

describe("the host agent reads the webhook file the deploy writes (urltext.parse, Debian's python3)", () => {
    it("every format and the routing key come back as written, and as the chat format the notifier uses", () => {
        const chats = CHAT_FORMATS.filter((f) => f !== "pagerduty");
        const texts = [...chats.map((f) => webhookFileText("https://chat.example.org/hooks/x", f)),
            webhookFileText("https://events.pagerduty.com/v2/enqueue", "pagerduty", ROUTING)];
        const program = [
            "import json, sys",
            "from hostguard import urltext",
            "print(json.dumps([urltext.parse(text, 'test')._asdict() for text in json.load(sys.stdin)]))",
        ].join("\n");
        const host = JSON.parse(execFileSync("python3", ["-c", program], {
            input: JSON.stringify(texts), env: { ...process.env, PYTHONPATH: SCRIPTS }, encoding: "utf8",
        })) as Array<Record<string, string>>;
        assert.deepEqual(host, [
            ...chats.map((f) => ({ url: "https://chat.example.org/hooks/x", format: f === "slack" ? "" : f, routing_key: "", chat: f })),
            { url: "https://events.pagerduty.com/v2/enqueue", format: "pagerduty", routing_key: ROUTING, chat: "pagerduty" },
        ]);
    });
});

describe("the host agent detects as the validator does (urltext.detect, Debian's python3)", () => {
    it("agrees on every shape, contradiction and retired connector", () => {
        const cases: Array<[string, string]> = [
            ...SHAPES.map(([url]) => [url, ""] as [string, string]),
            ...SHAPES.map(([url]) => [url, "webhook"] as [string, string]),
            ...RETIRED.map((url) => [url, ""] as [string, string]),
            [`${SHAPES[6][0]}/slack`, ""],
        ];
        const program = [
            "import json, sys",
            "from hostguard import urltext",
            "out = []",
            "for url, fmt in json.load(sys.stdin):",
            "    try:",
            "        out.append(urltext.detect(url, fmt))",
            "    except urltext.FormatError as e:",
            "        out.append('refused ' + str(e).split(' ')[0])",
            "print(json.dumps(out))",
        ].join("\n");
        const host = JSON.parse(execFileSync("python3", ["-c", program], {
            input: JSON.stringify(cases), env: { ...process.env, PYTHONPATH: SCRIPTS }, encoding: "utf8",
        })) as string[];
        const preview = cases.map(([url, fmt]) => {
            try {
                return formatOf({ webhookUrl: url, ...(fmt ? { chatFormat: fmt } : {}) });
            } catch (e) {
                return `refused hostguard:${(e as ConfigError).key}`;
            }
        });
        assert.deepEqual(host, preview);
    });
});
