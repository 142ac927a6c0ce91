// Address blocks as numbers, for the checks of address lists that a string
// compare cannot do: how much of the public internet a list opens together
// (the union, not each entry), and which entries repeat or overlap. Pure and
// dependency-free: the validator (config.ts) and the policy pack use it.
import * as net from "node:net";

export interface Block {
    family: 4 | 6;
    /** First and last address, inclusive. */
    start: bigint;
    end: bigint;
}

/**
 * The rule: a list may open at most this much of the public address space in
 * total, counted over the union of its entries with private, loopback,
 * link-local and shared ranges left out: a /16 of IPv4 (65 536 addresses) and
 * a /32 of IPv6 (an ISP's allocation).
 */
export const PUBLIC_LIMIT_PREFIX = { 4: 16, 6: 32 } as const;

function bitsOf(family: 4 | 6): number {
    return family === 4 ? 32 : 128;
}

function addressValue(text: string): { family: 4 | 6; value: bigint } | null {
    const family = net.isIP(text);
    if (family === 4) {
        return { family, value: text.split(".").reduce((v, o) => (v << 8n) | BigInt(Number(o)), 0n) };
    }
    if (family === 6) {
        // node:net's SocketAddress has no numeric form; expand "::" and any dotted tail by hand.
        let t = text.toLowerCase();
        const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(t);
        if (dotted) {
            const v4 = addressValue(dotted[1])!.value;
            t = `${t.slice(0, -dotted[1].length)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
        }
        const [head, tail] = t.includes("::") ? t.split("::") : [t, undefined];
        const h = head === "" ? [] : head.split(":");
        const tl = tail === undefined || tail === "" ? [] : tail.split(":");
        const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - tl.length).fill("0"), ...tl];
        return { family, value: groups.reduce((v, g) => (v << 16n) | BigInt(parseInt(g, 16)), 0n) };
    }
    return null;
}

/** An address (a block of one) or a CIDR block; null when it is neither. Host bits are ignored. */
export function parseBlock(text: string): Block | null {
    const m = /^([^/]+)(?:\/(\d{1,3}))?$/.exec(text);
    const a = m ? addressValue(m[1]) : null;
    if (!m || !a) {
        return null;
    }
    const total = bitsOf(a.family);
    const prefix = m[2] === undefined ? total : Number(m[2]);
    if (prefix > total) {
        return null;
    }
    const size = 1n << BigInt(total - prefix);
    const start = (a.value / size) * size;
    return { family: a.family, start, end: start + size - 1n };
}

/** True when TEXT is a CIDR block (an address and a prefix length the family allows). The one CIDR grammar. */
export function isCidr(text: string): boolean {
    return text.includes("/") && parseBlock(text) !== null;
}

/** True when TEXT is a CIDR of the whole address space of its family (`0.0.0.0/0`, `::/0`, and any spelling of them). */
export function isWholeInternet(text: string): boolean {
    const b = isCidr(text) ? parseBlock(text) : null;
    return b !== null && b.start === 0n && b.end === (1n << BigInt(bitsOf(b.family))) - 1n;
}

/** The block as CIDR text in its shortest form (IPv6 with the longest run of zero groups as "::"). */
export function blockText(b: Block): string {
    const prefix = bitsOf(b.family) - (b.end - b.start + 1n).toString(2).length + 1;
    if (b.family === 4) {
        return `${[24n, 16n, 8n, 0n].map((s) => (b.start >> s) & 0xffn).join(".")}/${prefix}`;
    }
    const groups = Array.from({ length: 8 }, (_, i) => Number((b.start >> BigInt(112 - 16 * i)) & 0xffffn));
    let best = { at: -1, len: 1 };
    for (let i = 0; i < 8; i++) {
        let j = i;
        while (j < 8 && groups[j] === 0) j++;
        if (j - i > best.len) best = { at: i, len: j - i };
    }
    const hex = groups.map((g) => g.toString(16));
    const text = best.at < 0 ? hex.join(":")
        : `${hex.slice(0, best.at).join(":")}::${hex.slice(best.at + best.len).join(":")}`;
    return `${text}/${prefix}`;
}

/**
 * The network TEXT means when it has host bits set (`10.0.0.1/8` is
 * `10.0.0.0/8`: EC2 stores it masked, so every later up would see a
 * difference), or null when it has none or is not a CIDR.
 */
export function hostBitsFix(text: string): string | null {
    const m = /^([^/]+)\/(\d{1,3})$/.exec(text);
    const a = m ? addressValue(m[1]) : null;
    const b = m ? parseBlock(text) : null;
    return a && b && a.value !== b.start ? blockText(b) : null;
}

/** The ranges privateCidrs may hold without the opt-in: RFC 1918, RFC 6598 (shared, carrier-grade NAT) and IPv6 ULA (RFC 4193). */
export const PRIVATE_RANGES = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7"] as const;

/** True when the whole block TEXT lies inside one of PRIVATE_RANGES. */
export function isPrivateBlock(text: string): boolean {
    const b = parseBlock(text);
    return b !== null && PRIVATE_RANGES.map((r) => parseBlock(r)!).some((r) => r.family === b.family && r.start <= b.start && b.end <= r.end);
}

const NOT_PUBLIC = [
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.168.0.0/16",
    "::/128", "::1/128", "fc00::/7", "fe80::/10",
].map((c) => parseBlock(c)!);

/** Number of addresses of FAMILY in the union of BLOCKS that are public. */
export function publicSize(blocks: readonly Block[], family: 4 | 6): bigint {
    const merged: Array<[bigint, bigint]> = [];
    for (const b of blocks.filter((x) => x.family === family).sort((x, y) => (x.start < y.start ? -1 : x.start > y.start ? 1 : 0))) {
        const last = merged[merged.length - 1];
        if (last && b.start <= last[1] + 1n) {
            last[1] = b.end > last[1] ? b.end : last[1];
        } else {
            merged.push([b.start, b.end]);
        }
    }
    let total = 0n;
    for (const [s, e] of merged) {
        total += e - s + 1n;
        for (const p of NOT_PUBLIC.filter((x) => x.family === family)) {
            const lo = p.start > s ? p.start : s;
            const hi = p.end < e ? p.end : e;
            if (lo <= hi) {
                total -= hi - lo + 1n;
            }
        }
    }
    return total;
}

/** Why the union of TEXTS opens too much of the public internet, or null. Unparsable entries are skipped. */
export function widePublicReason(texts: readonly string[]): string | null {
    const blocks = texts.map(parseBlock).filter((b): b is Block => b !== null);
    for (const family of [4, 6] as const) {
        const size = publicSize(blocks, family);
        const limit = 1n << BigInt(bitsOf(family) - PUBLIC_LIMIT_PREFIX[family]);
        if (size > limit) {
            const share = family === 4 ? ` (${(Number(size) / 2 ** 32 * 100).toFixed(size * 1000n > 1n << 32n ? 1 : 4)}% of IPv4)` : "";
            return `together cover ${size} public IPv${family} addresses${share}, more than a /${PUBLIC_LIMIT_PREFIX[family]} `
                + `(${limit}); list only the networks you mean (private ranges do not count)`;
        }
    }
    return null;
}

/** Pairs (i, j), i < j, where entry j repeats or lies inside entry i, or i inside j, or they overlap. */
export function overlaps(texts: readonly string[]): Array<{ i: number; j: number; how: "repeats" | "inside" | "contains" | "overlaps" }> {
    const blocks = texts.map(parseBlock);
    const out: Array<{ i: number; j: number; how: "repeats" | "inside" | "contains" | "overlaps" }> = [];
    blocks.forEach((a, i) => blocks.forEach((b, j) => {
        if (j <= i || !a || !b || a.family !== b.family || a.end < b.start || b.end < a.start) {
            return;
        }
        const how = a.start === b.start && a.end === b.end ? "repeats"
            : b.start >= a.start && b.end <= a.end ? "inside" : a.start >= b.start && a.end <= b.end ? "contains" : "overlaps";
        out.push({ i, j, how });
    }));
    return out;
}

/** One comparable form of a host address: an IP as its number (so 2001:db8::1 equals 2001:DB8:0::1), a name lower-cased. */
export function addressKey(host: string): string {
    const a = addressValue(host);
    return a ? `ip${a.family}:${a.value}` : host.toLowerCase().replace(/\.$/, "");
}

/** An inbound rule as reachability sees it: the protocol, its ports (absent: all), its sources (CIDR text; others are skipped). */
export interface Inbound {
    /** tcp, udp, icmp, icmpv6, -1 (all traffic), a protocol number, or a name EC2 accepts ("6", "all", ...). */
    protocol: string;
    fromPort?: number;
    toPort?: number;
    sources: readonly string[];
}

/** A protocol and port range (absent ports: the whole protocol; protocol "-1": all traffic). */
export interface PortRange {
    protocol: string;
    fromPort?: number;
    toPort?: number;
}

const PROTOCOL_NAMES: Record<string, string> = { "6": "tcp", "17": "udp", "1": "icmp", "58": "icmpv6", all: "-1" };

/** The protocol in EC2's lower-case name (tcp, udp, icmp, icmpv6, -1, or its number). */
export function protocolName(p: string): string {
    const s = String(p).toLowerCase();
    return PROTOCOL_NAMES[s] ?? s;
}

const wide = (rules: readonly Inbound[]) => widePublicReason(rules.flatMap((r) => [...r.sources])) !== null;

/** A range in words: `tcp 22`, `tcp 1000-2000`, `all traffic`, `icmp`, `protocol 50`. */
export function rangeText(r: PortRange): string {
    if (r.protocol === "-1") {
        return "all traffic";
    }
    if (r.fromPort === undefined) {
        return ["icmp", "icmpv6"].includes(r.protocol) ? r.protocol : `protocol ${r.protocol}`;
    }
    return `${r.protocol} ${r.fromPort === r.toPort ? r.fromPort : `${r.fromPort}-${r.toPort}`}`;
}

/** True when RULE lets in part of RANGE (all traffic lets in everything). */
export function admits(rule: Inbound, range: PortRange): boolean {
    const p = protocolName(rule.protocol);
    if (p === "-1") {
        return true;
    }
    if (p !== range.protocol) {
        return false;
    }
    return range.fromPort === undefined || rule.fromPort === undefined
        || ((rule.fromPort ?? 0) <= (range.toPort ?? 65535) && (range.fromPort ?? 0) <= (rule.toPort ?? 65535));
}

/**
 * What RULES let in from the whole internet together: THE definition of
 * "open to the world", the union rule of widePublicReason applied per
 * protocol and port. A range is open when the sources of all the rules that
 * admit it cover more than a /16 of public IPv4 or a /32 of public IPv6
 * together, so 0.0.0.0/1 + 128.0.0.0/1 on two groups is the world, as is
 * ::/1 + 8000::/1. All traffic ("-1") admits every protocol and port; when
 * all traffic is open it is one range, and the others name only what each
 * protocol opens by itself. Sources that are not CIDRs (groups, prefix
 * lists) are not counted.
 */
export function worldOpenings(rules: readonly Inbound[]): PortRange[] {
    const norm = rules.map((r) => ({ ...r, protocol: protocolName(r.protocol) }));
    const all = norm.filter((r) => r.protocol === "-1");
    const out: PortRange[] = wide(all) ? [{ protocol: "-1" }] : [];
    const base = out.length > 0 ? [] : all;
    for (const protocol of [...new Set(norm.map((r) => r.protocol))].filter((p) => p !== "-1").sort()) {
        const own = norm.filter((r) => r.protocol === protocol);
        if (!["tcp", "udp"].includes(protocol)) {
            if (wide([...own, ...base])) {
                out.push({ protocol });
            }
            continue;
        }
        // Between two consecutive rule edges the rules that admit a port are the same: one test per piece.
        const cover = [...own, ...base].map((r) => ({ r, from: r.protocol === "-1" ? 0 : r.fromPort ?? 0, to: r.protocol === "-1" ? 65535 : r.toPort ?? 65535 }));
        const edges = [...new Set(cover.flatMap((c) => [c.from, c.to + 1]))].sort((a, b) => a - b);
        for (let i = 0; i + 1 < edges.length; i++) {
            const [from, to] = [edges[i], edges[i + 1] - 1];
            if (!wide(cover.filter((c) => c.from <= from && to <= c.to).map((c) => c.r))) {
                continue;
            }
            const last = out[out.length - 1];
            if (last?.protocol === protocol && last.toPort === from - 1) {
                last.toPort = to;
            } else {
                out.push({ protocol, fromPort: from, toPort: to });
            }
        }
    }
    return out;
}

/** True when RANGE is exactly TCP 443, the one port the SPEC opens to the world. */
export function isHttpsOnly(r: PortRange): boolean {
    return r.protocol === "tcp" && r.fromPort === 443 && r.toPort === 443;
}
