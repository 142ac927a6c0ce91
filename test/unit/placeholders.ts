// The example stacks' placeholders filled as a user would: each `i-`, `sg-`
// and `vpc-` placeholder gets an id of its own that passes the rule, and a
// host key's ReplaceMe becomes other letters of the same length (the key
// still parses). Used by the tests that build or render the shipped stacks.
import { PLACEHOLDER } from "../../components/config";

/** TEXT (a stack file or its JSON) with every placeholder replaced; none is left (a YAML comment may name the mark). */
export function filledPlaceholders(text: string): string {
    let n = 0;
    const out = text
        .replace(/\b(i|sg|vpc)-REPLACE-ME[a-z0-9-]*/g, (_m, kind: string) => `${kind}-${(++n).toString(16).padStart(17, "0")}`)
        .replace(/ReplaceMe/g, "RealKey00");
    if (out.split("\n").some((line) => !/^\s*#/.test(line) && PLACEHOLDER.test(line))) {
        throw new Error("a placeholder of an unknown kind is left: fill it here");
    }
    return out;
}
