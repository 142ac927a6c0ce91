// The settings contract, property-based (fast-check): values generated for
// every key, valid and invalid, go through the preview validator
// (validateConfig) and through the real consumers on the host: the host
// agent's parser (scripts/hostguard/settings.py, which the installer and the
// monitors use, on a rendered hostguard.conf and on the raw text) for the keys the host reads, fail2ban's own parsers for
// the keys rendered into the jail. Properties:
//   - what preview accepts, the host accepts, with the same meaning (the same
//     text, the same list, the same seconds, the same threshold comparisons);
//   - what the host refuses, preview refuses, naming the key;
//   - the host's parser and the validator agree on every raw text.
// The table of disagreements is kept as fixed cases.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import fc from "fast-check";
import { ConfigError, DEFAULT_SETTINGS, validateConfig, type RawConfig } from "../../components/config";
import { renderJail, renderSettingsFile } from "../../components/hostFiles";
import {
    durationSeconds, HOST_SETTINGS, hostText, jsPattern, semanticRefusal, SETTINGS, trimName, type SettingKey, type SettingRow,
} from "../../components/settings";

const AGENT = path.resolve(__dirname, "../../scripts");
const RUNS = Number(process.env.CONTRACT_RUNS ?? 3);
const BATCH = 60;
// One seed for every property, said before the first one runs: a run killed
// from outside (a CI timeout) has no fast-check report, and a failure under
// load must be replayable. CONTRACT_SEED (with CONTRACT_PATH from a report and
// --test-name-pattern for its property) replays a run.
const SEED = Number(process.env.CONTRACT_SEED ?? Math.floor(Math.random() * 0x100000000) - 0x80000000);
// Each case is a batch of 60 values, and every assertion names its key and
// value: shrinking would only run python3 again, a few times per step, for
// minutes on a loaded machine before any report. verbose: the failures seen.
const ASSERT = {
    numRuns: RUNS, seed: SEED, endOnFailure: true, verbose: fc.VerbosityLevel.Verbose,
    ...(process.env.CONTRACT_PATH ? { path: process.env.CONTRACT_PATH } : {}),
};
// A hang guard on each python3 (about 0.1 s idle), not a speed check: a
// machine busy with a benchmark must not turn a slow answer into a failure.
const CHILD_TIMEOUT_MS = 600_000;

let work = "";
before(() => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), "hg-contract-"));
    process.stdout.write(`settings contract: fast-check seed ${SEED} (CONTRACT_SEED=${SEED} replays it)\n`);
});
after(() => {
    fs.rmSync(work, { recursive: true, force: true });
});

function baseConfig(overrides: RawConfig): RawConfig {
    return { aws: "false", hosts: JSON.stringify([{ name: "h", host: "127.0.0.1", hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIContractTestFake00000000000000000000000000A" }]), ...overrides };
}

type Preview = { ok: true; config: ReturnType<typeof validateConfig> } | { ok: false; key: string; message: string };

/** The preview validator on one value; a refusal must be a ConfigError naming the key. */
function preview(key: string, raw: unknown): Preview {
    try {
        return { ok: true, config: validateConfig(baseConfig({ [key]: raw }), { requireSecrets: false }) };
    } catch (e) {
        assert.ok(e instanceof ConfigError, `${key}=${JSON.stringify(raw)}: not a ConfigError: ${String(e)}`);
        assert.ok(e.message.startsWith(`hostguard:${e.key} `), e.message);
        return { ok: false, key: e.key, message: e.message };
    }
}

interface HostCase {
    /** Settings file content. */
    file: string;
    /** The key whose value to print. */
    variable: string;
    /** Decimals to compare with the monitors' decimal_gt (hostguard/alert_state.py) against the variable. */
    metrics?: string[];
}

/** The host monitors' comparison (hostguard/alert_state.py decimal_gt) on each [value, threshold] pair, in one python3. */
function decimalGreater(pairs: Array<[string, string]>): boolean[] {
    if (pairs.length === 0) {
        return [];
    }
    const code = [
        "import json, sys",
        "sys.path.insert(0, sys.argv[1])",
        "from hostguard.alert_state import decimal_gt",
        "print(json.dumps([decimal_gt(v, t) for v, t in json.load(sys.stdin)]))",
    ].join("\n");
    const out = execFileSync("python3", ["-I", "-c", code, AGENT], { input: JSON.stringify(pairs), timeout: CHILD_TIMEOUT_MS });
    return JSON.parse(out.toString()) as boolean[];
}

/** Runs the host parser on every case in one python3; per case: null (refused) or the value and comparisons. */
function host(cases: HostCase[]): Array<{ value: string; greater: boolean[] } | null> {
    const dir = fs.mkdtempSync(path.join(work, "batch-"));
    const list = cases.map((c, i) => {
        const file = path.join(dir, `${i}.conf`);
        fs.writeFileSync(file, c.file);
        return `${file}\t${c.variable}`;
    }).join("\n");
    // As the installer reads it: the bytes, UTF-8, then settings.parse (never settings.load: it caches in /var/lib).
    const script = [
        "import sys",
        "sys.path.insert(0, sys.argv[1])",
        "from hostguard.settings import parse",
        "for line in sys.stdin.read().split('\\n')[:-1]:",
        "    file, key = line.split('\\t')",
        "    try:",
        "        print('ok\\t' + parse(open(file, 'rb').read().decode('utf-8'), file).values[key])",
        "    except Exception:",
        "        print('refused')",
    ].join("\n");
    const out = execFileSync("python3", ["-I", "-c", script, AGENT], { input: `${list}\n`, timeout: CHILD_TIMEOUT_MS })
        .toString().split("\n").slice(0, cases.length);
    fs.rmSync(dir, { recursive: true, force: true });
    assert.equal(out.length, cases.length);
    const values = out.map((line) => (line === "refused" ? null : line.split("\t")[1]));
    const pairs: Array<[string, string]> = [];
    cases.forEach((c, i) => {
        const value = values[i];
        if (value !== null) {
            for (const m of c.metrics ?? []) {
                pairs.push([m, value]);
            }
        }
    });
    const greater = decimalGreater(pairs);
    let next = 0;
    return cases.map((c, i) => {
        const value = values[i];
        if (value === null) {
            return null;
        }
        const count = (c.metrics ?? []).length;
        next += count;
        return { value, greater: greater.slice(next - count, next) };
    });
}

/** fail2ban's own time parser (the interpreter fail2ban-client runs with) on each text: seconds or null. */
function fail2banSeconds(texts: string[]): Array<number | null> {
    const client = execFileSync("sh", ["-c", "command -v fail2ban-client"]).toString().trim();
    const python = fs.readFileSync(client, "utf8").split("\n")[0].replace(/^#!\s*/, "").split(/\s+/)[0];
    const code = [
        "import json, sys",
        "from fail2ban.server.mytime import MyTime",
        "out = []",
        "for t in json.load(sys.stdin):",
        "    try:",
        "        v = MyTime.str2seconds(t)",
        "        out.append(v if isinstance(v, (int, float)) else None)",
        "    except Exception:",
        "        out.append(None)",
        "print(json.dumps(out))",
    ].join("\n");
    return JSON.parse(execFileSync(python, ["-c", code], { input: JSON.stringify(texts), timeout: CHILD_TIMEOUT_MS }).toString());
}

// ---- generators -----------------------------------------------------------

const hostileChar = fc.constantFrom("a", "Z", "0", "9", "/", ".", "-", "_", ",", " ", "\t", "=", "#", ";", "%", "$", "\\", "'", '"', "é", "\u0000", "\u001b", "\r");
const anyText = fc.oneof(
    fc.string({ unit: hostileChar, maxLength: 12 }),
    fc.string({ maxLength: 12 }),
    fc.string({ unit: "binary", maxLength: 6 }),
);

/** Values for a row: matching its pattern (maybe out of range), near misses, and anything. */
function valuesFor(row: SettingRow): fc.Arbitrary<unknown> {
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

/** The typed value preview gave for a key, as the host writes it. */
function previewText(config: ReturnType<typeof validateConfig>, key: SettingKey): string {
    return hostText(config.settings[key]);
}

// ---- the properties -------------------------------------------------------

describe("settings contract: keys the host reads (the host agent's parser, scripts/hostguard/settings.py)", () => {
    for (const row of HOST_SETTINGS) {
        const key = row.key as SettingKey;
        const variable = row.host as string;
        it(`${key} / ${row.host}: preview and the host agree on every value, with the same meaning`, () => {
            fc.assert(fc.property(fc.array(valuesFor(row), { minLength: BATCH, maxLength: BATCH }), fc.array(fc.tuple(fc.integer({ min: 0, max: 101 }), fc.integer({ min: 0, max: 999 })), { minLength: 4, maxLength: 4 }), (values, metricParts) => {
                const metrics = metricParts.map(([a, b]) => `${a}.${String(b).padStart(3, "0")}`);
                const previews = values.map((v) => preview(key, v));
                // 1. What preview accepts goes through the rendered file, whole.
                const accepted = previews.flatMap((p, i) => (p.ok ? [{ i, config: p.config }] : []));
                const rendered = host(accepted.map(({ config }) => ({
                    file: renderSettingsFile(config.settings), variable, metrics: row.type === "percent" ? metrics : [],
                })));
                accepted.forEach(({ i, config }, j) => {
                    const got = rendered[j];
                    assert.ok(got !== null, `${key}=${JSON.stringify(values[i])}: preview accepts, the host refuses ${JSON.stringify(renderSettingsFile(config.settings))}`);
                    assert.equal(got.value, previewText(config, key), `${key}=${JSON.stringify(values[i])}: the host reads another value`);
                    if (row.type === "percent") {
                        const t = Math.round((config.settings[key] as number) * 1000);
                        metrics.forEach((m, k) => {
                            const want = Math.round(Number(m) * 1000) > t;
                            assert.equal(got.greater[k], want, `${key}=${got.value}: is ${m} above it? host says ${got.greater[k]}`);
                        });
                    }
                    if (row.type === "names") {
                        const list = config.settings[key] as string[];
                        assert.deepEqual(got.value === "" ? [] : got.value.split(",").map(trimName), list);
                        assert.deepEqual(list, (values[i] as string[]).map(trimName), "preview keeps the names, trimmed");
                    }
                });
                // 2. The raw text, as a hand-written hostguard.conf line: the host accepts it exactly when preview does.
                const texts = values.map((v) => (typeof v === "number" ? String(v) : Array.isArray(v) ? v.join(",") : String(v)));
                // A line break or NUL cannot be in one line of a settings file: preview refuses
                // both in a value (a list's names are trimmed first, which the rendered file showed above).
                texts.forEach((t, i) => {
                    if (/[\n\0]/.test(t) && !Array.isArray(values[i])) {
                        assert.ok(!previews[i].ok, `${key}=${JSON.stringify(t)}: preview accepts a line break or NUL`);
                    }
                });
                const oneLine = texts.map((t, i) => ({ t, i })).filter(({ t }) => !/[\n\0]/.test(t));
                const raw = host(oneLine.map(({ t }) => ({ file: `${row.host}=${t}\n`, variable })));
                oneLine.forEach(({ t, i }, j) => {
                    const hostOk = raw[j] !== null;
                    // A list joined with commas is the same list only when no name holds a comma.
                    if (Array.isArray(values[i]) && (values[i] as string[]).some((n) => n.includes(",") || trimName(n) === "")) {
                        assert.ok(!previews[i].ok, `${key}=${JSON.stringify(values[i])}: preview accepts a name the host cannot hold`);
                        return;
                    }
                    assert.equal(hostOk, previews[i].ok || crossKeyOnly(previews[i], key) || previewOnly(previews[i], key, t),
                        `${key}: raw ${JSON.stringify(t)}: host ${hostOk ? "accepts" : "refuses"}, preview ${previews[i].ok ? "accepts" : "refuses"}`);
                    if (!hostOk) {
                        assert.ok(!previews[i].ok && (previews[i] as { key: string }).key.replace(/\[\d+\]$/, "") === key,
                            `${key}: the host refuses ${JSON.stringify(t)}, preview must refuse naming ${key}`);
                    }
                });
            }), ASSERT);
        });
    }
});

/** A refusal by a check only preview makes (which files the installer may edit: semanticRefusal), on a value the host's pattern accepts. */
function previewOnly(p: Preview, key: string, text: string): boolean {
    const why = semanticRefusal(key, text);
    return !p.ok && why !== null && p.message === `hostguard:${key} ${why}`;
}

/** A refusal only because of a rule across keys (notifyMaxTime <= notifyBudget): the value itself is fine. */
function crossKeyOnly(p: Preview, key: string): boolean {
    return !p.ok && p.message.includes("must not exceed hostguard:notifyBudget") && (key === "notifyMaxTime" || key === "notifyBudget");
}

describe("settings contract: keys rendered into the jail (fail2ban's parsers)", () => {
    for (const key of ["banFindTime", "banBanTime"] as const) {
        it(`${key}: preview accepts a duration exactly when fail2ban reads it as the same positive seconds`, () => {
            const row = SETTINGS.find((r) => r.key === key)!;
            fc.assert(fc.property(fc.array(valuesFor(row), { minLength: BATCH, maxLength: BATCH }), (values) => {
                const texts = values.map((v) => (typeof v === "number" ? String(v) : String(v)));
                const seconds = fail2banSeconds(texts);
                values.forEach((v, i) => {
                    const p = preview(key, v);
                    if (p.ok) {
                        const text = p.config.settings[key];
                        assert.equal(seconds[i], durationSeconds(text), `${key}=${JSON.stringify(v)}: fail2ban reads ${seconds[i]} s, preview ${durationSeconds(text)} s`);
                        assert.ok(durationSeconds(text) >= 1, `${key}=${text}: a zero time passed preview`);
                        assert.match(renderJail(p.config.settings), new RegExp(`^${key === "banBanTime" ? "bantime  " : "findtime "} = ${text}$`, "m"));
                    } else {
                        assert.equal(p.key, key);
                    }
                    if (seconds[i] === null || (seconds[i] as number) <= 0) {
                        assert.ok(!p.ok, `${key}=${JSON.stringify(v)}: fail2ban refuses it or reads no time, preview accepts`);
                    }
                });
            }), ASSERT);
        });
    }

    it("banMaxRetry: what preview accepts is the same positive integer to fail2ban (Python int)", () => {
        const row = SETTINGS.find((r) => r.key === "banMaxRetry")!;
        fc.assert(fc.property(fc.array(valuesFor(row), { minLength: BATCH, maxLength: BATCH }), (values) => {
            for (const v of values) {
                const p = preview("banMaxRetry", v);
                if (p.ok) {
                    const text = String(p.config.settings.banMaxRetry);
                    assert.match(text, /^[1-9][0-9]*$/);
                    assert.match(renderJail(p.config.settings), new RegExp(`^maxretry  = ${text}$`, "m"));
                } else {
                    assert.equal(p.key, "banMaxRetry");
                }
            }
        }), ASSERT);
    });

    it("nginxAccessLog and banAction: what preview accepts is one plain token fail2ban reads as given", () => {
        for (const key of ["nginxAccessLog", "banAction"] as const) {
            const row = SETTINGS.find((r) => r.key === key)!;
            fc.assert(fc.property(fc.array(valuesFor(row), { minLength: BATCH, maxLength: BATCH }), (values) => {
                for (const v of values) {
                    const p = preview(key, v);
                    if (!p.ok) {
                        assert.equal(p.key, key);
                        continue;
                    }
                    const text = p.config.settings[key];
                    // No whitespace, comment, interpolation or continuation character fail2ban's reader would act on.
                    assert.match(text, /^[A-Za-z0-9._/-]*$/);
                    if (key === "nginxAccessLog") {
                        assert.equal(path.posix.normalize(text), text, `${text} is not a plain absolute path`);
                        assert.ok(text.startsWith("/") && !text.endsWith("/"), `${text} is not a file path`);
                    }
                }
            }), ASSERT);
        }
    });
});

describe("settings contract: the issue's table as fixed cases", () => {
    const accept = (key: string, raw: unknown) => {
        const p = preview(key, raw);
        assert.ok(p.ok, `${key}=${JSON.stringify(raw)} must pass preview: ${p.ok ? "" : p.message}`);
        return p.config;
    };
    const refuse = (key: string, raw: unknown, why: RegExp) => {
        const p = preview(key, raw);
        assert.ok(!p.ok, `${key}=${JSON.stringify(raw)} must stop at preview`);
        assert.equal(p.key, key);
        assert.match(p.message, why);
    };

    it("banBanTime: 1h30m (the README's example) is a ban of 5400 s to fail2ban", () => {
        const c = accept("banBanTime", "1h30m");
        assert.match(renderJail(c.settings), /^bantime   = 1h30m$/m);
        assert.deepEqual(fail2banSeconds(["1h30m"]), [5400]);
        assert.equal(durationSeconds("1h30m"), 5400);
    });
    it("banFindTime: 1h30m likewise", () => {
        assert.match(renderJail(accept("banFindTime", "1h30m").settings), /^findtime  = 1h30m$/m);
    });
    it("cpuThreshold: 80.5 is accepted by both, and 80.51 is above it on the host while 80.5 is not", () => {
        const c = accept("cpuThreshold", "80.5");
        const [got] = host([{ file: renderSettingsFile(c.settings), variable: "CPU_THRESHOLD", metrics: ["80.51", "80.5", "80.499"] }]);
        assert.deepEqual(got, { value: "80.5", greater: [true, false, false] });
    });
    it("notifyAttempts: 12 is accepted by both", () => {
        const c = accept("notifyAttempts", "12");
        assert.deepEqual(host([{ file: renderSettingsFile(c.settings), variable: "NOTIFY_ATTEMPTS" }]), [{ value: "12", greater: [] }]);
        refuse("notifyAttempts", "21", /integer 1-20/);
        assert.deepEqual(host([{ file: "NOTIFY_ATTEMPTS=21\n", variable: "NOTIFY_ATTEMPTS" }]), [null]);
    });
    it("banBanTime: 0 is not a ban and stops at preview naming the key", () => {
        refuse("banBanTime", "0", /duration 1s-365d/);
        refuse("banBanTime", 0, /duration 1s-365d/);
        refuse("banBanTime", "0m", /duration 1s-365d/);
    });
    it("banAction: iptables.multiport is a fail2ban action name", () => {
        assert.match(renderJail(accept("banAction", "iptables.multiport").settings), /^banaction = iptables.multiport$/m);
    });
    it("nginxAccessLog: / is not a log file and stops at preview naming the key", () => {
        refuse("nginxAccessLog", "/", /absolute path of a file/);
        refuse("nginxAccessLog", "/var/log/nginx/", /absolute path of a file/);
        refuse("nginxAccessLog", "/var/log/../x", /absolute path of a file/);
        refuse("nginxAccessLog", "", /absolute path of a file/);
    });
    it("notifySpoolMax: 1-100000, default 1000, on both sides", () => {
        assert.equal(DEFAULT_SETTINGS.notifySpoolMax, 1000);
        const c = accept("notifySpoolMax", "100000");
        assert.deepEqual(host([{ file: renderSettingsFile(c.settings), variable: "NOTIFY_SPOOL_MAX" }]), [{ value: "100000", greater: [] }]);
        refuse("notifySpoolMax", "100001", /1-100000/);
        assert.deepEqual(host([{ file: "NOTIFY_SPOOL_MAX=100001\n", variable: "NOTIFY_SPOOL_MAX" }, { file: "", variable: "NOTIFY_SPOOL_MAX" }]), [null, { value: "1000", greater: [] }]);
    });
});
