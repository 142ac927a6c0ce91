#!/usr/bin/env bats
# hg_json_string (scripts/lib/common.sh) against Python's strict JSON parser,
# with hostile input, under LC_ALL=C and LC_ALL=C.UTF-8.

setup() {
  COMMON="${BATS_TEST_DIRNAME}/../../scripts/lib/common.sh"
  CASES="${BATS_TEST_TMPDIR}/cases"
  mkdir -p "${CASES}"
}

# Writes one input file per case; NUL cannot be in a bash string, so 0x01 up.
make_cases() {
  python3 - "${CASES}" <<'PY'
import os, sys
d = sys.argv[1]
cases = {
    "quotes": 'say "hi" \'there\' ""',
    "backslashes": "a\\b\\\\c\\",
    "lone_u": "\\u \\u12 \\ud800 \\u0041 \\\\u0041 \\x41 \\n",
    "tab_cr_lf": "a\tb\rc\r\nd\n",
    "every_control": "".join(chr(c) for c in range(1, 32)) + "\x7f",
    "multibyte": "héllo wörld – ¿qué? 日本語 Ελληνικά",
    "emoji": "🚀 rocket 👩‍💻 ✅ \U0001F600",
    "shell_meta": "$(id) `id` ${HOME} %s %d & && \\& * ? [a] ~ !",
    "json_like": '{"text":"x","channel":"#y"}\\n',
    "empty": "",
    "container_name": 'web "prod"\\1\t\x1b[31mred\x1b[0m',
    "long": ("x\"\\\n\x01é🚀" * 500),
}
for c in range(1, 32):
    cases["ctl_%02x" % c] = "<" + chr(c) + ">"
cases["ctl_7f"] = "<\x7f>"
for name, text in cases.items():
    with open(os.path.join(d, name), "wb") as f:
        f.write(text.encode("utf-8"))
PY
}

# Encodes every case under LOCALE and checks each result with json.loads.
check_locale() {
  local locale="$1" file out
  for file in "${CASES}"/*; do
    [[ "${file}" == *.out ]] && continue
    out="${file}.${locale}.out"
    LC_ALL="${locale}" bash -c 'source "$1"; input="$(cat "$2"; printf x)"; hg_json_string "${input%x}"' \
      _ "${COMMON}" "${file}" >"${out}"
  done
  python3 - "${CASES}" "${locale}" <<'PY'
import glob, json, os, sys
d, locale = sys.argv[1], sys.argv[2]
bad = []
n = 0
for out in sorted(glob.glob(os.path.join(d, "*.%s.out" % locale))):
    src = out[: -len(".%s.out" % locale)]
    want = open(src, "rb").read()
    got = open(out, "rb").read()
    n += 1
    name = os.path.basename(src)
    if any(b < 0x20 or b == 0x7f for b in got):
        bad.append("%s: raw control byte in output %r" % (name, got[:80]))
        continue
    try:
        value = json.loads(got.decode("utf-8"))  # strict: rejects raw controls
    except ValueError as e:
        bad.append("%s: not valid JSON (%s): %r" % (name, e, got[:80]))
        continue
    if not isinstance(value, str) or value.encode("utf-8") != want:
        bad.append("%s: round trip differs: %r != %r" % (name, value[:40], want[:40]))
print("%d cases under %s" % (n, locale))
for line in bad:
    print("FAIL " + line)
sys.exit(1 if bad or n < 40 else 0)
PY
}

@test "hg_json_string round-trips hostile input under LC_ALL=C" {
  make_cases
  run check_locale C
  echo "${output}"
  [[ "${status}" -eq 0 ]]
}

@test "hg_json_string round-trips hostile input under LC_ALL=C.UTF-8" {
  make_cases
  run check_locale C.UTF-8
  echo "${output}"
  [[ "${status}" -eq 0 ]]
}

@test "hg_json_string escapes the SPEC's newline as backslash-n and the quote as backslash-quote" {
  run bash -c 'source "$1"; hg_json_string "$2"' _ "${COMMON}" $'Ban Alert(x)\n Banned IP: *"1.2.3.4"*\\'
  [[ "${status}" -eq 0 ]]
  [[ "${output}" == '"Ban Alert(x)\n Banned IP: *\"1.2.3.4\"*\\"' ]] || {
    echo "got: ${output}"
    false
  }
}

@test "hg_json_string escapes a control character as \\u00XX" {
  run bash -c 'source "$1"; hg_json_string "$2"' _ "${COMMON}" $'a\x01b\x1bc\x7f'
  [[ "${output}" == '"a\u0001b\u001bc\u007f"' ]] || {
    echo "got: ${output}"
    false
  }
}
