"""Lists every file under the given paths, for before/after comparisons.

Run inside a test host (hosts.sh `host_snapshot` feeds it to `python3 -`).
One line per entry, sorted by path:
    PATH TYPE MODE OWNER:GROUP SIZE SHA256   (regular files)
    PATH d MODE OWNER:GROUP - -              (directories)
    PATH l MODE OWNER:GROUP - ->TARGET       (symbolic links)
    PATH absent                              (a given path that does not exist)
Modification times are left out on purpose: a file rewritten with the same
content, mode and owner counts as unchanged.
"""

import grp
import hashlib
import os
import pwd
import stat
import sys


def owner(st):
    try:
        user = pwd.getpwuid(st.st_uid).pw_name
    except KeyError:
        user = str(st.st_uid)
    try:
        group = grp.getgrgid(st.st_gid).gr_name
    except KeyError:
        group = str(st.st_gid)
    return f"{user}:{group}"


def describe(path):
    st = os.lstat(path)
    mode = f"{stat.S_IMODE(st.st_mode):04o}"
    who = owner(st)
    if stat.S_ISREG(st.st_mode):
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 16), b""):
                digest.update(chunk)
        return f"{path} f {mode} {who} {st.st_size} {digest.hexdigest()}"
    if stat.S_ISDIR(st.st_mode):
        return f"{path} d {mode} {who} - -"
    if stat.S_ISLNK(st.st_mode):
        return f"{path} l {mode} {who} - ->{os.readlink(path)}"
    return f"{path} other {mode} {who} - -"


def walk(top):
    if not os.path.lexists(top):
        yield f"{top} absent"
        return
    yield describe(top)
    if not os.path.isdir(top) or os.path.islink(top):
        return
    for root, dirs, files in os.walk(top):
        for name in dirs + files:
            yield describe(os.path.join(root, name))


def main():
    lines = []
    for top in sys.argv[1:]:
        lines.extend(walk(os.path.normpath(top)))
    for line in sorted(lines):
        print(line)


main()
