// The READMEs and docs/ stay true about the tree: every file path they name
// exists (in the repository: a fresh clone has nothing beside it), and the
// Layout table of docs/development.md names every component and test folder.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";

const ROOT = path.resolve(__dirname, "../..");
const READMES = ["README.md", "scripts/README.md", "tools/README.md", "docs/configuration.md", "docs/aws.md", "docs/development.md", "docs/fleets.md", "docs/host.md"];

/** Backquoted file paths (a folder and a known extension) a README names. */
function namedPaths(text: string): string[] {
    return [...new Set([...text.matchAll(/`([\w./-]*\/[\w.-]+\.(?:md|ts|sh|bash|py|yaml|json))`/g)].map((m) => m[1]))];
}

/** The first column of the Layout table of docs/development.md. */
function layoutPaths(): string[] {
    const readme = fs.readFileSync(path.join(ROOT, "docs/development.md"), "utf8");
    const section = readme.split(/^## Layout$/m)[1]?.split(/^## /m)[0] ?? "";
    return [...section.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]);
}

/** Where scripts/files.table puts files on a host (its third column). */
function hostDestinations(): Set<string> {
    const table = fs.readFileSync(path.join(ROOT, "scripts/files.table"), "utf8");
    return new Set(table.split("\n").filter((l) => l.trim() && !l.trim().startsWith("#")).map((l) => l.trim().split(/\s+/)[2]));
}

describe("the READMEs", () => {
    for (const readme of READMES) {
        it(`${readme} names only files of the repository (or, for a host path, of the file table)`, () => {
            const dir = path.dirname(path.join(ROOT, readme));
            const onHost = hostDestinations();
            const missing = namedPaths(fs.readFileSync(path.join(ROOT, readme), "utf8"))
                .filter((p) => (p.startsWith("/") ? !onHost.has(p) : !fs.existsSync(path.resolve(ROOT, p)) && !fs.existsSync(path.resolve(dir, p))));
            assert.deepEqual(missing, []);
        });
    }

    it("the Layout table of docs/development.md names every component and test folder, and nothing that is gone", () => {
        const layout = layoutPaths();
        const wanted = [
            ...fs.readdirSync(path.join(ROOT, "components")).filter((f) => f.endsWith(".ts")).map((f) => `components/${f}`),
            ...fs.readdirSync(path.join(ROOT, "test"), { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => `test/${e.name}/`),
        ];
        assert.deepEqual(wanted.filter((p) => !layout.includes(p)), []);
        assert.deepEqual(layout.filter((p) => !fs.existsSync(path.join(ROOT, p))), []);
    });
});
