"""The paper profile end to end: upstream-format archives served over local HTTP, fetched, loaded, split."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import http.server
import re
import threading
from collections import Counter

import pytest

from gpt1.errors import UserError
from gpt1.data import registry
from gpt1.data.paper_sources import PAPER_SOURCES
from gpt1.data.paper_tasks import PAPER_TASKS, load_books
from gpt1.data.records import ClassificationExample as C
from gpt1.data.records import EntailmentExample as E
from gpt1.data.records import MultipleChoiceExample as M
from gpt1.data.records import SimilarityExample as S
from gpt1.data.records import TaskSpec
from gpt1.data.sources import LocalFolder, Source, fetch_source
from gpt1.data.downloads import UrlArchive
from gpt1.data.tasks import make_splits

try:
    from tests import fixtures_paper as fx
except ImportError:  # tests/ is not a package: pytest put it on sys.path itself
    import fixtures_paper as fx


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """(folder, base URL) of an HTTP server on 127.0.0.1 that serves the folder."""
    root = tmp_path_factory.mktemp("served")
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def served(server, source: Source, payload: bytes, sha256: str | None = None) -> Source:
    """`source` with its archive replaced by `payload` served locally under the upstream file name."""
    root, base = server
    filename = source.archive.filename
    (root / source.name).mkdir(exist_ok=True)
    (root / source.name / filename).write_bytes(payload)
    archive = UrlArchive(url=f"{base}/{source.name}/{filename}", filename=filename,
                         sha256=sha256 or hashlib.sha256(payload).hexdigest())
    return dataclasses.replace(source, archive=archive)


# --- the catalogue ---------------------------------------------------------------------------------

PAPER_FAMILY_AND_METRICS = {
    "cola": ("classification", ("matthews",)), "sst2": ("classification", ("accuracy",)),
    "mrpc": ("similarity", ("f1", "accuracy")), "qqp": ("similarity", ("f1", "accuracy")),
    "stsb": ("similarity", ("pearson", "spearman")),
    **{task: ("entailment", ("accuracy",)) for task in ("mnli", "mnli_mm", "qnli", "rte", "snli", "scitail")},
    "race": ("multiple_choice", ("accuracy",)), "story_cloze": ("multiple_choice", ("accuracy",)),
}


def test_every_task_has_the_papers_family_metrics_and_known_sources():
    assert {name: (t.spec.family, t.spec.metrics) for name, t in PAPER_TASKS.items()} == PAPER_FAMILY_AND_METRICS
    for name, task in PAPER_TASKS.items():
        assert task.spec.name == name
        assert set(task.sources) <= set(PAPER_SOURCES), name
    assert PAPER_TASKS["stsb"].spec.is_regression and not PAPER_TASKS["mrpc"].spec.is_regression
    assert PAPER_TASKS["mrpc"].spec.labels == ("not_paraphrase", "paraphrase")
    assert PAPER_TASKS["mnli"].spec.labels == ("entailment", "neutral", "contradiction")


def test_every_url_source_is_pinned_and_described():
    url_sources = [s for s in PAPER_SOURCES.values() if isinstance(s.archive, UrlArchive)]
    assert len(url_sources) == 14
    for source in url_sources:
        assert re.fullmatch(r"[0-9a-f]{64}", source.archive.sha256), source.name
        assert source.archive.url.rsplit("/", 1)[1] == source.archive.filename
        assert source.licence and source.description, source.name
    filenames = [s.archive.filename for s in url_sources]
    assert len(set(filenames)) == len(filenames)  # one cache file per archive
    assert PAPER_SOURCES["glue_cola"].archive.url == "https://dl.fbaipublicfiles.com/glue/data/CoLA.zip"
    assert isinstance(PAPER_SOURCES["story_cloze"].archive, LocalFolder)
    assert PAPER_SOURCES["books"].archive == LocalFolder(key="books") and "books1" in [s.name for s in url_sources]


# --- each task end to end --------------------------------------------------------------------------

MRPC_ROWS = [S(a='Amrozi accused his brother , whom he called " the witness " , of deliberately distorting his '
                 "evidence .", b='Referring to him as only " the witness " , Amrozi accused his brother of '
                 "deliberately distorting his evidence .", label=1),
             S(a="Yucaipa owned Dominick 's before selling the chain to Safeway in 1998 for $ 2.5 billion .",
               b="Yucaipa bought Dominick 's in 1995 for $ 693 million and sold it to Safeway for $ 1.8 billion in "
                 "1998 .", label=0),
             S(a="They had published an advertisement on the Internet on June 10 .",
               b="On June 10 , the ship 's owners had published an advertisement on the Internet .", label=1),
             S(a="Around 0335 GMT , Tab shares were up 19 cents .",
               b="Tab shares jumped 20 cents , or 4.6 % , to set a record closing high .", label=0)]
MRPC_EXPECTED = {
    "train": [MRPC_ROWS[0], MRPC_ROWS[1], MRPC_ROWS[3]], "dev": [MRPC_ROWS[2]],
    "test": [S(a="PCCW 's chief operating officer , Mike Butcher , will report directly to him .",
               b="Current Chief Operating Officer Mike Butcher will report to Mr So .", label=1),
             S(a="The world 's two largest automakers said their sales declined .",
               b="The world 's biggest automaker said its U.S. sales fell .", label=0)],
}
MNLI_TRAIN = [E("Conceptually cream skimming has two basic dimensions - product and geography.",
                "Product and geography are what make cream skimming work. ", 1),
              E("you know during the season and i guess at at your level uh you lose them",
                "You lose the things to the following level if the people recall.", 0),
              E('One of our number will carry out your "instructions" minutely.',
                "A member of my team will execute your orders with immense precision.", 2)]
STORY = [M("Rick grew up in a troubled household. He never found good support in family, and turned to gangs. "
           'It wasn\'t long before Rick got shot. The incident caused him to turn a new leaf, "for good".',
           ("He is happy now.", "He joined a gang."), 0),
         M("Laverne needs to prepare something. She decides to bake. She bakes a pie. She brings it to her friends.",
           ("Her friends love it.", "Her friends hate pie."), 0),
         M("Sarah had been dreaming of visiting Europe. She saved money. She bought a ticket. She flew to Paris.",
           ("Sarah never left home.", "Sarah loved Paris."), 1)]

# task -> ({source name: archive bytes}, the labelled splits `load` must return, exactly and in file order)
CASES = {
    "cola": ({"glue_cola": fx.zip_bytes(fx.COLA)}, {
        "train": [C("Our friends won't buy this analysis, let alone the next one we propose.", 1),
                  C("They drank the pub.", 0), C('The "sailors" rode the breeze clear of the rocks.', 1),
                  C("The more we study verbs, the crazier they get.", 1)],
        "dev": [C("The sailors rode the breeze clear of the rocks.", 1),
                C("The more we study verbs, the crazier get they.", 0)]}),
    "sst2": ({"glue_sst2": fx.zip_bytes(fx.SST2)}, {
        "train": [C("hide new secretions from the parental units ", 0), C('the " funny " parts are n\'t ', 0),
                  C("that loves its characters and communicates something rather beautiful about human nature ", 1),
                  C("remains utterly satisfied to remain the same throughout ", 0)],
        "dev": [C("it 's a charming and often affecting journey . ", 1), C("unflinchingly bleak and desperate ", 0)]}),
    "mrpc": ({"glue_mrpc_train": fx.MRPC_TRAIN.encode(), "glue_mrpc_test": fx.MRPC_TEST.encode(),
              "glue_mrpc_dev_ids": fx.MRPC_DEV_IDS.encode()}, MRPC_EXPECTED),
    "stsb": ({"glue_stsb": fx.zip_bytes(fx.STSB)}, {
        "train": [S("A plane is taking off.", "An air plane is taking off.", 5.0),
                  S("A man is playing a large flute.", "A man is playing a flute.", 3.8),
                  S('He said "no".', "The cat sat.", 0.0)],
        "dev": [S("A man with a hard hat is dancing.", "A man wearing a hard hat is dancing.", 5.0),
                S("A young child is riding a horse.", "A child is riding a horse.", 4.75)]}),
    "qqp": ({"glue_qqp": fx.zip_bytes(fx.QQP)}, {
        "train": [S("How is the life of a math student? Could you describe your own experiences?",
                    "Which level of prepration is enough for the exam jlpt5?", 0),
                  S('How do I control my "horny" emotions?', "How do you control your horniness?", 1),
                  S("What causes stool color to change to yellow?",
                    "What can cause stool to come out as little balls?", 0)],
        "dev": [S("Why are African-Americans so beautiful?", "Why are hispanics so beautiful?", 0)]}),
    "mnli": ({"glue_mnli": fx.zip_bytes(fx.MNLI)}, {
        "train": MNLI_TRAIN,
        "dev": [E("The new rights are nice enough", "Everyone really likes the newest benefits ", 1)]}),
    "mnli_mm": ({"glue_mnli": fx.zip_bytes(fx.MNLI)}, {
        "train": MNLI_TRAIN,
        "dev": [E("Your contribution helped make it possible.", "Your contributions were of no help.", 2)]}),
    "qnli": ({"glue_qnli": fx.zip_bytes(fx.QNLI)}, {
        "train": [E("When did the third Digimon series begin?",
                    "Unlike the two seasons before it, the third season was more mature.", 1),
                  E("Which missile batteries often have individual launchers?",
                    "When MANPADS is operated by specialists, batteries may have several dozen teams.", 1),
                  E("What two things does Popper argue Tarski's theory involves?",
                    'He bases this on the notion of "truth" as correspondence.', 0)],
        "dev": [E("What came into force after the new constitution was herald?",
                  "As of that day, the new constitution heralding the Second Republic came into force.", 0)]}),
    "rte": ({"glue_rte": fx.zip_bytes(fx.RTE)}, {
        "train": [E("No Weapons of Mass Destruction Found in Iraq Yet.",
                    "Weapons of Mass Destruction Found in Iraq.", 1),
                  E('A place of sorrow, after Pope John Paul II died, became a place of "celebration".',
                    "Pope Benedict XVI is the new leader of the Roman Catholic Church.", 1),
                  E("Herceptin was already approved to treat the sickest breast cancer patients.",
                    "Herceptin can be used to treat breast cancer.", 0)],
        "dev": [E("Dana Reeve, the widow of the actor Christopher Reeve, has died of lung cancer.",
                  "Christopher Reeve had an accident.", 1)]}),
    "snli": ({"snli": fx.zip_bytes(fx.SNLI)}, {
        "train": [E("A person on a horse jumps over a broken down airplane.",
                    "A person is training his horse for a competition.", 1),
                  E("A person on a horse jumps over a broken down airplane.",
                    "A person is at a diner, ordering an omelette.", 2),
                  E("Children smiling and waving at camera", "There are children present", 0)],
        "dev": [E("Two women are embracing while holding to go packages.", "The sisters are hugging goodbye.", 1)],
        "test": [E("This church choir sings to the masses.", "The church has cracks in the ceiling.", 2)]}),
    "scitail": ({"scitail": fx.zip_bytes(fx.SCITAIL)}, {
        "train": [E("Pluto rotates once on its axis every 6.39 Earth days;",
                    "Earth rotates on its axis once times in one day.", 1),
                  E('Glaciers "carve" the land.', "Glaciers shape the landscape.", 0),
                  E("The wind is air in motion.", "Wind is moving air.", 0)],
        "dev": [E("Cells divide.", "Cells split in mitosis.", 1)],
        "test": [E("Ice melts at 0 C.", "Ice melts when warm.", 0)]}),
    "race": ({"race": fx.tar_gz_bytes(fx.RACE)}, {
        "train": [M("The museum opens at nine. When does the museum open?", ("8:00", "8:30", "9:30", "9:00"), 3),
                  M("Tom has a dog. It is black. What colour is the dog?", ("red", "white", "black", "blue"), 2),
                  M("Tom has a dog. It is black. The dog belongs to _ .", ("Tom", "Ann", "Bob", "nobody"), 0)],
        "dev": [M("Mary likes tea. What does Mary like?", ("coffee", "tea", "milk", "juice"), 1)],
        "test": [M("It rained all day. How was the weather?", ("rainy", "sunny", "windy", "snowy"), 0)]}),
}


def check_splits(found, splits):
    """make_splits keeps upstream test (or dev as test) verbatim and only reshuffles/carves train."""
    assert splits["test"] == (found["test"] if "test" in found else found["dev"])
    if "test" in found and "dev" in found:
        assert splits["dev"] == found["dev"] and Counter(splits["train"]) == Counter(found["train"])
    else:  # dev carved from train
        assert splits["dev"] and splits["train"]
        assert Counter(splits["train"] + splits["dev"]) == Counter(found["train"])


@pytest.mark.parametrize("task", list(CASES))
def test_task_fetched_over_http_loads_the_exact_records(task, server, tmp_path):
    payloads, expected = CASES[task]
    raw = tmp_path / "raw"
    for name, payload in payloads.items():
        fetch_source(served(server, PAPER_SOURCES[name], payload), cache_dir=tmp_path / "cache", raw_dir=raw)
    found = PAPER_TASKS[task].load(raw)
    assert found == expected
    check_splits(found, make_splits(found, task, seed=0, dev_fraction=0.25, test_fraction=0.25))


def test_only_the_listed_members_are_extracted(server, tmp_path):
    for name, files in (("glue_mnli", fx.MNLI), ("snli", fx.SNLI)):
        fetch_source(served(server, PAPER_SOURCES[name], fx.zip_bytes(files)), tmp_path / "cache", tmp_path / "raw")
    files = sorted(p.relative_to(tmp_path / "raw").as_posix() for p in (tmp_path / "raw").rglob("*") if p.is_file())
    assert files == ["glue_mnli/MNLI/dev_matched.tsv", "glue_mnli/MNLI/dev_mismatched.tsv", "glue_mnli/MNLI/train.tsv",
                     "snli/snli_1.0/snli_1.0_dev.jsonl", "snli/snli_1.0/snli_1.0_test.jsonl",
                     "snli/snli_1.0/snli_1.0_train.jsonl"]


def test_mrpc_loader_follows_glues_split_recipe(tmp_path):
    """Independent of fetching: train minus GLUE's dev ids, those ids as dev, Microsoft's labelled test file."""
    fx.write_tree(tmp_path, {"glue_mrpc_train/msr_paraphrase_train.txt": fx.MRPC_TRAIN,
                             "glue_mrpc_test/msr_paraphrase_test.txt": fx.MRPC_TEST,
                             "glue_mrpc_dev_ids/mrpc_dev_ids.tsv": fx.MRPC_DEV_IDS})
    assert PAPER_TASKS["mrpc"].load(tmp_path) == MRPC_EXPECTED


def test_story_cloze_from_a_registered_folder(tmp_path):
    folder = tmp_path / "downloads"
    fx.write_tree(folder, fx.STORY_CLOZE)
    copied = fetch_source(PAPER_SOURCES["story_cloze"], tmp_path / "cache", tmp_path / "raw",
                          local_paths={"story_cloze": folder})
    assert sorted(copied) == sorted([fx.STORY_TEST, fx.STORY_VAL])
    found = PAPER_TASKS["story_cloze"].load(tmp_path / "raw")
    test = [M("My friends all love to go to the club to dance. They think it's a lot of fun and always invite. "
              "I finally decided to tag along last Saturday. I danced terribly and broke a friend's toe.",
              ("My friends decided to keep inviting me out.", "The next weekend, I was asked to please stay home."), 1)]
    assert found == {"train": STORY, "test": test}
    check_splits(found, make_splits(found, "story_cloze", seed=0, dev_fraction=0.34, test_fraction=0.1))


def test_books_from_a_folder_and_from_the_books1_archive(server, tmp_path):
    folder = tmp_path / "my_books"
    fx.write_tree(folder, {"a.txt": "First book.\n", "shelf/b.txt": "Second book.\n", "empty.txt": " \n",
                           "notes.md": "not a book"})
    fetch_source(PAPER_SOURCES["books"], tmp_path / "cache", tmp_path / "raw", local_paths={"books": folder})
    assert list(load_books(tmp_path / "raw")) == ["First book.\n", "Second book.\n"]

    archive = fx.tar_gz_bytes({"books1/epubtxt/z.epub.txt": "Zed.\n", "books1/epubtxt/a.epub.txt": "Ay.\n",
                               "books1/2020-08-27-epub_urls.txt": "https://example.invalid/a.epub\n"})
    fetch_source(served(server, PAPER_SOURCES["books1"], archive), tmp_path / "cache", tmp_path / "raw1")
    # data.corpus `books1` selects it: its source is downloaded, its part reads the .epub.txt books
    books1 = registry.CORPORA["books1"]
    assert books1.sources == ("books1",) and list(books1.read(tmp_path / "raw1")) == ["Ay.\n", "Zed.\n"]
    assert [source.name for source in registry.sources_needed(["books1"], [])] == ["books1"]


def test_books_that_are_not_utf8_are_named(tmp_path):
    (tmp_path / "books").mkdir()
    (tmp_path / "books" / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(UserError, match=r"latin\.txt: not UTF-8"):
        list(load_books(tmp_path))


# --- errors ----------------------------------------------------------------------------------------


def test_checksum_mismatch_over_http_keeps_nothing(server, tmp_path):
    source = served(server, PAPER_SOURCES["glue_rte"], fx.zip_bytes(fx.RTE), sha256="0" * 64)
    with pytest.raises(UserError, match=r"checksum mismatch for http://127\.0\.0\.1:\d+/glue_rte/RTE\.zip"):
        fetch_source(source, cache_dir=tmp_path / "cache", raw_dir=tmp_path / "raw")
    assert not list((tmp_path / "cache").iterdir()) and not (tmp_path / "raw").exists()


def _edit(files: dict[str, str], name: str, old: str, new: str) -> dict[str, str]:
    assert old in files[name]
    return {**files, name: files[name].replace(old, new)}


RACE_BAD_OPTIONS = fx.race_passage("Text.", ["Q?"], [["a", "b", "c"]], ["A"], "x")
# (source folder, files as upstream lays them out, the file that is wrong, the start of the expected message)
MALFORMED = {
    "cola": ("glue_cola", _edit(fx.COLA, "CoLA/train.tsv", "clc95\t1", "clc95\tx"), "CoLA/train.tsv",
             ":3: unknown label 'x' (expected 0 or 1)"),
    "cola_short_row": ("glue_cola", _edit(fx.COLA, "CoLA/train.tsv", "0\t*\tThey", "0\tThey"), "CoLA/train.tsv",
                       ":2: 3 tab-separated fields, expected 4 (source, label, original label, sentence)"),
    "sst2": ("glue_sst2", _edit(fx.SST2, "SST-2/dev.tsv", "desperate \t0", "desperate "), "SST-2/dev.tsv",
             ":3: 1 tab-separated fields, expected 2 as in the header"),
    "stsb": ("glue_stsb", _edit(fx.STSB, "STS-B/train.tsv", "\t3.800", "\tfive"), "STS-B/train.tsv",
             ":3: bad number 'five' for the similarity score (expected 0 to 5)"),
    "qqp": ("glue_qqp", _edit(fx.QQP, "QQP/dev.tsv", "beautiful?\t0", "beautiful?\t2"), "QQP/dev.tsv",
            ":2: unknown label '2' (expected 0 or 1)"),
    "mnli": ("glue_mnli", _edit(fx.MNLI, "MNLI/dev_matched.tsv", "\tneutral\n", "\tmaybe\n"), "MNLI/dev_matched.tsv",
             ":2: unknown label 'maybe' (expected entailment, neutral or contradiction)"),
    "rte": ("glue_rte", _edit(fx.RTE, "RTE/train.tsv", "Herceptin can be used to treat breast cancer.", ""),
            "RTE/train.tsv", ":4: the sentence2 is missing or empty"),
    "snli": ("snli", _edit(fx.SNLI, "snli_1.0/snli_1.0_train.jsonl", '{"annotator_labels": ["contradiction"]',
                           "{oops"), "snli_1.0/snli_1.0_train.jsonl", ":2: not a JSON object"),
    "snli_label": ("snli", _edit(fx.SNLI, "snli_1.0/snli_1.0_dev.jsonl", '"gold_label": "neutral"',
                                 '"gold_label": "x"'), "snli_1.0/snli_1.0_dev.jsonl",
                   ":1: unknown label 'x' (expected entailment, neutral or contradiction)"),
    "scitail": ("scitail", _edit(fx.SCITAIL, "SciTailV1.1/tsv_format/scitail_1.0_test.tsv", "entails", "contradicts"),
                "SciTailV1.1/tsv_format/scitail_1.0_test.tsv",
                ":1: unknown label 'contradicts' (expected entails or neutral)"),
    "scitail_short_row": ("scitail", _edit(fx.SCITAIL, "SciTailV1.1/tsv_format/scitail_1.0_dev.tsv", "\tneutral", ""),
                          "SciTailV1.1/tsv_format/scitail_1.0_dev.tsv",
                          ":1: 2 tab-separated fields, expected 3 (premise, hypothesis, label)"),
    "race": ("race", _edit(fx.RACE, "RACE/train/middle/1.txt", '["C", "A"]', '["C", "E"]'), "RACE/train/middle/1.txt",
             ": question 2: unknown answer 'E' (expected A, B, C or D)"),
    "race_options": ("race", {**fx.RACE, "RACE/dev/middle/2.txt": RACE_BAD_OPTIONS}, "RACE/dev/middle/2.txt",
                     ": question 1: expected 4 answer options, got ['a', 'b', 'c']"),
    "story_cloze": ("story_cloze", _edit(fx.STORY_CLOZE, fx.STORY_VAL, "Sarah loved Paris.,2", "Sarah loved Paris.,3"),
                    fx.STORY_VAL, ":4: unknown label '3' (expected 1 or 2)"),
    "mrpc": ("glue_mrpc_test", {"msr_paraphrase_test.txt": fx.MRPC_TEST.replace("\r\n0\t", "\r\nno\t")},
             "msr_paraphrase_test.txt", ":3: unknown label 'no' (expected 0 or 1)"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_rows_name_the_file_and_row(case, tmp_path):
    folder, files, bad_file, message = MALFORMED[case]
    fx.write_tree(tmp_path / folder, files)
    if case == "mrpc":
        fx.write_tree(tmp_path, {"glue_mrpc_train/msr_paraphrase_train.txt": fx.MRPC_TRAIN,
                                 "glue_mrpc_dev_ids/mrpc_dev_ids.tsv": fx.MRPC_DEV_IDS})
    task = case if case in PAPER_TASKS else case.split("_")[0]  # cases are named <task> or <task>_<variant>
    with pytest.raises(UserError) as error:
        PAPER_TASKS[task].load(tmp_path)
    assert str(error.value).startswith(f"{tmp_path / folder / bad_file}{message}")


def test_a_missing_file_says_to_download(tmp_path):
    with pytest.raises(UserError, match=r"glue_cola/CoLA/train\.tsv is missing; run `gpt1 download`"):
        PAPER_TASKS["cola"].load(tmp_path)


def test_mnli_mm_is_scored_with_mnlis_model_and_its_splits_are_cut_like_mnlis(server, tmp_path):
    """One MNLI model for both sets: mnli_mm names mnli's model, and its train and dev splits are mnli's (the same
    rows, carved with mnli's shuffle), so its dev and test hold no row that model trained on."""
    fetch_source(served(server, PAPER_SOURCES["glue_mnli"], fx.zip_bytes(fx.MNLI)), tmp_path / "cache", tmp_path / "raw")
    extra = [E(f"Premise number {i}.", f"Hypothesis number {i}.", i % 3) for i in range(37)]  # enough to carve from
    splits = {}
    for task in ("mnli", "mnli_mm"):
        found = PAPER_TASKS[task].load(tmp_path / "raw")
        found["train"] += extra
        splits[task] = make_splits(found, task, seed=0, dev_fraction=0.25, test_fraction=0.25,
                                   carve_as=PAPER_TASKS[task].spec.model_of)
    assert PAPER_TASKS["mnli_mm"].spec.model_of == "mnli" and PAPER_TASKS["mnli"].spec.model_of is None
    assert splits["mnli_mm"]["train"] == splits["mnli"]["train"] and splits["mnli_mm"]["dev"] == splits["mnli"]["dev"]
    assert splits["mnli_mm"]["test"] == CASES["mnli_mm"][1]["dev"] != splits["mnli"]["test"]  # the mismatched file
    trained_on = set(splits["mnli"]["train"])
    assert not trained_on & set(splits["mnli_mm"]["dev"] + splits["mnli_mm"]["test"])
    # without mnli's shuffle, mnli_mm's dev would be other rows of the file mnli trains on
    own = make_splits(PAPER_TASKS["mnli_mm"].load(tmp_path / "raw") | {"train": MNLI_TRAIN + extra}, "mnli_mm", seed=0,
                      dev_fraction=0.25, test_fraction=0.25)
    assert trained_on & set(own["dev"])


def test_model_of_is_written_only_where_set():
    """A task that trains its own model keeps the task.json it always had; mnli_mm's says whose model scores it."""
    assert "model_of" not in PAPER_TASKS["mnli"].spec.to_json()
    for task in ("mnli", "mnli_mm"):
        spec = PAPER_TASKS[task].spec
        assert TaskSpec.from_dict(json.loads(spec.to_json())) == spec
