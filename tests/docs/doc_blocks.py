"""The blocks of a document that the docs tests run: fenced blocks of Markdown files and the
.nf/.fi blocks of a man page's EXAMPLES section, each with the docs-test markers written just
before it (HTML comments in Markdown, roff comments in man pages):

    <!-- docs-test: skip: needs a GPU -->        .\\" docs-test: setup: man-nn-train

A marker is "KEY" or "KEY: VALUE"; the keys are described in tests/docs/README.md.
"""
import re
from dataclasses import dataclass, field

MARKDOWN_MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(.*?)\s*-->\s*$")
MAN_MARKER = re.compile(r'^\.\\"\s*docs-test:\s*(.*?)\s*$')
FENCE = re.compile(r"^(\s*)(```+)\s*([\w+-]*)\s*$")
COMMAND_LANGUAGES = {"sh", "bash", "shell"}


@dataclass
class Block:
    line: int  # 1-based line of the opening fence (.nf for man pages)
    language: str  # "sh", "json", "cpp", "" ...; man page examples are "sh"
    text: str  # the content, indentation of the fence removed
    markers: list = field(default_factory=list)  # (key, value) in order
    end_line: int = 0  # line of the closing fence (.fi)
    indent: str = ""  # the fence's indentation (Markdown lists)

    def marker(self, key):
        """The value of the first marker `key` (None when absent; "" when it has no value)."""
        for k, v in self.markers:
            if k == key:
                return v
        return None

    def all(self, key):
        return [v for k, v in self.markers if k == key]

    @property
    def is_command(self):
        return self.language in COMMAND_LANGUAGES


def parse_marker(text):
    key, _, value = text.partition(":")
    return key.strip(), value.strip()


def markdown_blocks(text):
    lines = text.split("\n")
    blocks, pending, i = [], [], 0
    while i < len(lines):
        line = lines[i]
        m = MARKDOWN_MARKER.match(line)
        if m:
            pending.append(parse_marker(m.group(1)))
            i += 1
            continue
        fence = FENCE.match(line)
        if fence:
            indent, ticks, language = fence.groups()
            body, j = [], i + 1
            while j < len(lines) and not re.match(r"^\s*" + ticks + r"\s*$", lines[j]):
                body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j])
                j += 1
            if j == len(lines):
                raise ValueError(f"line {i + 1}: fence never closed")
            blocks.append(Block(i + 1, language, "\n".join(body) + "\n", pending, j + 1, indent))
            pending, i = [], j + 1
            continue
        if line.strip():
            # Hidden commands (run) may stand between paragraphs: they run before the next
            # block. Any other marker belongs to the block right below it.
            if any(k != "run" for k, _ in pending):
                raise ValueError(f"line {i}: docs-test markers not followed by a block: {pending}")
        i += 1
    if pending:  # hidden commands after the last block: an empty block carries them
        blocks.append(Block(len(lines), "", "", pending, len(lines)))
    return blocks


def unescape_roff(line):
    line = line.replace("\\-", "-").replace("\\e", "\\").replace("\\(dq", '"')
    return re.sub(r"\\f[BIRP]", "", line)


def man_blocks(text):
    """The .nf/.fi blocks of the EXAMPLES section: commands, one per line."""
    lines = text.split("\n")
    blocks, pending, in_examples, i = [], [], False, 0
    while i < len(lines):
        line = lines[i]
        if line.startswith(".SH"):
            in_examples = line.split(None, 1)[1:] == ["EXAMPLES"]
        m = MAN_MARKER.match(line)
        if m:
            pending.append(parse_marker(m.group(1)))
        elif in_examples and line.strip() == ".nf":
            body, j = [], i + 1
            while j < len(lines) and lines[j].strip() != ".fi":
                body.append(unescape_roff(lines[j]))
                j += 1
            blocks.append(Block(i + 1, "sh", "\n".join(body) + "\n", pending, j + 1))
            pending, i = [], j + 1
            continue
        i += 1
    return blocks


def blocks_of(path, text):
    return man_blocks(text) if re.search(r"\.\d$", path) else markdown_blocks(text)
