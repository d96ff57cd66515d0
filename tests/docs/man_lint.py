#!/usr/bin/env python3
"""The man pages render clean: groff's man macros print no warning (-ww), no two arguments of
an alternating-font macro (.BR, .IR, ...) run together into one word (".BR x ). Its width" set
"Itswidth"), and the rendered text has no glued words or doubled commas.
usage: man_lint.py PAGE...   Exit status 0 clean, 1 problems, 77 (skipped) without groff.
"""
import re
import shutil
import subprocess
import sys

ALTERNATING = re.compile(r"^\.(BR|RB|BI|IB|IR|RI)\s+(.*)$")
FONT_ESCAPE = re.compile(r"\\f[BIRP]")


def macro_arguments(text):
    """roff's argument splitting: words, or double-quoted strings ("" is a quote inside)."""
    args, i = [], 0
    while i < len(text):
        if text[i].isspace():
            i += 1
        elif text[i] == '"':
            j, word = i + 1, ""
            while j < len(text) and not (text[j] == '"' and text[j + 1:j + 2] != '"'):
                word += text[j]
                j += 2 if text[j] == '"' else 1
            args.append(word)
            i = j + 1
        else:
            j = i
            while j < len(text) and not text[j].isspace():
                j += 1
            args.append(text[i:j])
            i = j
    return args


def source_problems(path):
    problems = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            m = ALTERNATING.match(line.rstrip("\n"))
            if not m:
                continue
            args = [FONT_ESCAPE.sub("", a) for a in macro_arguments(m.group(2))]
            for a, b in zip(args, args[1:]):
                # Alternating macros put no space between their arguments: a word ending one
                # and a word starting the next become one word.
                if re.search(r"[A-Za-z0-9]$", a) and re.match(r"[A-Za-z0-9]", b):
                    problems.append(f"{path}:{n}: '{a}' and '{b}' run together: {line.strip()}")
    return problems


def rendered_problems(path):
    r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-rLL=100n", "-P-cbou", path],
                       capture_output=True, text=True)
    problems = [f"{path}: groff: {w}" for w in r.stderr.splitlines() if w.strip()]
    for n, line in enumerate(r.stdout.splitlines(), 1):
        for glued in re.findall(r"[A-Za-z]{25,}", line):
            problems.append(f"{path}: rendered line {n}: glued words '{glued}': {line.strip()}")
        if re.search(r",\s*,|\(\s*,|,\s*\.(?!\.)", line):
            problems.append(f"{path}: rendered line {n}: doubled punctuation: {line.strip()}")
    return problems


def main(pages):
    if not shutil.which("groff"):
        print("man_lint: SKIPPED (no groff; scripts/setup.sh installs groff-base)")
        return 77
    problems = []
    for page in pages:
        problems += source_problems(page) + rendered_problems(page)
    for p in problems:
        print("FAIL:", p, file=sys.stderr)
    print(f"man_lint: {len(pages)} pages, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
