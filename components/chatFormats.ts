// The one table of the chat formats hostguard speaks: their names, which have
// a channel, their text limit, the hosts that tell a format from its URL and
// the retired Teams connector hosts. components/config.ts detects and checks
// `hostguard:chatFormat` with it; `npm run settings:gen` writes it into
// scripts/hostguard/format_table.py, which the host agent's request builders
// (formats.py) and answer classifiers (answers.py) read; a unit test fails when
// the two differ. Pure: no Pulumi runtime.

export const CHAT_FORMATS = ["slack", "mattermost", "rocketchat", "teams", "googlechat", "discord", "pagerduty", "webhook"] as const;
export type ChatFormat = (typeof CHAT_FORMATS)[number];

/** What the host must know of a format besides its two functions (formats.py). */
export interface FormatRow {
    readonly format: ChatFormat;
    /** The ban tool's channel override is sent (Slack-compatible services only). */
    readonly hasChannel: boolean;
    /** The longest text posted, in characters (Teams: its whole request body, in bytes). */
    readonly textLimit: number;
    /** Seconds to wait after a 429 that names no Retry-After (0: the queue's own backoff). */
    readonly backoff: number;
    /** A refused webhook is never probed again until it is set anew (Discord restricts an IP that keeps trying). */
    readonly neverProbe: boolean;
    /** The service, as the README and errors name it. */
    readonly title: string;
    /** Seconds between two posts of any run: under the service's documented rate for one webhook. */
    readonly pace: number;
}

export const FORMAT_ROWS: readonly FormatRow[] = [
    { format: "slack", hasChannel: true, textLimit: 40000, backoff: 0, neverProbe: false, title: "Slack", pace: 1.05 },
    { format: "mattermost", hasChannel: true, textLimit: 16383, backoff: 0, neverProbe: false, title: "Mattermost", pace: 1.05 },
    { format: "rocketchat", hasChannel: true, textLimit: 40000, backoff: 60, neverProbe: false, title: "Rocket.Chat", pace: 6.1 },
    { format: "teams", hasChannel: false, textLimit: 24000, backoff: 30, neverProbe: false, title: "Microsoft Teams (Workflows)", pace: 1.05 },
    { format: "googlechat", hasChannel: false, textLimit: 4000, backoff: 5, neverProbe: false, title: "Google Chat", pace: 1.05 },
    { format: "discord", hasChannel: false, textLimit: 2000, backoff: 5, neverProbe: true, title: "Discord", pace: 2.05 },
    { format: "pagerduty", hasChannel: false, textLimit: 1024, backoff: 30, neverProbe: false, title: "PagerDuty Events API v2", pace: 0.55 },
    { format: "webhook", hasChannel: false, textLimit: 40000, backoff: 0, neverProbe: false, title: "generic webhook (Alertmanager's JSON)", pace: 1.05 },
];

/** A host that names its format: HOST itself, or (suffix) any name ending in `.HOST`. */
export interface HostRow {
    readonly host: string;
    readonly suffix: boolean;
    readonly format: ChatFormat;
}

/** Only hosts no other format lives on: self-hosted services (Mattermost, Rocket.Chat, generic) have none. */
export const FORMAT_HOSTS: readonly HostRow[] = [
    { host: "hooks.slack.com", suffix: false, format: "slack" },
    { host: "hooks.slack-gov.com", suffix: false, format: "slack" },
    { host: "chat.googleapis.com", suffix: false, format: "googlechat" },
    { host: "discord.com", suffix: true, format: "discord" },
    { host: "discordapp.com", suffix: true, format: "discord" },
    { host: "api.powerplatform.com", suffix: true, format: "teams" },
    { host: "logic.azure.com", suffix: true, format: "teams" },
    { host: "events.pagerduty.com", suffix: false, format: "pagerduty" },
    { host: "events.eu.pagerduty.com", suffix: false, format: "pagerduty" },
];

/** A PagerDuty Events API v2 routing (integration) key. */
export const ROUTING_KEY_PATTERN = "^[A-Za-z0-9]{32}$";

/** PagerDuty's Events API v2 endpoint per `hostguard:pagerdutyRegion`. */
export const PAGERDUTY_REGIONS = { us: "https://events.pagerduty.com/v2/enqueue", eu: "https://events.eu.pagerduty.com/v2/enqueue" } as const;
export type PagerdutyRegion = keyof typeof PAGERDUTY_REGIONS;

/** The Office 365 connectors (MessageCard), switched off in May 2026: refused, pointing to Workflows. */
export interface RetiredRow {
    readonly host: string;
    readonly suffix: boolean;
    /** Only URLs whose path starts with this ("" any). */
    readonly path: string;
}

export const RETIRED_HOSTS: readonly RetiredRow[] = [
    { host: "webhook.office.com", suffix: true, path: "" },
    { host: "outlook.office.com", suffix: false, path: "/webhook" },
    { host: "outlook.office365.com", suffix: false, path: "/webhook" },
];

export const RETIRED_HINT = "a Microsoft Teams Office 365 connector URL: Microsoft switched these off in May 2026; "
    + "create a Workflows webhook (Teams: the channel's ... > Workflows > \"Send webhook alerts to a channel\") and set its URL";

/** Whether HOST (lower case, no trailing dot) is ROW's host or, for a suffix row, under it. */
export function hostMatches(row: { host: string; suffix: boolean }, host: string): boolean {
    return host === row.host || (row.suffix && host.endsWith(`.${row.host}`));
}

/** A URL's host name, lower case, without a trailing dot; "" when it cannot be parsed. */
export function urlHost(url: string): string {
    try {
        return new URL(url.trim()).hostname.toLowerCase().replace(/\.$/, "").replace(/^\[|\]$/g, "");
    } catch {
        return "";
    }
}

function urlPath(url: string): string {
    try {
        return new URL(url.trim()).pathname;
    } catch {
        return "";
    }
}

/** The format URL's host names, or undefined when the host is not a known one. */
export function formatOfHost(url: string): ChatFormat | undefined {
    const host = urlHost(url);
    return FORMAT_HOSTS.find((r) => hostMatches(r, host))?.format;
}

/** Whether URL is a retired Teams connector. */
export function isRetired(url: string): boolean {
    const host = urlHost(url);
    const path = urlPath(url).toLowerCase();
    return RETIRED_HOSTS.some((r) => hostMatches(r, host) && path.startsWith(r.path));
}

export function formatRow(format: ChatFormat): FormatRow {
    return FORMAT_ROWS.find((r) => r.format === format)!;
}

/** A refusal of the destination, naming its key (without the namespace); never the URL or the routing key. */
export class ChatFormatError extends Error {
    constructor(readonly key: string, readonly reason: string) {
        super(reason);
        this.name = "ChatFormatError";
    }
}

/** What the stack config says of the destination; `url` only when it can be read (not at render, where it is encrypted). */
export interface DestinationConfig {
    url?: string;
    hasWebhookUrl: boolean;
    hasRoutingKey: boolean;
    configured?: ChatFormat;
    region?: PagerdutyRegion;
}

/** The format a URL's host and path make sure of, after refusing a retired connector and a URL meant otherwise. */
function formatOfUrl(url: string, configured: ChatFormat | undefined): ChatFormat | undefined {
    if (isRetired(url)) {
        throw new ChatFormatError("webhookUrl", `is ${RETIRED_HINT} (the value is not shown because it is a secret)`);
    }
    const known = formatOfHost(url);
    if (known === "pagerduty") {
        throw new ChatFormatError("webhookUrl", "is PagerDuty's Events API: set the integration's routing key with "
            + "`pulumi config set --secret hostguard:pagerdutyRoutingKey ...` (and hostguard:pagerdutyRegion eu for an EU account) instead, and remove hostguard:webhookUrl");
    }
    if (known === "discord" && /\/slack\/?$/.test(urlPath(url))) {
        throw new ChatFormatError("webhookUrl", "is Discord's Slack-compatible endpoint (ending in /slack): remove the trailing /slack, hostguard speaks Discord's own format");
    }
    if (configured !== undefined && known !== undefined && configured !== known) {
        throw new ChatFormatError("chatFormat", `is ${configured}, but hostguard:webhookUrl is a ${formatRow(known).title} URL: set it to ${known}, or remove it (it is detected)`);
    }
    return configured ?? known;
}

/**
 * The format of the stack's one destination: hostguard:chatFormat when set, else what a known
 * host of the webhook URL names, else slack (today's behaviour). Undefined when only the URL,
 * unreadable here, could tell. Throws ChatFormatError naming the key.
 */
export function resolveChatFormat(c: DestinationConfig): ChatFormat | undefined {
    if (c.hasRoutingKey && c.hasWebhookUrl) {
        throw new ChatFormatError("pagerdutyRoutingKey", "and hostguard:webhookUrl are both set: a stack has one destination; remove one");
    }
    if (c.region !== undefined && !c.hasRoutingKey) {
        throw new ChatFormatError("pagerdutyRegion", "is only used with hostguard:pagerdutyRoutingKey; remove it");
    }
    if (c.hasRoutingKey) {
        if (c.configured !== undefined && c.configured !== "pagerduty") {
            throw new ChatFormatError("chatFormat", `is ${c.configured}, but hostguard:pagerdutyRoutingKey is set (PagerDuty): set it to pagerduty, or remove it`);
        }
        return "pagerduty";
    }
    if (c.configured === "pagerduty") {
        throw new ChatFormatError("pagerdutyRoutingKey", "is required with hostguard:chatFormat pagerduty (PagerDuty takes a routing key, not a URL): "
            + "`pulumi config set --secret hostguard:pagerdutyRoutingKey ...` with the key of an Events API v2 integration, and remove hostguard:webhookUrl");
    }
    if (c.url === undefined) {
        return c.hasWebhookUrl ? c.configured : c.configured ?? "slack";
    }
    return formatOfUrl(c.url, c.configured) ?? "slack";
}

// ---- the host agent's copy ---------------------------------------------------

export const FORMATS_BLOCK_BEGIN = "# BEGIN format table (generated from components/chatFormats.ts by `npm run settings:gen`; do not edit)";
export const FORMATS_BLOCK_END = "# END format table";

function py(text: string): string {
    return JSON.stringify(text);
}

function pyBool(b: boolean): string {
    return b ? "True" : "False";
}

/** FACTS / HOSTS / RETIRED / PAGERDUTY_URLS as Python, for scripts/hostguard/format_table.py. */
export function renderPythonFormatsBlock(): string {
    return [
        FORMATS_BLOCK_BEGIN,
        "# fmt: off",
        "# format: (has_channel, text_limit, backoff seconds after a 429 without Retry-After, never_probe, title,",
        "#          pace: seconds between two posts)",
        "FACTS: dict[str, tuple[bool, int, int, bool, str, float]] = {",
        ...FORMAT_ROWS.map((r) => `    ${py(r.format)}: (${pyBool(r.hasChannel)}, ${r.textLimit}, ${r.backoff}, ${pyBool(r.neverProbe)}, ${py(r.title)}, ${r.pace}),`),
        "}",
        "# (host, any name under it too, format): the hosts that name their format",
        "HOSTS: tuple[tuple[str, bool, str], ...] = (",
        ...FORMAT_HOSTS.map((r) => `    (${py(r.host)}, ${pyBool(r.suffix)}, ${py(r.format)}),`),
        ")",
        "# (host, any name under it too, path prefix): retired Teams connectors",
        "RETIRED: tuple[tuple[str, bool, str], ...] = (",
        ...RETIRED_HOSTS.map((r) => `    (${py(r.host)}, ${pyBool(r.suffix)}, ${py(r.path)}),`),
        ")",
        "PAGERDUTY_URLS: dict[str, str] = {",
        ...Object.entries(PAGERDUTY_REGIONS).map(([k, v]) => `    ${py(k)}: ${py(v)},`),
        "}",
        `RETIRED_HINT: str = ${py(RETIRED_HINT)}  # noqa: E501`,
        "# PagerDuty's routing key (the webhook file's routing_key=)",
        `ROUTING_KEY_RE: str = ${py(ROUTING_KEY_PATTERN)}`,
        "# fmt: on",
        FORMATS_BLOCK_END,
    ].join("\n");
}
