// The settings contract, property-based (fast-check): values generated for
// every key, valid and invalid, go through the preview validator
// (validateConfig) and through the real consumers on the host: the host
// agent's parser (scripts/hostguard/settings.py, which the installer and the
// monitors use, on a rendered hostguard.conf and on the raw text) for the keys
// the host reads (fail2ban's own parsers for the keys rendered into the jail:
// test/host-tools/fail2ban-times.test.ts, which needs fail2ban). Properties:
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
import { DEFAULT_SETTINGS, validateConfig } from "../../components/config";
import { renderJail, renderSettingsFile } from "../../components/hostFiles";
import {
    durationSeconds, HOST_SETTINGS, hostText, semanticRefusal, SETTINGS, trimName, type SettingKey,
} from "../../components/settings";
import { ASSERT, BATCH, CHILD_TIMEOUT_MS, preview, SEED, valuesFor, type Preview } from "./settings-values";

const AGENT = path.resolve(__dirname, "../../scripts");
let work = "";
before(() => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), "hg-contract-"));
    process.stdout.write(`settings contract: fast-check seed ${SEED} (CONTRACT_SEED=${SEED} replays it)\n`);
});
after(() => {
    fs.rmSync(work, { recursive: true, force: true });
});

interface HostCase {
    /** Settings file content. */
    file: string;
    /** The key whose value to print. */
    variable: string;
    /** Decimals to compare with the monitors' decimal_gt (hostguard/monitor/alert_state.py) against the variable. */
    metrics?: string[];
}

/** The host monitors' comparison (hostguard/monitor/alert_state.py decimal_gt) on each [value, threshold] pair, in one python3. */
function decimalGreater(pairs: Array<[string, string]>): boolean[] {
    if (pairs.length === 0) {
        return [];
    }
    const code = [
        "import json, sys",
        "sys.path.insert(0, sys.argv[1])",
        "from hostguard.monitor.alert_state import decimal_gt",
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

describe("settings contract: keys rendered into the jail (what fail2ban reads as given)", () => {
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

    it("banBanTime: 1h30m (the README's example) is a ban of 5400 s", () => {
        const c = accept("banBanTime", "1h30m");
        assert.match(renderJail(c.settings), /^bantime   = 1h30m$/m);
        assert.equal(durationSeconds("1h30m"), 5400); // fail2ban's own reading: test/host-tools/fail2ban-times.test.ts
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
