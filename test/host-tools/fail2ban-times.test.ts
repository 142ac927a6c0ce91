// The settings contract for the durations rendered into the jail, against
// fail2ban's own time parser (MyTime.str2seconds, in the interpreter
// fail2ban-client runs with): what preview accepts is the same positive
// seconds to fail2ban, and what fail2ban refuses or reads as no time, preview
// refuses. Needs fail2ban on PATH (npm test installs it), so CI's `test` job
// does not run it (test/host-tools/README.md); the rest of the contract is
// test/unit/settings-contract.test.ts.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import { before, describe, it } from "node:test";
import fc from "fast-check";
import { renderJail } from "../../components/hostFiles";
import { durationSeconds, SETTINGS } from "../../components/settings";
import { ASSERT, BATCH, CHILD_TIMEOUT_MS, preview, SEED, valuesFor } from "../unit/settings-values";

before(() => {
    process.stdout.write(`fail2ban times: fast-check seed ${SEED} (CONTRACT_SEED=${SEED} replays it)\n`);
});

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

describe("settings contract: durations rendered into the jail (fail2ban's parser)", () => {
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

    it("banBanTime: 1h30m (the README's example) is a ban of 5400 s to fail2ban", () => {
        const p = preview("banBanTime", "1h30m");
        assert.ok(p.ok);
        assert.deepEqual(fail2banSeconds(["1h30m"]), [5400]);
        assert.equal(durationSeconds("1h30m"), 5400);
    });
});
