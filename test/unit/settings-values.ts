// What the settings contract's two files share (test/unit/settings-contract.test.ts,
// the host agent's parser; test/host-tools/fail2ban-times.test.ts, fail2ban's):
// the preview validator on one value, the values generated for a row and the
// fast-check settings, one seed per file said before its first property.
import assert from "node:assert/strict";
import fc from "fast-check";
import { ConfigError, validateConfig, type RawConfig } from "../../components/config";
import { jsPattern, type SettingRow } from "../../components/settings";

export const RUNS = Number(process.env.CONTRACT_RUNS ?? 3);
export const BATCH = 60;
// One seed for every property, said before the first one runs: a run killed
// from outside (a CI timeout) has no fast-check report, and a failure under
// load must be replayable. CONTRACT_SEED (with CONTRACT_PATH from a report and
// --test-name-pattern for its property) replays a run.
export const SEED = Number(process.env.CONTRACT_SEED ?? Math.floor(Math.random() * 0x100000000) - 0x80000000);
// Each case is a batch of 60 values, and every assertion names its key and
// value: shrinking would only run python3 again, a few times per step, for
// minutes on a loaded machine before any report. verbose: the failures seen.
export const ASSERT = {
    numRuns: RUNS, seed: SEED, endOnFailure: true, verbose: fc.VerbosityLevel.Verbose,
    ...(process.env.CONTRACT_PATH ? { path: process.env.CONTRACT_PATH } : {}),
};
// A hang guard on each python3 (about 0.1 s idle), not a speed check: a
// machine busy with a benchmark must not turn a slow answer into a failure.
export const CHILD_TIMEOUT_MS = 600_000;

function baseConfig(overrides: RawConfig): RawConfig {
    return { aws: "false", hosts: JSON.stringify([{ name: "h", host: "127.0.0.1", hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIContractTestFake00000000000000000000000000A" }]), ...overrides };
}

export type Preview = { ok: true; config: ReturnType<typeof validateConfig> } | { ok: false; key: string; message: string };

/** The preview validator on one value; a refusal must be a ConfigError naming the key. */
export function preview(key: string, raw: unknown): Preview {
    try {
        return { ok: true, config: validateConfig(baseConfig({ [key]: raw }), { requireSecrets: false }) };
    } catch (e) {
        assert.ok(e instanceof ConfigError, `${key}=${JSON.stringify(raw)}: not a ConfigError: ${String(e)}`);
        assert.ok(e.message.startsWith(`hostguard:${e.key} `), e.message);
        return { ok: false, key: e.key, message: e.message };
    }
}

const hostileChar = fc.constantFrom("a", "Z", "0", "9", "/", ".", "-", "_", ",", " ", "\t", "=", "#", ";", "%", "$", "\\", "'", '"', "é", "\u0000", "\u001b", "\r");
const anyText = fc.oneof(
    fc.string({ unit: hostileChar, maxLength: 12 }),
    fc.string({ maxLength: 12 }),
    fc.string({ unit: "binary", maxLength: 6 }),
);

/** Values for a row: matching its pattern (maybe out of range), near misses, and anything. */
export function valuesFor(row: SettingRow): fc.Arbitrary<unknown> {
    const matching = fc.stringMatching(jsPattern(row)).filter((s) => s.length <= 300);
    const common = [matching, matching, anyText];
    switch (row.type) {
        case "percent":
            return fc.oneof(...common, fc.integer({ min: -5, max: 105 }), fc.double({ min: -1, max: 101, noNaN: true }),
                fc.tuple(fc.integer({ min: 0, max: 101 }), fc.integer({ min: 0, max: 999 })).map(([a, b]) => `${a}.${b}`),
                fc.constantFrom("080", "80.", ".5", "1e2", "+80", " 80", "80 ", "100.01", "100.00", "0.0", "-0"));
        case "integer":
            return fc.oneof(...common, fc.integer({ min: -3, max: (row.max ?? 10) + 3 }),
                fc.integer({ min: (row.max ?? 10) - 3, max: (row.max ?? 10) + 3 }).map(String),
                fc.constantFrom("01", "1.0", "+1", " 1", "1e3", "0x10", "-1", "0"));
        case "duration":
            return fc.oneof(...common, fc.integer({ min: -2, max: 100 }),
                fc.array(fc.tuple(fc.integer({ min: 0, max: 90 }), fc.constantFrom("s", "m", "h", "d", "w", "mo", "y", "")), { minLength: 1, maxLength: 3 })
                    .map((parts) => parts.map(([n, u]) => `${n}${u}`).join("")),
                fc.constantFrom("0", "0m", "1h30m", "1h 30m", "010", "10 minutes", "-1", "1h30", "366d", "52w", "53w"));
        case "names":
            return fc.oneof(fc.array(fc.oneof(matching, anyText), { maxLength: 4 }), fc.array(matching, { maxLength: 4 }));
        default:
            return fc.oneof(...common, fc.constantFrom("", "/", "//", "/a/", "/a/../b", "/./a", "/a/.", "/.config/x", "a b", "/tmp/a b", "iptables.multiport"));
    }
}
