#!/usr/bin/env python3
"""Runs a document's command blocks (README.md, docs/*.md, a man page's EXAMPLES) as a new user
would, in a scratch copy of the source tree with the tools on PATH, on the tests' small data, and
checks that the outputs it quotes still have the form of real ones. With --regenerate it runs on
the real data instead and writes the real outputs into the document (scripts/docs-outputs.sh).
The markers that steer it are described in tests/docs/README.md.

usage: run_docs.py DOC --source DIR --build DIR [--python EXE] [--regenerate] [--keep]
Exit status: 0 when every block ran and every quoted output matches, 1 otherwise, 77 (CTest:
skipped) when all that ran passed but a block needs a program this machine lacks.
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import doc_blocks  # noqa: E402
import output_forms  # noqa: E402

TIMEOUT = int(os.environ.get("NN_DOCS_TIMEOUT", "900"))


def scratch_tree(source, build, root):
    """root/: the source tree's top-level entries as links (so commands see configs/, samples/,
    scripts/ ... where the docs say), build/ the build directory, home/ as $HOME."""
    for entry in os.listdir(source):
        if entry in (".git", "build"):
            continue
        os.symlink(os.path.join(source, entry), os.path.join(root, entry))
    os.symlink(build, os.path.join(root, "build"))
    os.mkdir(os.path.join(root, "home"))


def heredoc(text, tag):
    if tag in text:
        raise ValueError(f"block contains the here-document tag {tag}")
    return f"<<'{tag}'\n{text}{'' if text.endswith(chr(10)) else chr(10)}{tag}\n"


class Plan:
    """The bash script that runs the blocks in order, and what to check afterwards."""

    def __init__(self, blocks, out_dir, python, available):
        self.blocks, self.out, self.python = blocks, out_dir, python
        self.available = available  # needs: PROGRAM -> whether this machine and build have it
        self.lines = ["set -eE", "trap 'echo $DOCS_BLOCK > \"$DOCS_OUT/failed\"' ERR"]
        self.replacements = []
        self.outputs = []  # (block, file with the real output)
        self.snippets = []  # C++ blocks to compile
        self.skipped = []  # (block, reason)
        self.unrunnable = False  # a block needs a program this machine lacks
        self.ran = 0

    def command(self, i, text, name, status=None):
        for old, new in self.replacements:
            text = text.replace(old, new)
        path = os.path.join(self.out, name)
        self.lines.append(f"DOCS_BLOCK={i}")
        if status is None:
            self.lines.append("{\n" + text.rstrip("\n") + "\n} >" + shlex.quote(path) + " 2>&1")
        else:  # a block that shows a failure: its exit status is part of what it shows
            self.lines.append("set +e\n(\nset -e\n" + text.rstrip("\n") + "\n) >" +
                              shlex.quote(path) + " 2>&1\nDOCS_STATUS=$?\nset -e")
            self.lines.append(f"[ $DOCS_STATUS = {int(status)} ] || {{ echo \"exit status "
                              f"$DOCS_STATUS, expected {int(status)}\" >>{shlex.quote(path)}; "
                              "false; }")
        return path

    def build(self):
        last_output, last_skipped = None, None
        for i, b in enumerate(self.blocks):
            for key, value in b.markers:
                if key == "setup":
                    name, *args = value.split()
                    fixture = f"$DOCS_SOURCE/tests/docs/fixtures/{name}.sh"
                    self.lines.append(f"DOCS_BLOCK={i}; source \"{fixture}\" {' '.join(args)}")
                elif key == "replace":
                    old, sep, new = value.partition("=>")
                    if not sep or not old.strip():
                        raise ValueError(f"line {b.line}: replace needs 'OLD => NEW'")
                    self.replacements.append((old.strip(), new.strip()))
                elif key == "run":
                    self.command(i, value, f"run.{i}.{len(self.lines)}")
            wanted = b.all("needs") + (["nnsuite"] if b.marker("python") is not None else [])
            needs = [n for n in wanted if not self.available(n)]
            skip = b.marker("skip")
            if skip == "":
                raise ValueError(f"line {b.line}: skip needs a reason (skip: needs a GPU)")
            if needs:
                skip = "needs " + ", ".join(needs)
                self.unrunnable = True
            elif skip is None and b.marker("output") == "" and last_skipped:
                skip = last_skipped  # the quoted output of a block that did not run
            if skip is not None:
                self.skipped.append((b, skip))
                if b.is_command or b.marker("python") is not None:
                    last_skipped = skip
                continue
            if b.marker("file") is not None:
                path = b.marker("file")
                self.lines.append(f"DOCS_BLOCK={i}; mkdir -p \"$(dirname -- \"{path}\")\"; "
                                  f"cat >\"{path}\" " + heredoc(b.text, "DOCS_FILE_END"))
            elif b.marker("output") is not None:
                cmd = b.marker("output")
                if cmd:
                    self.outputs.append((b, self.command(i, cmd, f"output.{i}")))
                elif last_output is None:
                    raise ValueError(f"line {b.line}: output marker without a command before it")
                else:
                    self.outputs.append((b, last_output))
            elif b.marker("compile") is not None:
                self.snippets.append(b)
            elif b.marker("python") is not None:
                code = b.marker("python") + "\n" + b.text
                last_skipped = None
                last_output = self.command(
                    i, f"{shlex.quote(self.python)} - " + heredoc(code, "DOCS_PY_END"),
                    f"block.{i}")
                self.ran += 1
            elif b.is_command:
                last_skipped = None
                last_output = self.command(i, b.text, f"block.{i}", b.marker("status"))
                self.ran += 1
        self.lines.append("DOCS_BLOCK=end")
        return "\n".join(self.lines) + "\n"


def compile_snippet(block, source, work):
    """C++ fragments are syntax-checked against include/: wrapped in a function unless they are
    whole definitions (compile: top-level)."""
    body = block.text
    if block.marker("compile") != "top-level":
        body = "void docs_snippet() {\n" + body + "}\n"
    unit = os.path.join(work, f"snippet_{block.line}.cpp")
    with open(unit, "w") as f:
        f.write("#include <cstdio>\n#include <string>\n#include <thread>\n#include <vector>\n"
                "#include \"nn/nn.h\"\n" + body)
    r = subprocess.run([os.environ.get("CXX", "c++"), "-std=c++17", "-fsyntax-only",
                        "-I", os.path.join(source, "include"), unit],
                       capture_output=True, text=True)
    return r.returncode, r.stderr


def rewrite_outputs(doc_path, text, replacements):
    """The document with the given output blocks' contents replaced (block -> new lines)."""
    lines = text.split("\n")
    for block, new in sorted(replacements, key=lambda r: -r[0].line):
        body = [block.indent + l if l else l for l in new]
        lines[block.line:block.end_line - 1] = body
    with open(doc_path, "w") as f:
        f.write("\n".join(lines))


def real_lines(block, path):
    with open(path, errors="replace") as f:
        lines = f.read().splitlines()
    keep = block.marker("lines")
    if keep:
        lines = [l for l in lines if re.search(keep, l)]
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("doc")
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--regenerate", action="store_true")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--without", action="append", default=[],
                    help="a program the build cannot use although it may be installed (mpirun "
                         "for a build without MPI)")
    args = ap.parse_args()
    source, build = os.path.realpath(args.source), os.path.realpath(args.build)
    doc = os.path.realpath(args.doc)
    name = os.path.relpath(doc, source)
    with open(doc) as f:
        text = f.read()
    blocks = doc_blocks.blocks_of(doc, text)
    work = tempfile.mkdtemp(prefix="nn-docs-")
    root, out = os.path.join(work, "root"), os.path.join(work, "out")
    os.mkdir(root)
    os.mkdir(out)
    scratch_tree(source, build, root)
    def available(program):
        if program in args.without:
            return False
        if program == "nnsuite":  # the Python module, built into the build tree
            return os.path.exists(os.path.join(build, "python", "nnsuite", "__init__.py"))
        return shutil.which(program) is not None

    plan = Plan(blocks, out, args.python, available)
    script = plan.build()
    with open(os.path.join(work, "blocks.sh"), "w") as f:
        f.write(script)
    env = dict(os.environ, HOME=os.path.join(root, "home"), DOCS_OUT=out, DOCS_SOURCE=source,
               DOCS_ROOT=root, NN_DOCS_FULL="1" if args.regenerate else "",
               PATH=os.path.join(build, "src", "tools") + os.pathsep + os.environ["PATH"],
               PYTHONPATH=os.path.join(build, "python"), NN_PYTHON=args.python)
    problems = []
    try:
        r = subprocess.run(["bash", os.path.join(work, "blocks.sh")], cwd=root, env=env,
                           timeout=TIMEOUT, capture_output=True, text=True)
        if r.returncode != 0:
            failed = open(os.path.join(out, "failed")).read().strip() \
                if os.path.exists(os.path.join(out, "failed")) else "?"
            where = f"the block at line {blocks[int(failed)].line}" if failed.isdigit() else failed
            tail = ""  # the output of the last command that ran: the one that failed
            written = [f for f in os.listdir(out) if f != "failed"]
            for f in sorted(written, key=lambda n: os.path.getmtime(os.path.join(out, n))):
                tail = open(os.path.join(out, f), errors="replace").read()[-3000:]
            problems.append(f"{name}: {where} failed (exit {r.returncode}):\n{tail}{r.stderr[-2000:]}")
        else:
            for b in plan.snippets:
                code, err = compile_snippet(b, source, work)
                if code:
                    problems.append(f"{name}: the C++ block at line {b.line} does not compile:\n{err}")
            regenerated = []
            for b, path in plan.outputs:
                real = real_lines(b, path)
                for want in b.all("expect") if args.regenerate else []:
                    if not any(re.search(want, l) for l in real):
                        problems.append(f"{name}: the output at line {b.line} no longer shows "
                                        f"/{want}/, which the text relies on")
                quoted = b.text.rstrip("\n").split("\n")
                if args.regenerate:
                    regenerated.append((b, real))
                elif b.marker("shape") is not None:  # data, not messages: compare the shape
                    shape = re.compile(b.marker("shape"))
                    for line in [q for q in quoted if q.strip()] + real:
                        if not shape.search(line):
                            problems.append(f"{name}: the output at line {b.line}: "
                                            f"/{shape.pattern}/ does not match: {line}")
                    if len(real) != len([q for q in quoted if q.strip()]):
                        problems.append(f"{name}: the output at line {b.line}: {len(real)} "
                                        f"lines, the quote has {len(quoted)}")
                else:
                    for p in output_forms.compare(quoted, real):
                        problems.append(f"{name}: the output quoted at line {b.line}: {p}")
            if args.regenerate and not problems:
                rewrite_outputs(doc, text, regenerated)
    except subprocess.TimeoutExpired:
        problems.append(f"{name}: the blocks did not finish within {TIMEOUT} s")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    for p in problems:
        print("FAIL:", p, file=sys.stderr)
    reasons = {}
    for _, why in plan.skipped:
        reasons[why] = reasons.get(why, 0) + 1
    skipped = "; ".join(f"{n} skipped ({why})" for why, n in reasons.items())
    print(f"{name}: {plan.ran} command blocks run, {len(plan.outputs)} quoted outputs "
          f"{'regenerated' if args.regenerate else 'checked'}, {len(plan.snippets)} C++ "
          f"snippets compiled" + (f"; {skipped}" if skipped else ""))
    if problems:
        return 1
    return 77 if plan.unrunnable else 0  # 77: CTest's SKIP_RETURN_CODE


if __name__ == "__main__":
    sys.exit(main())
