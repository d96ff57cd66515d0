#!/usr/bin/env python3
"""Skips are skips: a script test under tests/tools/ that cannot run must exit 77 (CTest's
SKIP_RETURN_CODE: reported as Skipped), never print SKIP and exit 0 (reported as passed).
Fails naming every script where a line mentioning SKIP is followed within three lines by exit 0.
usage: skip_codes.py SOURCE_DIR
"""
import glob
import os
import re
import sys


def main(source):
    problems = []
    scripts = glob.glob(os.path.join(source, "tests", "tools", "**", "*.sh"), recursive=True)
    for path in sorted(scripts):
        lines = open(path).read().split("\n")
        for n, line in enumerate(lines):
            if re.search(r"SKIP", line) and not line.lstrip().startswith("#"):
                for later in lines[n:n + 4]:
                    if re.search(r"\bexit 0\b", later):
                        problems.append(f"{os.path.relpath(path, source)}:{n + 1}: prints SKIP "
                                        "and exits 0 (a pass); exit 77 instead")
    for p in problems:
        print("FAIL:", p, file=sys.stderr)
    print(f"skip_codes: {len(scripts)} scripts, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
