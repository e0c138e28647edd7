"""The shell commands that README.md and docs/ show, read as a shell would read them, for the tests that check them
(tests/test_doc_commands.py checks every one; tests/test_paper_run.py runs docs/paper-run.md's).

Which lines are commands:
- fenced blocks tagged bash, sh or shell: every line;
- blocks tagged console: the `$ ` lines (and the lines a trailing backslash continues); the other lines are output.
  A console block without a single `$ ` line is read as a bash block (its lines are plainly commands), and the
  test flags it, since by the rule above its lines would be output;
- other blocks (yaml, mermaid, untagged output): none;
- a block right after `<!-- not checked: <reason> -->`: none (the test lists these opt-outs).
docs/history/ is left out: it records what was true once.

How a line is split: `#` comments (a whole line, or from a `#` that starts a word), backslash continuations and
heredocs (`python - <<'EOF'` ... `EOF`: the body becomes the command's stdin) are handled per line; then the line is
cut at `&&`, `||`, `;`, `|` and `&` into commands, redirections (`< file`, `> file`) are dropped, and leading
`NAME=value` assignments become the command's env. A `$(...)` inside a line is a command of its own as well (it
stays, as written, in the word that holds it). `<placeholder>` stays one word, though a shell would read a
redirection there: in the docs it stands for something the reader fills in.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHELL_TAGS = ("bash", "sh", "shell")
CONSOLE_TAG = "console"
LEFT_OUT = ("docs/history/",)  # pages about the past, not instructions

FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<tag>[\w+-]*)")
OPT_OUT = re.compile(r"^\s*<!--\s*not checked\b:?(?P<reason>.*?)-->\s*$")
HEREDOC = re.compile(r"<<-?\s*(['\"]?)(?P<delimiter>[A-Za-z_]\w*)\1")
SUBSTITUTION = re.compile(r"\$\(([^()]*)\)")
BRACKETED = re.compile(r"<[A-Za-z][\w .,/:-]*>")  # <experiment>, <this repository>; not `< file` nor `<<'EOF'`
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
ALL_CAPS = re.compile(r"[A-Z][A-Z0-9_]*")  # FOLDER, and N or K as in `--gpus N`
OPERATOR_CHARS = set("();<>|&")
SEPARATORS = {"&&", "||", ";", "|", "&", "|&", ";;"}


@dataclass(frozen=True)
class Block:
    page: str  # relative to the project, e.g. "docs/cluster.md"
    line: int  # the opening fence's line
    tag: str
    lines: tuple[tuple[int, str], ...]  # (line number, text) of the block's content, the fence's indent removed
    opt_out: str | None = None  # the reason of a `<!-- not checked: ... -->` right before it

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def prompted(self) -> bool:
        return any(_is_prompt(text) for _, text in self.lines)

    @property
    def holds_commands(self) -> bool:
        return self.tag in SHELL_TAGS or self.tag == CONSOLE_TAG


@dataclass(frozen=True)
class Command:
    page: str
    line: int
    words: tuple[str, ...]  # the program and its arguments, quotes removed
    env: tuple[str, ...] = ()  # leading NAME=value assignments
    stdin: str | None = None  # a heredoc's body

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def text(self) -> str:
        return shlex.join([*self.env, *self.words])


def is_placeholder(word: str) -> bool:
    """A word the reader replaces: `<experiment>`, `gs://…`, FOLDER or a path with such a part, or a shell
    variable's value (`$PWD/...`), which only the reader's shell knows."""
    if BRACKETED.search(word) or "…" in word or "$" in word:
        return True
    return any(ALL_CAPS.fullmatch(part) for part in re.split(r"[/=:]", word))


def documentation_pages(root: Path = ROOT) -> list[Path]:
    pages = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    return [page for page in pages if not page.relative_to(root).as_posix().startswith(LEFT_OUT)]


def fenced_blocks(text: str, page: str) -> list[Block]:
    """Every fenced block of a markdown text, with the opt-out comment (if any) on the last non-blank line before it."""
    blocks, lines, index = [], text.splitlines(), 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent, fence = len(opening["indent"]), opening["fence"]
        end = index + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        content = tuple((number + 1, lines[number][indent:] if lines[number][:indent].isspace() else
                         lines[number].lstrip()) for number in range(index + 1, end))
        blocks.append(Block(page, index + 1, opening["tag"].lower(), content, _opt_out_before(lines, index)))
        index = end + 1
    return blocks


def _opt_out_before(lines: list[str], fence_index: int) -> str | None:
    before = [line for line in lines[:fence_index] if line.strip()]
    found = OPT_OUT.match(before[-1]) if before else None
    return found["reason"].strip() if found else None


def page_blocks(path: Path, root: Path = ROOT) -> list[Block]:
    return fenced_blocks(path.read_text(encoding="utf-8"), path.relative_to(root).as_posix())


def all_blocks(root: Path = ROOT) -> list[Block]:
    return [block for page in documentation_pages(root) for block in page_blocks(page, root)]


def block_commands(block: Block) -> list[Command]:
    """The commands of a block that holds them and has not opted out; none otherwise."""
    if not block.holds_commands or block.opt_out is not None:
        return []
    return [command for line, text, stdin in logical_lines(_shell_input(block))
            for command in split_commands(text, block.page, line, stdin)]


def page_commands(path: Path, root: Path = ROOT) -> list[Command]:
    return [command for block in page_blocks(path, root) for command in block_commands(block)]


def markdown_commands(text: str, page: str = "page.md") -> list[Command]:
    """The commands of a markdown text (the checkers' unit tests write small pages)."""
    return [command for block in fenced_blocks(text, page) for command in block_commands(block)]


def all_commands(root: Path = ROOT) -> list[Command]:
    return [command for block in all_blocks(root) for command in block_commands(block)]


def _is_prompt(text: str) -> bool:
    return text.startswith("$ ") or text == "$"


def _shell_input(block: Block) -> list[tuple[int, str]]:
    """The lines a shell would read: all of a bash block's; of a console block the `$ ` lines, prompt removed, and
    the lines a trailing backslash carries on to (bash's `> ` prompt removed)."""
    if block.tag != CONSOLE_TAG or not block.prompted:
        return list(block.lines)
    taken, continued = [], False
    for number, text in block.lines:
        if _is_prompt(text):
            taken.append((number, text[2:]))
        elif continued:
            taken.append((number, text.removeprefix("> ")))
        else:
            continue
        continued = taken[-1][1].rstrip().endswith("\\")
    return taken


def logical_lines(lines: list[tuple[int, str]]) -> list[tuple[int, str, str | None]]:
    """(first line number, the line with comments removed and continuations joined, heredoc body or None).
    Comments go first, line by line: a backslash inside a comment continues nothing."""
    result, index = [], 0
    while index < len(lines):
        number, text = lines[index][0], strip_comment(lines[index][1]).rstrip()
        index += 1
        while text.endswith("\\") and index < len(lines):
            text = text[:-1] + " " + strip_comment(lines[index][1]).strip()
            index += 1
        body, index = _heredoc_body(text, lines, index)
        if text.strip():
            result.append((number, text.strip(), body))
    return result


def _heredoc_body(text: str, lines: list[tuple[int, str]], index: int) -> tuple[str | None, int]:
    """The lines after a `<<DELIMITER` up to the delimiter, unchanged (a `#` there is not a shell comment), and the
    index of the line after it."""
    opened = HEREDOC.search(text)
    if not opened:
        return None, index
    body = []
    while index < len(lines) and lines[index][1].strip() != opened["delimiter"]:
        body.append(lines[index][1])
        index += 1
    return "\n".join(body) + "\n", index + 1


def strip_comment(line: str) -> str:
    """The line up to a `#` that starts a word outside quotes, as bash reads it (`a#b` is one word)."""
    quote, escaped = None, False
    for index, char in enumerate(line):
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace() or line[index - 1] in OPERATOR_CHARS):
            return line[:index]
    return line


def split_commands(text: str, page: str, line: int, stdin: str | None = None) -> list[Command]:
    """The commands of one logical line: each `$(...)` inside it first, then the pieces between its operators (a
    heredoc's body goes to the piece that reads it)."""
    inner = [command for found in SUBSTITUTION.finditer(text) for command in split_commands(found[1], page, line)]
    protected, originals = _protect(text)
    tokens = [token if _is_operator(token) else _restore(token, originals) for token in _tokens(protected)]
    return inner + [_command(words, page, line, stdin if reads_heredoc else None)
                    for words, reads_heredoc in _pieces(tokens)]


def _protect(text: str) -> tuple[str, dict[str, str]]:
    """`$(...)` and `<placeholder>` swapped for plain words, so that the tokenizer keeps each whole."""
    originals: dict[str, str] = {}

    def swap(found: re.Match) -> str:
        key = f"__doc_word_{len(originals)}__"
        originals[key] = found[0]
        return key

    return BRACKETED.sub(swap, SUBSTITUTION.sub(swap, text)), originals


def _restore(token: str, originals: dict[str, str]) -> str:
    for key, original in originals.items():
        token = token.replace(key, original)
    return token


def _tokens(text: str) -> list[str]:
    """Words and operators: shlex splits words at whitespace only, and runs of ();<>|& outside quotes apart."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""  # comments are gone already (strip_comment), and shlex would cut at any `#`
    return list(lexer)


def _is_operator(token: str) -> bool:
    return bool(token) and set(token) <= OPERATOR_CHARS


def _pieces(tokens: list[str]) -> list[tuple[list[str], bool]]:
    """The words of each command between separators, with redirections (operator and target) and parentheses
    dropped, and whether the command reads a heredoc."""
    pieces: list[tuple[list[str], bool]] = [([], False)]
    operator = None  # the redirection whose file, heredoc delimiter or fd the next word is
    for token in tokens:
        if operator:
            operator = None
        elif token in SEPARATORS:
            pieces.append(([], False))
        elif token in ("(", ")"):
            continue
        elif _is_operator(token):  # <, >, >>, <<, <<-, <<<, >&, &>
            operator = token
            if token.startswith("<<") and token != "<<<":
                pieces[-1] = (pieces[-1][0], True)
        else:
            pieces[-1][0].append(token)
    return [(words, heredoc) for words, heredoc in pieces if words]


def _command(words: list[str], page: str, line: int, stdin: str | None) -> Command:
    assignments = 0
    while assignments < len(words) and ASSIGNMENT.match(words[assignments]):
        assignments += 1
    return Command(page, line, tuple(words[assignments:]), tuple(words[:assignments]), stdin)
