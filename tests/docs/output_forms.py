"""The form of a tool's output: its text with what changes from run to run and from data set to
data set (numbers, sizes, durations, column alignment) abstracted, so that a quoted output from
a real run on full data can be compared with a run on the tests' small data. A quoted line
matches a real one when their forms agree; "..." in a quoted line stands for anything.
"""
import re

NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")
SIZE = re.compile(r"# (bytes?|[KMGT]iB|[kMGT]B)\b")
DURATION = re.compile(r"(# h )?(# min )?# s\b")


def form(line):
    """"epoch 1/80: loss 1273.1 ..., 1.50 s, ETA 1 min 58 s" -> "epoch #/#: loss # ..., #s, ETA #s"."""
    f = NUMBER.sub("#", line)
    f = SIZE.sub("#B", f)
    f = DURATION.sub("#s", f)
    return " ".join(f.split())


def pattern(quoted_line):
    """A regular expression for the forms a quoted line stands for."""
    parts = form(quoted_line).split("...")
    return re.compile("^" + ".*".join(re.escape(p) for p in parts) + "$")


def compare(quoted, real):
    """Problems (a list of strings) when a quoted line is not the form of some real line. Order
    is not compared: which epoch is best, say, differs between the real data and the small
    data. Blank quoted lines and lines that are only "..." are elisions."""
    problems = []
    forms = [form(r) for r in real]
    for q in quoted:
        if not q.strip() or q.strip() == "...":
            continue
        p = pattern(q)
        if not any(p.match(f) for f in forms):
            problems.append(f"quoted line not in the real output (form {form(q)!r}): {q}")
    if problems:
        problems.append("the real output's forms were:\n  " + "\n  ".join(forms))
    return problems
