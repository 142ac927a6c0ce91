"""The bundle beside the installer: its expanded files.table, the files it lists, and the settings file
(hostguard.conf, or --settings FILE); what install checks before its first write."""

from __future__ import annotations

import os
import re

from .. import paths, settings
from ..errors import HostguardError
from ..settings import Settings
from ..settings_table import FILE_ROW_ALLOWED, FILE_ROW_RE, FILE_SKIP_RE
from . import programs

FILE_TABLE = "files.table"
HERE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Bundle:
    def __init__(self, settings_file: str) -> None:
        self.dir = HERE
        self.settings_file = settings_file or f"{self.dir}/hostguard.conf"
        self.rows: list[tuple[str, str, str, str]] | None = None

    def table(self) -> list[tuple[str, str, str, str]]:
        """Every row (part, source, destination, mode) of the bundle's expanded table; a bad line stops the run."""
        if self.rows is None:
            path = f"{self.dir}/{FILE_TABLE}"
            if not os.path.isfile(path):
                raise HostguardError(f"{FILE_TABLE} missing beside {self.dir}/install")
            with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
                lines = f.read().split("\n")
            self.rows = []
            for number, line in enumerate(lines, start=1):
                if re.match(FILE_SKIP_RE, line, re.DOTALL):
                    continue
                if not re.match(FILE_ROW_RE, line):
                    raise HostguardError(
                        f"{FILE_TABLE}:{number}: expected PART SOURCE DESTINATION MODE ({FILE_ROW_ALLOWED})"
                    )
                part, src, dest, mode = line.split()
                self.rows.append((part, src, dest, mode))
        return self.rows

    def part_files(self, part: str) -> list[tuple[str, str, int]]:
        return [(src, dest, int(mode, 8)) for p, src, dest, mode in self.table() if p == part]

    def source_file(self, src: str, dest: str) -> str:
        """In the bundle, except the settings file, which --settings replaces."""
        return self.settings_file if dest == paths.SETTINGS_PATH else f"{self.dir}/{src}"

    def load_settings(self) -> Settings:
        path = self.settings_file
        if not (os.path.isfile(path) and os.access(path, os.R_OK)):
            raise HostguardError(f"settings file {path} not readable (install runs from a rendered bundle, or give"
                                 " --settings FILE)")  # fmt: skip
        return settings.load(path)

    def check_programs(self, parts: list[str], root: str, s: Settings) -> None:
        """A part whose programs are missing changes nothing, not even a killed run's clean-up."""
        missing = programs.check(parts, root, self.dir, s.container_runtime, s.container_monitor)
        if missing:
            raise HostguardError(f"install refused before any change: {missing} program(s) missing (above); install"
                                 " the package(s) named and run it again")  # fmt: skip
