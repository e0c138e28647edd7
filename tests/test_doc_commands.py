"""Every command README.md and docs/ show (tests/doc_commands.py says which and how they are split) passes the
check of its program, so the docs cannot drift from the Makefile, the CLIs and params.yaml unnoticed. A program
without a checker fails its command's test, naming the page:line: add a checker to CHECKERS (or ACCEPTED) here.

What runs and what only parses (all in this process: about 18 s on 2 busy cores, of which the first `plan` takes
5 s, importing torch, Snakemake's parser 4.5 s and DVC's Hydra 2 s; the rest takes milliseconds a command):
- `gpt1 plan` (without --json) and `gpt1 profile`, and `--help`: run, in the project. They read params.yaml and the
  profiles, print, and write nothing; a file the docs ask the reader to write (my-paths.yaml) gets a stand-in.
  An `eval "$(gpt1 profile ...) ..."` runs the substitution and checks the line it makes (a `dvc exp run`).
- every other `gpt1` command: parsed with gpt1.cli.build_parser() only. They need the network (download,
  fetch-released; tests/test_paper_run.py runs fetch-released against a local hub), prepared data or trained models
  (prepare, generate, predict, export-weights, compare), or minutes (benchmark, the stages).
- `dvc`: parsed with DVC's own parser; each `-S` key must be in params.yaml, and the overrides, applied to a copy
  with DVC's own Hydra code, must give params that gpt1's schema accepts. Nothing runs: even a read-only `dvc dag`
  wants a git repository, and what it would find is tests/test_dag.py's subject.
- `snakemake`: parsed with Snakemake's own parser (its import takes a few seconds); the --configfile files and the
  --workflow-profile folder exist, the files compose into valid params, every target is an output or a rule of
  the DAG they resolve (gpt1.pipeline.dag, which the Snakefile builds its rules from), and every --set-resources
  names a rule. tests/test_paper_run.py dry-runs docs/paper-run.md's commands through Snakemake itself (slow).
- `make`: the target is a rule of the Makefile; nothing runs (every target installs, runs or deletes).
- `python -m M`, `python path`, `python -` with a heredoc (it compiles, and its imports resolve), `bash path`,
  `pytest path`, `pip install X`: the module, file or package exists.
- ACCEPTED programs (git, cd, sbatch, ...): accepted as they are.
Every command, whatever its program: a word that names a path in the project (profiles/..., tools/..., Makefile)
names one that exists. Placeholders (`<experiment>`, `…`, FOLDER, `$VAR`) are never looked up; gpt1 parses them as
a dummy value.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib
import importlib.util
import io
import logging
import re
import shlex
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from textwrap import shorten

import pytest
import yaml

from doc_commands import (ASSIGNMENT, ROOT, SUBSTITUTION, Command, all_blocks, all_commands, fenced_blocks,
                          is_placeholder, markdown_commands, split_commands)

DUMMY = "1"  # a placeholder's value when gpt1 parses it: a valid str, Path, int and float
PROJECT_FOLDERS = ("profiles/", "workflow/", "docs/", "tools/", "tests/", "gpt1/", "requirements/")
PROJECT_FILES = ("Makefile", "params.yaml", "dvc.yaml", "dvc.lock", "pyproject.toml", "README.md")
RUN_GPT1 = ("plan", "profile")  # cheap, need no prepared data, write nothing (plan only without --json)

# Programs accepted as they are (their arguments' project paths are still checked): version control, the shell's
# own, SLURM's, remote access, downloads and inspection. Nothing of this project decides whether they work.
ACCEPTED = {"git", "cd", "source", "export", "ls", "cat", "echo", "mkdir", "tail", "watch", "sbatch", "squeue",
            "scancel", "sacct", "torchrun", "nvidia-smi", "ssh", "rsync", "curl", "huggingface-cli", "hf"}


@dataclass(frozen=True)
class Project:
    root: Path
    stand_ins: dict[str, Path]  # a file the docs ask the reader to write -> one written for the test

    def file(self, word: str) -> Path:
        return self.stand_ins.get(word, self.root / word)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Project:
    """The project, with a stand-in for docs/paper-run.md's my-paths.yaml (where the reader's BooksCorpus and Story
    Cloze are): empty folders of that name, as tests/test_paper_run.py makes."""
    folder = tmp_path_factory.mktemp("readers_files")
    paths = {name: folder / name for name in ("bookcorpus", "story_cloze")}
    for path in paths.values():
        path.mkdir()
    my_paths = folder / "my-paths.yaml"
    my_paths.write_text(yaml.safe_dump({"data": {"local_paths": {
        "books": str(paths["bookcorpus"]), "story_cloze": str(paths["story_cloze"])}}}))
    return Project(ROOT, {"my-paths.yaml": my_paths})


# --- parsing with a program's own parser, in this process --------------------------------------------------------

def parsed(parser, arguments: list[str]):
    """(None, namespace), (None, None) where the parser printed help and exited 0, or (problem, None)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            return None, parser.parse_args(arguments)
        except SystemExit as exit:
            if exit.code == 0:
                return None, None
            lines = err.getvalue().strip().splitlines() or ["exited " + str(exit.code)]
            return lines[-1], None
        except Exception as error:  # noqa: BLE001 - an option's own type check (Snakemake's --cores) raises its own
            return str(error), None


@functools.cache
def gpt1_parser():
    from gpt1.cli import build_parser

    return build_parser()


class DvcParser:
    """DVC's parser, failing as argparse does (message on stderr, SystemExit): DVC's logs its error on a handler
    bound to the real stderr and raises DvcParserError."""

    def parse_args(self, arguments: list[str]):
        from dvc.cli import DvcParserError
        from dvc.cli.parser import get_main_parser

        messages: list[str] = []
        handler = logging.Handler(logging.ERROR)
        handler.emit = lambda record: messages.append(record.getMessage())
        logging.getLogger("dvc").addHandler(handler)
        try:
            return get_main_parser().parse_args(arguments)
        except DvcParserError:
            print("; ".join(messages) or "parser error", file=sys.stderr)
            raise SystemExit(2) from None
        finally:
            logging.getLogger("dvc").removeHandler(handler)


@functools.cache
def snakemake_parser():
    from snakemake.cli import get_argument_parser

    return get_argument_parser()


# --- make -------------------------------------------------------------------------------------------------------

MAKE_RULE = re.compile(r"^(?P<targets>[^\s#:=][^:=#]*?)\s*::?(?=\s|$)", re.MULTILINE)  # not `X := value`
MAKE_OPTIONS_WITH_VALUES = {"-C", "-f", "-I", "-o", "-W", "-j", "-l", "--file", "--directory"}


@functools.cache
def makefile_targets(makefile: Path) -> frozenset[str]:
    return frozenset(target for rule in MAKE_RULE.finditer(makefile.read_text()) for target in rule["targets"].split())


def check_make(command: Command, project: Project) -> list[str]:
    targets = makefile_targets(project.root / "Makefile")
    asked, words = [], list(command.words[1:])
    while words:
        word = words.pop(0)
        if word in MAKE_OPTIONS_WITH_VALUES and words and not (word in ("-j", "-l") and not words[0].isdigit()):
            words.pop(0)
        elif not word.startswith("-") and not ASSIGNMENT.match(word):
            asked.append(word)
    known = ", ".join(sorted(target for target in targets if re.fullmatch(r"[\w-]+", target)))
    return [f"the Makefile has no target `{target}` (it has: {known})" for target in asked
            if target not in targets and not is_placeholder(target)]


# --- gpt1 -------------------------------------------------------------------------------------------------------

def check_gpt1(command: Command, project: Project) -> list[str]:
    arguments = list(command.words[1:])
    problem, args, _ = parsed_with_placeholders(gpt1_parser(), arguments)
    if problem:
        return [f"gpt1's parser refuses it: {problem}"]
    if args is None or not runs_here(args) or any(map(is_placeholder, arguments)):
        return []
    return run_gpt1(arguments, project)[0]


def parsed_with_placeholders(parser, words: list[str]):
    """parsed() of the words as written, and where that fails and there are placeholders, of the words with each
    placeholder a DUMMY value (`--gpus N`), or the first choice where its option takes choices (`--method V`). The
    third value says whether DUMMY stood in."""
    problem, args = parsed(parser, words)
    if not problem or not any(map(is_placeholder, words)):
        return problem, args, False
    arguments = [DUMMY if is_placeholder(word) else word for word in words]
    unchosen = [index for index, word in enumerate(words) if is_placeholder(word)]
    while True:
        problem, args = parsed(parser, arguments)
        choices = re.search(rf"invalid choice: '{DUMMY}' \(choose from '([^']*)'", problem or "")
        if not (choices and unchosen):
            return problem, args, True
        arguments[unchosen.pop(0)] = choices[1]  # argparse reads left to right: the first one left failed


def runs_here(args) -> bool:
    return args.stage in RUN_GPT1 and getattr(args, "json", None) is None


def run_gpt1(arguments: list[str], project: Project) -> tuple[list[str], str]:
    """(problems, what it printed) of `gpt1 <arguments>` run in this process, in the project."""
    from gpt1.cli import main

    arguments = [str(project.stand_ins.get(word, word)) for word in arguments]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(project.root), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(arguments)
        except Exception as error:  # noqa: BLE001 - a crash is the doc's failure, named by its page:line
            return [f"running it raised {error!r}"], ""
    if code != 0:
        return [f"running it exited {code}: {err.getvalue().strip()[-600:]}"], ""
    if not out.getvalue().strip():
        return ["running it printed nothing"], ""
    return [], out.getvalue()


def check_eval(command: Command, project: Project) -> list[str]:
    """`eval "$(gpt1 profile ...) -n name"`: the substitution runs where it is a gpt1 command this test runs; the
    line it makes is then checked as a command. Where it does not run, its own check (a command of its own in
    doc_commands) is all there is."""
    line, problems = " ".join(command.words[1:]), []
    for found in SUBSTITUTION.finditer(line):
        inner = shlex.split(found[1])
        args = parsed(gpt1_parser(), inner[1:])[1] if inner[:1] == ["gpt1"] else None  # its own check says why not
        if args is None or not runs_here(args):
            return []
        trouble, printed = run_gpt1(inner[1:], project)
        if trouble:
            return [f"$({found[1]}): {problem}" for problem in trouble]
        line = line.replace(found[0], printed.strip(), 1)
    for made in split_commands(line, command.page, command.line):
        problems += [f"the line it evaluates, `{shorten(made.text, 120)}`: {problem}"
                     for problem in check(made, project)]
    return problems


# --- dvc --------------------------------------------------------------------------------------------------------

# the subcommands whose targets are stages or outputs (`dvc add`'s, say, are files to track)
DVC_STAGE_TARGETS = {"repro", "status", "push", "pull", "fetch", "commit", "checkout", "exp run", "plots show",
                     "plots diff"}


def check_dvc(command: Command, project: Project) -> list[str]:
    problem, args, _ = parsed_with_placeholders(DvcParser(), list(command.words[1:]))
    if problem:
        return [f"DVC's parser refuses it: {problem}"]
    if args is None:
        return []
    subcommand = " ".join(word for word in command.words[1:3] if not word.startswith("-"))
    problems = []
    if subcommand in DVC_STAGE_TARGETS or subcommand.split(" ")[0] in DVC_STAGE_TARGETS:
        problems += dvc_target_problems(args, project)
    if getattr(args, "set_param", None):
        problems += check_set_params(args.set_param, getattr(args, "queue", False), project)
    return problems


def dvc_target_problems(args, project: Project) -> list[str]:
    """`dvc repro T`, `dvc status T`, `dvc plots diff --targets T`: T is a stage (`pretrain`, `pretrain@lstm`),
    a top-level plot of dvc.yaml, or a path at or under an output of the default's DAG."""
    stages, outputs = dvc_stages_and_outputs(project.root)
    return [f"target {target}: neither a stage nor a plot of dvc.yaml, nor a path under one of its outputs"
            for target in getattr(args, "targets", None) or []
            if not is_placeholder(target) and target.split("@")[0] not in stages
            and not any(target == output or target.startswith(output.rstrip("/") + "/") for output in outputs)]


@functools.cache
def dvc_stages_and_outputs(root: Path) -> tuple[frozenset[str], frozenset[str]]:
    from gpt1.pipeline import dag

    declared = yaml.safe_load((root / "dvc.yaml").read_text())
    plots = {name for plot in declared.get("plots", []) for name in (plot if isinstance(plot, dict) else [plot])}
    with contextlib.chdir(root):
        resolved = dag.resolve("dvc.yaml", yaml.safe_load((root / "params.yaml").read_text()))
    stages = {stage.name for stage in resolved} | set(declared["stages"]) | plots
    return frozenset(stages), frozenset(path for stage in resolved for path in stage.outs) | {"dvc.yaml"}


def check_set_params(overrides: list[str], queued: bool, project: Project) -> list[str]:
    """Each `-S` names a key of its params file (DVC's default: params.yaml), `+key` a new key under an existing
    mapping; a sweep (`key=1,2`) is queued, as DVC demands; applied as DVC applies them (each combination of a
    sweep), the params must pass gpt1's schema."""
    from dvc.utils.cli_parse import to_path_overrides
    from dvc.utils.hydra import get_hydra_sweeps, to_hydra_overrides

    problems = []
    for path, texts in to_path_overrides(overrides).items():
        try:
            parsed_overrides = to_hydra_overrides(texts)
        except Exception as error:  # noqa: BLE001 - Hydra's grammar errors have several types
            return [f"-S {' '.join(texts)}: not Hydra's override grammar: {error}"]
        current = yaml.safe_load(project.file(path).read_text())
        problems += [problem for override in parsed_overrides for problem in key_problems(override, current, path)]
        problems += [f"-S {override.input_line}: a sweep runs only with --queue" for override in parsed_overrides
                     if override.is_sweep_override() and not queued]
    if problems:
        return problems
    return [problem for combination in get_hydra_sweeps(to_path_overrides(overrides))
            for problem in overridden_params_problems(combination, project)]


def key_problems(override, params: dict, path: str) -> list[str]:
    key = override.key_or_group
    parent, _, leaf = key.rpartition(".")
    holder = lookup(params, parent) if parent else params
    if override.is_add():
        if not isinstance(holder, dict):
            return [f"-S +{key}: {path} has no mapping `{parent}` to add `{leaf}` to"]
        if leaf in holder:
            return [f"-S +{key}: {path} has `{key}` already; DVC (Hydra) refuses to add it (drop the +)"]
        return []
    if override.is_force_add():
        return [] if isinstance(holder, dict) else [f"-S ++{key}: {path} has no mapping `{parent}`"]
    if not isinstance(holder, dict) or leaf not in holder:
        return [f"-S {key}=...: {path} has no key `{key}`"]
    return []


def lookup(values, dotted: str):
    for part in dotted.split("."):
        if not isinstance(values, dict) or part not in values:
            return None
        values = values[part]
    return values


def overridden_params_problems(path_overrides: dict[str, list[str]], project: Project) -> list[str]:
    """The overrides applied, with DVC's own code, to copies of their files; params.yaml's must pass the schema."""
    import tempfile

    from dvc.utils.hydra import apply_overrides

    from gpt1.errors import UserError
    from gpt1.params.schema import parse_params

    with tempfile.TemporaryDirectory() as folder:
        for path, overrides in path_overrides.items():
            copy = Path(folder) / Path(path).name
            shutil.copy(project.file(path), copy)
            try:
                apply_overrides(copy, overrides)
            except Exception as error:  # noqa: BLE001 - DVC's InvalidArgumentError, Hydra's own
                return [f"-S {' '.join(overrides)}: DVC cannot apply it: {error} {error.__cause__ or ''}".strip()]
            if Path(path).name == "params.yaml":
                try:
                    parse_params(yaml.safe_load(copy.read_text()), f"params.yaml with -S {' '.join(overrides)}")
                except UserError as error:
                    return [str(error)]
    return []


# --- snakemake --------------------------------------------------------------------------------------------------

def check_snakemake(command: Command, project: Project) -> list[str]:
    problem, args, stood_in = parsed_with_placeholders(snakemake_parser(), list(command.words[1:]))
    if problem:
        return [f"Snakemake's parser refuses it: {problem}"]
    if args is None:
        return []
    unknown = lambda value: is_placeholder(value) or (stood_in and value == DUMMY)  # noqa: E731
    configfiles = [str(path) for path in args.configfile or [] if not unknown(str(path))]
    problems = [f"--configfile {name}: no such file" for name in configfiles if not project.file(name).is_file()]
    profile = args.workflow_profile
    if profile and not unknown(profile) and not (project.root / profile / "config.yaml").is_file():
        problems.append(f"--workflow-profile {profile}: no such profile folder (with a config.yaml)")
    if problems:
        return problems
    try:
        outputs, rules = dag_outputs(project.root, tuple(project.file(name) for name in configfiles))
    except Exception as error:  # noqa: BLE001 - gpt1's UserError for bad params, or a DAG that cannot resolve
        return [f"--configfile {' '.join(configfiles)}: {error}"]
    problems += [f"target {target}: no rule makes it (not an output of the DAG, nor a rule's name)"
                 for target in args.targets or [] if target not in outputs | rules and not unknown(target)]
    problems += [f"--set-resources {rule}:...: no rule {rule}" for rule in (args.set_resources or {})
                 if rule not in rules]
    return problems


@functools.cache
def dag_outputs(root: Path, configfiles: tuple[Path, ...]) -> tuple[frozenset[str], frozenset[str]]:
    """(every output path, every rule name) of the Snakefile given these --configfile files, as it builds them:
    params.yaml and the files composed, validated, resolved by gpt1.pipeline.dag."""
    from gpt1.params.files import compose_raw
    from gpt1.params.schema import parse_params
    from gpt1.pipeline import dag

    composed, source = compose_raw(root / "params.yaml", configfiles)
    parse_params(composed, source)
    with contextlib.chdir(root):
        outputs = frozenset(path for stage in dag.resolve("dvc.yaml", composed) for path in stage.outs)
        rules = frozenset(template.name for template in dag.templates("dvc.yaml", composed)) | {"all"}
    return outputs, rules


# --- python, bash, pytest, pip ----------------------------------------------------------------------------------

def check_python(command: Command, project: Project) -> list[str]:
    words = list(command.words[1:])
    while words and words[0].startswith("-") and words[0] not in ("-", "-m", "-c"):
        words.pop(0)  # -u, -X importtime, ...: interpreter options
    if not words or words[0] == "-":
        return script_problems(command.stdin) if command.stdin else []
    if words[0] == "-c":
        return script_problems(words[1]) if len(words) > 1 else ["python -c without code"]
    if words[0] == "-m":
        return module_problems(words[1:], command, project) if len(words) > 1 else ["python -m without a module"]
    return path_problems(words[0], project)


def module_problems(words: list[str], command: Command, project: Project) -> list[str]:
    if is_placeholder(words[0]):
        return []
    if not module_exists(words[0]):
        return [f"python -m {words[0]}: no such module"]
    if words[0] == "pytest":
        return check_pytest(Command(command.page, command.line, ("pytest", *words[1:])), project)
    return []


def script_problems(code: str) -> list[str]:
    """A script shown to the reader: it compiles, every module it imports exists, and every name it imports from
    one of the project's modules is there."""
    try:
        tree = ast.parse(code)
    except SyntaxError as error:
        return [f"the script does not compile: {error}"]
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            problems += [f"import {alias.name}: no such module" for alias in node.names
                         if not module_exists(alias.name)]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if not module_exists(node.module):
                problems.append(f"from {node.module}: no such module")
            elif node.module.split(".")[0] == "gpt1":
                module = importlib.import_module(node.module)
                problems += [f"from {node.module} import {alias.name}: no such name" for alias in node.names
                             if not hasattr(module, alias.name) and not module_exists(f"{node.module}.{alias.name}")]
    return problems


def module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def check_bash(command: Command, project: Project) -> list[str]:
    words = list(command.words[1:])
    if words[:1] == ["-c"] and len(words) > 1:
        return [problem for inner in split_commands(words[1], command.page, command.line)
                for problem in check(inner, project)]
    scripts = [word for word in words if not word.startswith("-")]
    return path_problems(scripts[0], project) if scripts else []


def check_pytest(command: Command, project: Project) -> list[str]:
    """The test paths exist (those that look like paths: -m gpu, -n 2 and --dist loadfile are option values)."""
    return [problem for word in command.words[1:] if not word.startswith("-") and looks_like_a_test_path(word)
            for problem in path_problems(word.split("::")[0], project)]


def looks_like_a_test_path(word: str) -> bool:
    return "/" in word or word.split("::")[0].endswith(".py") or word in ("tests", ".")


def check_pip(command: Command, project: Project) -> list[str]:
    from packaging.requirements import InvalidRequirement, Requirement

    words = list(command.words[1:])
    if words[:1] != ["install"]:
        return []
    problems = []
    for option, word in zip(words, words[1:]):  # option: the word before
        if word.startswith("-") or is_placeholder(word) or option in ("--index-url", "-i", "--extra-index-url"):
            continue
        if option in ("-r", "-c", "-e", "--requirement", "--constraint", "--editable") or looks_like_a_path(word):
            problems += path_problems(word, project)
            continue
        try:
            Requirement(word)
        except InvalidRequirement as error:
            problems.append(f"pip install {word}: neither a package nor a path ({error})")
    return problems


def looks_like_a_path(word: str) -> bool:
    return word.startswith((".", "/", "~")) or ("/" in word and "://" not in word)


def path_problems(word: str, project: Project) -> list[str]:
    if is_placeholder(word) or word in project.stand_ins or project.file(word).exists():
        return []
    return [f"{word}: no such file or folder in the project"]


# --- every command ----------------------------------------------------------------------------------------------

def accept(command: Command, project: Project) -> list[str]:
    return []


CHECKERS: dict[str, Callable[[Command, Project], list[str]]] = {
    "make": check_make, "gpt1": check_gpt1, "dvc": check_dvc, "snakemake": check_snakemake, "eval": check_eval,
    "python": check_python, "bash": check_bash, "sh": check_bash, "pytest": check_pytest, "pip": check_pip,
    **{name: accept for name in ACCEPTED},
}


def program(command: Command) -> str:
    """The program's name as CHECKERS knows it: .venv/bin/gpt1 is gpt1, python3.11 python, `.` source."""
    name = command.words[0].rsplit("/", 1)[-1]
    if re.fullmatch(r"python3?(\.\d+)?", name):
        return "python"
    return {".": "source", "pip3": "pip"}.get(name, name)


def project_paths(command: Command) -> list[str]:
    """The words (or an option's `=value`) that name a path in the project."""
    values = [word.split("=", 1)[1] if word.startswith("-") and "=" in word else word for word in command.words[1:]]
    values = [value.split("::")[0] for value in values]  # pytest's tests/test_x.py::test_y
    return [value for value in values if value.startswith(PROJECT_FOLDERS) or value in PROJECT_FILES]


def check(command: Command, project: Project) -> list[str]:
    checker = CHECKERS.get(program(command))
    if checker is None:
        return [f"no checker for `{program(command)}`: add one to CHECKERS in tests/test_doc_commands.py (or the "
                f"program to ACCEPTED, if nothing in the project decides whether it works)"]
    missing = [problem for word in project_paths(command) for problem in path_problems(word, project)]
    return missing + checker(command, project)


DOCUMENTED = all_commands()


@pytest.mark.parametrize("command", DOCUMENTED, ids=[f"{command.where} {command.words[0]}" for command in DOCUMENTED])
def test_every_documented_command_passes_its_check(command, project):
    problems = check(command, project)
    assert not problems, f"{command.where}: `{command.text}`:\n  " + "\n  ".join(problems)


def test_the_harness_reads_the_readme_and_every_page_with_commands():
    pages = {command.page for command in DOCUMENTED}
    assert "README.md" in pages and "docs/paper-run.md" in pages and len(DOCUMENTED) > 50


def test_console_blocks_prompt_their_commands():
    """In a console block only `$ ` lines are commands; one without any reads as all output, so nothing in it would
    be checked (doc_commands reads such a block as bash meanwhile, so its commands are still checked above)."""
    unprompted = [block.where for block in all_blocks() if block.tag == "console" and not block.prompted
                  and block.opt_out is None]
    assert not unprompted, ("console blocks without a `$ ` line (prefix the commands with `$ `, or tag the block "
                            "bash): " + ", ".join(unprompted))


def test_no_command_hides_in_a_block_that_is_not_tagged_as_shell():
    """An untagged (or text) block that opens with a command is read as output, so it escapes every check."""
    hidden = []
    for block in all_blocks():
        first = next((text for _, text in block.lines if text.strip()), "")
        words = first.removeprefix("$ ").split()
        if block.tag in ("", "text", "txt") and words and words[0] in CHECKERS:
            hidden.append(f"{block.where}: {first.strip()}")
    assert not hidden, "tag these blocks bash or console: " + "; ".join(hidden)


def test_each_opt_out_gives_its_reason(capsys):
    opted_out = [block for block in all_blocks() if block.opt_out is not None]
    with capsys.disabled():
        for block in opted_out:
            print(f"\n{block.where}: not checked: {block.opt_out}", end="")
    assert [block.where for block in opted_out if not block.opt_out] == [], \
        "write the reason: <!-- not checked: <reason> -->"


# --- the extractor, on small pages ------------------------------------------------------------------------------

def words_of(markdown: str) -> list[tuple[int, tuple[str, ...]]]:
    return [(command.line, command.words) for command in markdown_commands(markdown)]


def test_comments_continuations_chains_and_assignments_are_read_as_a_shell_reads_them():
    page = ("text\n```bash\n# a whole-line comment\nmake repro   # trailing, with `backticks` \\\n"
            "ATEN_CPU_CAPABILITY=avx2 make test && dvc push; git log | tail -n 3\n"
            "snakemake --cores 1 \\\n  --configfile profiles/tiny.yaml\necho 'a # kept' a#b\n```\n")
    assert words_of(page) == [(4, ("make", "repro")), (5, ("make", "test")), (5, ("dvc", "push")),
                              (5, ("git", "log")), (5, ("tail", "-n", "3")),
                              (6, ("snakemake", "--cores", "1", "--configfile", "profiles/tiny.yaml")),
                              (8, ("echo", "a # kept", "a#b"))]
    assert markdown_commands(page)[1].env == ("ATEN_CPU_CAPABILITY=avx2",)


def test_console_blocks_give_their_prompted_lines_only():
    page = "```console\n$ gpt1 --profile profiles/paper.yaml plan\nPretraining: 5.3 h\n$ make \\\n> test\n```\n"
    assert words_of(page) == [(2, ("gpt1", "--profile", "profiles/paper.yaml", "plan")), (4, ("make", "test"))]
    unprompted = "```console\nmake test\n```\n"  # read as bash; test_console_blocks_prompt_their_commands flags it
    assert words_of(unprompted) == [(2, ("make", "test"))] and not fenced_blocks(unprompted, "p.md")[0].prompted


def test_heredocs_redirections_substitutions_and_placeholders():
    page = ("```sh\npython - <<'EOF'\nimport gpt1  # a comment of Python's\nEOF\n"
            "gpt1 generate --prompt - < prompt.txt > out.txt\n"
            "eval \"$(gpt1 profile profiles/paper.yaml) -n paper\"\ngit clone <this repository> && cd gpt1\n```\n")
    commands = markdown_commands(page)
    assert [command.words for command in commands] == [
        ("python", "-"), ("gpt1", "generate", "--prompt", "-"), ("gpt1", "profile", "profiles/paper.yaml"),
        ("eval", "$(gpt1 profile profiles/paper.yaml) -n paper"), ("git", "clone", "<this repository>"),
        ("cd", "gpt1")]
    assert commands[0].stdin == "import gpt1  # a comment of Python's\n"
    assert [command.line for command in commands] == [2, 5, 6, 6, 7, 7]


def test_opt_outs_other_blocks_and_history_are_left_out(tmp_path):
    page = ("<!-- not checked: needs a SLURM cluster -->\n\n```bash\nmake install-cluster\n```\n"
            "```yaml\nmake: nothing\n```\n```\nmake install-cluster\n```\n```bash\nmake repro\n```\n")
    assert words_of(page) == [(13, ("make", "repro"))]
    assert [block.opt_out for block in fenced_blocks(page, "page.md")] == ["needs a SLURM cluster", None, None, None]
    assert fenced_blocks("<!-- not checked -->\n```bash\nls\n```\n", "p.md")[0].opt_out == ""
    (tmp_path / "docs/history").mkdir(parents=True)
    (tmp_path / "README.md").write_text("```bash\nmake repro\n```\n")
    (tmp_path / "docs/history/old.md").write_text("```bash\nmake install-cluster\n```\n")
    assert [command.where for command in all_commands(tmp_path)] == ["README.md:2"]


def test_placeholders():
    assert all(map(is_placeholder, ["<experiment>", "seed<S>", "gs://…", "FOLDER", "results/METHOD/x", "$PWD/data"]))
    assert not any(map(is_placeholder, ["profiles/paper.yaml", "README.md", "Makefile", "gpu=4", "main"]))


# --- the checkers fail what has drifted, and pass what has not ---------------------------------------------------

def problems_of(line: str, project: Project) -> list[str]:
    return [problem for command in markdown_commands(f"```bash\n{line}\n```\n") for problem in check(command, project)]


@pytest.mark.parametrize("line, complaint", [
    ("make install-cluster", "no target `install-cluster`"),
    ("ATEN_CPU_CAPABILITY=avx2 make repro && make gpu-chek", "no target `gpu-chek`"),
    ("gpt1 --profile profiles/paper.yaml plan --gpu-count 8", "gpt1's parser refuses it"),
    ("gpt1 --profile profiles/nowhere.yaml plan", "profiles/nowhere.yaml: no such file"),
    ("gpt1 compare main", "gpt1's parser refuses it"),
    ("gpt1 finetune --method V --tsk T", "gpt1's parser refuses it"),
    ("gpt1 profile profiles/paper.yaml tools/gpu_check.py", "running it exited"),
    ("dvc exp rnu", "DVC's parser refuses it"),
    ("dvc exp run -S finetune.no_such_key=1", "has no key `finetune.no_such_key`"),
    ("dvc exp run -S +finetune.lr=1", "has `finetune.lr` already"),
    ("dvc exp run -S finetune.lr=fast", "bad value for 'finetune.lr'"),
    ("dvc exp run -S finetune.lr=0.001,0.002", "a sweep runs only with --queue"),
    ("dvc repro pretrian", "target pretrian: neither a stage"),
    ("dvc plots diff main x --targets results/pretrain/transformer/plot/loss.tsv", "neither a stage"),
    ("eval \"$(gpt1 profile profiles/paper.yaml) -n paper --no-such-flag\"", "DVC's parser refuses it"),
    ("snakemake --cores 1 --configfile profiles/nowhere.yaml", "no such file"),
    ("snakemake --cores 1 --cluster sbatch", "Snakemake's parser refuses it"),  # gone in Snakemake 8
    ("snakemake --cores 1 results/table9.csv", "target results/table9.csv: no rule makes it"),
    ("snakemake --workflow-profile workflow/profiles/pbs", "no such profile folder"),
    ("snakemake --cores 1 --set-resources pretrian:gpu=0", "no rule pretrian"),
    ("python -m gpt1.no_such_module", "no such module"),
    ("python tools/no_such_tool.py", "no such file"),
    ("python - <<'EOF'\nfrom gpt1.data.packaged import no_such_loader\nEOF", "no such name"),
    ("bash tests/cluster/no_such.sh", "no such file"),
    ("pytest tests/test_no_such.py::test_x", "no such file"),
    ("pip install -e no_such_folder/", "no such file"),
    ("cat requirements/no_such.txt", "no such file"),
    ("frobnicate --all", "no checker for `frobnicate`"),
])
def test_a_drifted_command_fails_its_check(line, complaint, project):
    problems = problems_of(line, project)
    assert any(complaint in problem for problem in problems), problems


@pytest.mark.parametrize("line", [
    "make -j 2 test PYTHON=python3.11",
    "gpt1 compare main <experiment>",
    "gpt1 finetune --method V --task T && gpt1 <stage> --help",  # placeholders, one where a choice is due
    "gpt1 plan --help",
    "gpt1 --profile profiles/tiny.yaml profile profiles/paper.yaml --yaml",
    "dvc exp run -S +data.local_paths.books=/data/books -S 'finetune.seeds=[1,2]' --queue -n books",
    "dvc exp run -S finetune.lr=0.001,0.002 --queue",
    "dvc repro user_files pretrain@lstm && dvc status dvc.yaml",
    "dvc plots show results/pretrain/lstm/plots/metrics/train/loss.tsv 'Pretraining validation loss'",
    "snakemake results/ablation.csv pretrain --cores 1 --configfile profiles/tiny.yaml --set-resources finetune:gpu=0",
    "python -m pytest tests/test_doc_commands.py::test_placeholders -q",
    "pytest -q -m gpu -n 2 --dist loadfile tests/test_gpu.py",
    "dvc queue start --jobs K && snakemake --cores N --configfile <file> && dvc add <file>",  # placeholders
    "python - <<'EOF'\nfrom gpt1.data.packaged import load_rt_polarity\nimport pandas\nEOF",
    "bash -c 'make test && ls tests/cluster'",
    "pip install 'dvc[s3]' -r requirements/lock.txt && pip install -e .",
    "sbatch --wrap 'echo hi' && ls <FOLDER>",
])
def test_a_current_command_passes_its_check(line, project):
    assert problems_of(line, project) == []
