// The one settings table: the files generated from it (the host parser's
// blocks in scripts/hostguard/settings_table.py, the two README tables) are up to date, and
// the table itself is well-formed (names, defaults valid by their own rules).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { refusal, SettingError, SETTINGS, validateSetting, validateSettings, type SettingRow } from "../../components/settings";
import { generatedFiles } from "../../tools/gen-settings";

describe("generated from the settings table", () => {
    for (const g of generatedFiles()) {
        it(`${g.file} is up to date (npm run settings:gen)`, () => {
            assert.equal(g.current, g.wanted, `${g.file} differs from components/settings.ts: run npm run settings:gen`);
        });
    }
});

describe("the settings table", () => {
    const rows: readonly SettingRow[] = SETTINGS;
    it("names every key once, in both naming styles", () => {
        assert.equal(new Set(rows.map((r) => r.key)).size, rows.length);
        const hosts = rows.flatMap((r) => (r.host === null ? [] : [r.host]));
        assert.equal(new Set(hosts).size, hosts.length);
        for (const r of rows) {
            assert.match(r.key, /^[a-z][A-Za-z0-9]*$/);
            if (r.host !== null) {
                assert.match(r.host, /^[A-Z][A-Z0-9_]*$/);
            }
            assert.ok(r.doc.length > 0 && r.allowed.length > 0, r.key);
        }
    });
    it("has defaults its own rules accept", () => {
        for (const r of rows) {
            const texts = r.type === "names" ? r.default.split(",").filter((x) => x !== "") : [r.default];
            for (const t of texts) {
                assert.equal(refusal(r, t), null, `${r.key} default ${JSON.stringify(t)}`);
            }
        }
    });
    it("keeps the SPEC's values as defaults", () => {
        const d = Object.fromEntries(rows.map((r) => [r.key, r.default]));
        assert.deepEqual([d.cpuThreshold, d.memoryThreshold, d.diskThreshold], ["80", "90", "90"]);
        assert.deepEqual([d.banMaxRetry, d.banFindTime, d.banBanTime], ["10", "1m", "10m"]);
        assert.equal(d.notifySpoolMax, "1000");
        assert.equal(d.containerMonitor, "true", "the SPEC monitors containers");
    });
    it("has containerMonitor: a boolean the monitors part's install step reads, refused naming the key", () => {
        const row = rows.find((r) => r.key === "containerMonitor");
        assert.ok(row, "containerMonitor row");
        assert.deepEqual([row.host, row.type, row.install], ["CONTAINER_MONITOR", "boolean", "monitors"]);
        assert.deepEqual([validateSetting(row, undefined), validateSetting(row, "false"), validateSetting(row, false), validateSetting(row, "true")], [true, false, false, true]);
        assert.throws(() => validateSetting(row, "no"), (e: SettingError) => e.key === "containerMonitor" && /true or false/.test(e.message));
        assert.equal(validateSettings({ containerMonitor: "false" }).containerMonitor, false);
    });
});
