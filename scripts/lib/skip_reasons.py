#!/usr/bin/env python3
"""Why each skipped test skipped, after a CTest run (scripts/test.sh prints it last).

CTest's summary lists the tests that did not run, but not why; the reason is in each test's own
output, which CTest keeps in Testing/Temporary/LastTest.log. This reads the summary (CTest's
standard output, saved by test.sh) for the names, finds each one's output in the log, takes its
reason (a script's "SKIP: ..." line, or the message under GoogleTest's "Skipped") and prints one
line per reason with the count and a few of the names, so that a run on a fresh machine says
which tests could not run there and why.

Usage: skip_reasons.py CTEST_STDOUT LAST_TEST_LOG
"""

import re
import sys
from collections import OrderedDict


def skipped_names(summary_text):
    """The names under "The following tests did not run:" (their lines end in "(Skipped)")."""
    return re.findall(r"^\s*\d+ - (\S+) \(Skipped\)\s*$", summary_text, re.M)


def outputs_by_name(log_text):
    """Each test's output in LastTest.log, by name."""
    out = {}
    for m in re.finditer(r"^\d+/\d+ Test: (\S+)\n.*?^Output:\n-+\n(.*?)^<end of output>", log_text,
                         re.M | re.S):
        out[m.group(1)] = m.group(2)
    return out


def reason_of(output):
    lines = [l.strip() for l in output.splitlines()]
    for i, line in enumerate(lines):
        m = re.search(r"\bSKIP(?:PED)?:\s*(.+)", line)
        if m and not line.startswith("[  SKIPPED ]"):
            # A reason that quotes logs goes on over the next lines: the first few come with it.
            more = [l for l in lines[i + 1:i + 8] if l and not l.startswith("<end of output>")]
            return " | ".join([m.group(1)] + more)
        if line.endswith(": Skipped") and i + 1 < len(lines) and lines[i + 1]:
            return lines[i + 1]
    rest = [l for l in lines if l and not l.startswith(("[", "Running main", "Note: Google"))]
    return rest[-1] if rest else "no output"


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    with open(argv[1], errors="replace") as f:
        names = skipped_names(f.read())
    if not names:
        return 0
    try:
        with open(argv[2], errors="replace") as f:
            outputs = outputs_by_name(f.read())
    except OSError:
        outputs = {}
    groups = OrderedDict()
    for name in names:
        reason = reason_of(outputs[name]) if name in outputs else "(its output is not in the log)"
        groups.setdefault(reason[:300], []).append(name)
    print(f"Why the {len(names)} skipped tests skipped:")
    for reason, members in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        shown = ", ".join(members[:3]) + (f" and {len(members) - 3} more" if len(members) > 3
                                          else "")
        print(f"  {len(members):4d}  {reason}\n        ({shown})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
