"""Exit codes (sysexits.h, as the bash programs had them) and the agent's errors."""

EX_OK = 0
EX_FAILURE = 1
EX_USAGE = 64
EX_TEMPFAIL = 75
EX_NOPERM = 77
EX_CONFIG = 78


class HostguardError(Exception):
    """An error a program reports on one line and exits with `code`."""

    def __init__(self, message: str, code: int = EX_FAILURE) -> None:
        super().__init__(message)
        self.code = code


class ConfigError(HostguardError):
    """A settings or secret file that cannot be used; names the file (and line, key)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, EX_CONFIG)


class UsageError(HostguardError):
    """A command line that does not fit the program's usage."""

    def __init__(self, message: str) -> None:
        super().__init__(message, EX_USAGE)
