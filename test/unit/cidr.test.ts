// components/cidr.ts and components/hostKey.ts are hand-written parsers; these
// properties hold them to independent oracles: the union's public size against
// counting addresses one by one, an IPv6 address's number against the WHATWG
// URL parser's canonical form, and the host-key parser on arbitrary text
// (a reason or null, never a crash, and never null for a changed key).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { addressKey, isCidr, isPrivateBlock, isWholeInternet, overlaps, parseBlock, PRIVATE_RANGES, publicSize, widePublicReason } from "../../components/cidr";
import { hostKeyRefusal } from "../../components/hostKey";

const RUNS = Number(process.env.CONTRACT_RUNS ?? 3) * 30;

/** Private and other non-public IPv4 ranges, as the rule states them, checked by hand per address. */
function isPublicV4(a: number): boolean {
    const [o1, o2] = [a >>> 24, (a >>> 16) & 0xff];
    return !(o1 === 0 || o1 === 10 || o1 === 127 || (o1 === 100 && o2 >= 64 && o2 < 128) || (o1 === 169 && o2 === 254)
        || (o1 === 172 && o2 >= 16 && o2 < 32) || (o1 === 192 && o2 === 168));
}

const v4Text = (n: number) => [n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff].join(".");

describe("cidr.ts against counting", () => {
    it("publicSize of a few small IPv4 blocks equals the public addresses counted one by one", () => {
        // Blocks near the private boundaries, so both sides of each edge are exercised.
        const anchor = fc.constantFrom(0x0a000000, 0x09ffff00, 0xac0f0000, 0xac100000, 0xac1ff000, 0xc0a80000, 0x64400000, 0x7f000000, 0xa9fe0000, 0xcb007100, 0x01000000);
        const block = fc.tuple(anchor, fc.integer({ min: -4096, max: 4096 }), fc.integer({ min: 22, max: 32 }))
            .map(([a, d, p]) => `${v4Text((a + d * 64) >>> 0)}/${p}`);
        fc.assert(fc.property(fc.array(block, { minLength: 1, maxLength: 5 }), (texts) => {
            const blocks = texts.map((t) => parseBlock(t)!);
            const seen = new Set<number>();
            for (const b of blocks) {
                for (let x = Number(b.start); x <= Number(b.end); x++) {
                    seen.add(x);
                }
            }
            const want = [...seen].filter(isPublicV4).length;
            assert.equal(publicSize(blocks, 4), BigInt(want), texts.join(" "));
        }), { numRuns: RUNS });
    });
    it("overlaps names exactly the pairs that share an address", () => {
        const block = fc.tuple(fc.integer({ min: 0, max: 63 }), fc.integer({ min: 26, max: 32 })).map(([n, p]) => `203.0.113.${n * 4}/${p}`);
        fc.assert(fc.property(fc.array(block, { minLength: 2, maxLength: 5 }), (texts) => {
            const blocks = texts.map((t) => parseBlock(t)!);
            const got = new Set(overlaps(texts).map(({ i, j }) => `${i},${j}`));
            blocks.forEach((a, i) => blocks.forEach((b, j) => {
                if (j > i) {
                    assert.equal(got.has(`${i},${j}`), a.start <= b.end && b.start <= a.end, `${texts[i]} ${texts[j]}`);
                }
            }));
        }), { numRuns: RUNS });
    });
    it("an IPv6 address's number is the same for every spelling the URL parser calls equal", () => {
        fc.assert(fc.property(fc.ipV6(), (a) => {
            const canonical = new URL(`http://[${a}]/`).hostname.slice(1, -1);
            assert.equal(addressKey(a), addressKey(canonical), `${a} vs ${canonical}`);
            assert.equal(addressKey(a.toUpperCase()), addressKey(canonical));
        }), { numRuns: RUNS });
    });
    it("the rule's edges: a /16 of public IPv4 passes, one address more does not; /32 of IPv6 likewise", () => {
        assert.equal(widePublicReason(["203.0.0.0/16"]), null);
        assert.match(widePublicReason(["203.0.0.0/16", "198.51.100.7"])!, /65537 public IPv4 addresses/);
        assert.equal(widePublicReason(["2001:db8::/32", "fd00::/8"]), null);
        assert.match(widePublicReason(["2001:db8::/32", "2001:db9::/128"])!, /public IPv6 addresses/);
        assert.equal(widePublicReason(["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"]), null);
    });
});

describe("hostKey.ts on arbitrary text", () => {
    const KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeDevHostKeyReplaceMe0000000000000000000A";
    it("never throws; any one-character change to a good key is refused or is still a whole key", () => {
        assert.equal(hostKeyRefusal(KEY), null);
        fc.assert(fc.property(fc.string({ maxLength: 120 }), (s) => {
            const r = hostKeyRefusal(s);
            assert.ok(r === null || typeof r === "string");
        }), { numRuns: RUNS });
        fc.assert(fc.property(fc.integer({ min: 12, max: KEY.length - 1 }), fc.constantFrom(..."AZaz09+/= .".split("")), (i, c) => {
            fc.pre(c !== KEY[i]); // the same character again is no change
            const changed = KEY.slice(0, i) + c + KEY.slice(i + 1);
            const r = hostKeyRefusal(changed);
            if (r === null) {
                // Accepted only if it is still a whole ed25519 blob of the right shape: the 19 header bytes
                // (type and lengths) unchanged, so the change fell inside the 32 key bytes (base64 character
                // 25 holds both the last header bits and the first key bits).
                const blob = (k: string) => Buffer.from(k.split(" ")[1], "base64");
                assert.ok(changed.length === KEY.length && blob(changed).subarray(0, 19).equals(blob(KEY).subarray(0, 19)), changed);
            }
        }), { numRuns: RUNS });
    });
});

describe("one CIDR grammar, the private ranges at both edges (issue 33)", () => {
    it("every private range holds its first and last address and not the one just outside either edge", () => {
        const edges: Record<string, [string, string, string, string]> = {
            "10.0.0.0/8": ["9.255.255.255", "10.0.0.0", "10.255.255.255", "11.0.0.0"],
            "172.16.0.0/12": ["172.15.255.255", "172.16.0.0", "172.31.255.255", "172.32.0.0"],
            "192.168.0.0/16": ["192.167.255.255", "192.168.0.0", "192.168.255.255", "192.169.0.0"],
            "100.64.0.0/10": ["100.63.255.255", "100.64.0.0", "100.127.255.255", "100.128.0.0"],
            "fc00::/7": ["fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fc00::", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fe00::"],
        };
        assert.deepEqual(Object.keys(edges).sort(), [...PRIVATE_RANGES].sort(), "every range is probed");
        for (const [range, [before, first, last, after]] of Object.entries(edges)) {
            const bits = range.includes(":") ? 128 : 32;
            assert.equal(isPrivateBlock(`${before}/${bits}`), false, `${before} is outside ${range}`);
            assert.equal(isPrivateBlock(`${first}/${bits}`), true, `${first} is inside ${range}`);
            assert.equal(isPrivateBlock(`${last}/${bits}`), true, `${last} is inside ${range}`);
            assert.equal(isPrivateBlock(`${after}/${bits}`), false, `${after} is outside ${range}`);
            assert.equal(isPrivateBlock(range), true);
        }
        // 100.0.0.0/8 is not 100.64.0.0/10: a /9 of it is public.
        assert.equal(isPrivateBlock("100.0.0.0/10"), false);
    });
    it("isCidr accepts an address and a prefix the family allows, nothing else; isWholeInternet any spelling of /0", () => {
        for (const ok of ["10.0.0.0/8", "0.0.0.0/0", "255.255.255.255/32", "2001:db8::/32", "::/0", "::ffff:10.0.0.0/104", "fe80::/128"]) {
            assert.equal(isCidr(ok), true, ok);
        }
        for (const bad of ["10.0.0.0", "10.0.0.0/33", "2001:db8::/129", "10.0.0/8", "10.0.0.256/32", "abc/8", "10.0.0.0/8 ", "/8", "10.0.0.0/-1", "::/"]) {
            assert.equal(isCidr(bad), false, bad);
        }
        assert.deepEqual(["0.0.0.0/0", "::/0", "0:0::/0", "10.0.0.0/1"].map(isWholeInternet), [true, true, true, false]);
    });
});
