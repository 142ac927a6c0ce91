"""The fenced `sh` blocks of one README section, for the executed Quick start.

Usage: readme_blocks.py README TITLE
Prints one line per logical command line of each ```sh block of the level-2
section whose title starts with TITLE, in order: `LINE<TAB>TEXT`, LINE being
the README line where the block's fence opens. A line ending in a backslash is
joined to the next (as the shell joins it); blank lines and whole-line comments
are left out; a trailing comment stays (the shell ignores it). Exit 1 naming
the section when it is missing or has no block.
"""

import re
import sys
from typing import Optional


def blocks(readme: str, title: str) -> list[tuple[int, list[str]]]:
    lines = readme.split("\n")
    starts = [i for i, line in enumerate(lines) if line.startswith("## ")]
    found = [i for i in starts if lines[i][3:].startswith(title)]
    if not found:
        raise SystemExit(f"readme_blocks: README has no section '## {title}'")
    first = found[0]
    end = next((i for i in starts if i > first), len(lines))
    out: list[tuple[int, list[str]]] = []
    block: Optional[list[str]] = None
    fence_line = 0
    for i in range(first, end):
        text = lines[i].strip()
        if block is None:
            if text == "```sh":
                block, fence_line = [], i + 1
            continue
        if text == "```":
            out.append((fence_line, block))
            block = None
            continue
        if block and block[-1].endswith("\\"):
            block[-1] = block[-1][:-1].rstrip() + " " + text
        elif text and not text.startswith("#"):
            block.append(text)
    if not out:
        raise SystemExit(f"readme_blocks: section '## {title}' has no ```sh block")
    return out


def main() -> None:
    if len(sys.argv) != 3:
        raise SystemExit("usage: readme_blocks.py README TITLE")
    with open(sys.argv[1], encoding="utf-8") as f:
        readme = f.read()
    for line, block in blocks(readme, sys.argv[2]):
        for text in block:
            if "\t" in text or re.search(r"\\$", text):
                raise SystemExit(f"readme_blocks: README line {line}: a tab or a dangling backslash in: {text}")
            print(f"{line}\t{text}")


if __name__ == "__main__":
    main()
