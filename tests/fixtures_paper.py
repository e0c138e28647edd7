"""Tiny copies of the paper profile's upstream files, byte-for-byte in their real layouts.

Each constant maps a path inside the upstream archive (or folder) to its text. The rows are real-looking:
GLUE text keeps its stray double quotes (read with csv.QUOTE_NONE), MRPC's training file starts with a
UTF-8 byte-order mark and ends lines with CRLF, as Microsoft's file does.
"""

from __future__ import annotations

import csv
import io
import json
import tarfile
import zipfile
from pathlib import Path


def tsv(*rows: tuple[str, ...], newline: str = "\n") -> str:
    return "".join("\t".join(row) + newline for row in rows)


def zip_bytes(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text.encode("utf-8"))
    return buffer.getvalue()


def tar_gz_bytes(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, text in files.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def write_tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = Path(root) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))


# --- GLUE ------------------------------------------------------------------------------------------

COLA = {
    "CoLA/train.tsv": tsv(
        ("gj04", "1", "", "Our friends won't buy this analysis, let alone the next one we propose."),
        ("gj04", "0", "*", "They drank the pub."),
        ("clc95", "1", "", 'The "sailors" rode the breeze clear of the rocks.'),
        ("bc01", "1", "", "The more we study verbs, the crazier they get."),
    ),
    "CoLA/dev.tsv": tsv(
        ("gj04", "1", "", "The sailors rode the breeze clear of the rocks."),
        ("gj04", "0", "*", "The more we study verbs, the crazier get they."),
    ),
    "CoLA/test.tsv": tsv(("index", "sentence"), ("0", "Bill whistled past the house.")),
    "CoLA/original/raw/in_domain_train.tsv": tsv(("gj04", "1", "", "Not part of the source.")),
}

SST2 = {
    "SST-2/train.tsv": tsv(
        ("sentence", "label"),
        ("hide new secretions from the parental units ", "0"),
        ('the " funny " parts are n\'t ', "0"),
        ("that loves its characters and communicates something rather beautiful about human nature ", "1"),
        ("remains utterly satisfied to remain the same throughout ", "0"),
    ),
    "SST-2/dev.tsv": tsv(("sentence", "label"), ("it 's a charming and often affecting journey . ", "1"),
                         ("unflinchingly bleak and desperate ", "0")),
    "SST-2/test.tsv": tsv(("index", "sentence"), ("0", "uneasy mishmash of styles and genres .")),
}

MRPC_HEADER = ("Quality", "#1 ID", "#2 ID", "#1 String", "#2 String")
MRPC_TRAIN = "\ufeff" + tsv(
    MRPC_HEADER,
    ("1", "702876", "702977", 'Amrozi accused his brother , whom he called " the witness " , of deliberately '
     "distorting his evidence .", 'Referring to him as only " the witness " , Amrozi accused his brother of '
     "deliberately distorting his evidence ."),
    ("0", "2108705", "2108831", "Yucaipa owned Dominick 's before selling the chain to Safeway in 1998 for $ 2.5 "
     "billion .", "Yucaipa bought Dominick 's in 1995 for $ 693 million and sold it to Safeway for $ 1.8 billion "
     "in 1998 ."),
    ("1", "1330381", "1330521", "They had published an advertisement on the Internet on June 10 .",
     "On June 10 , the ship 's owners had published an advertisement on the Internet ."),
    ("0", "3344667", "3344648", "Around 0335 GMT , Tab shares were up 19 cents .",
     "Tab shares jumped 20 cents , or 4.6 % , to set a record closing high ."),
    newline="\r\n",
)
MRPC_TEST = tsv(
    MRPC_HEADER,
    ("1", "1089874", "1089925", "PCCW 's chief operating officer , Mike Butcher , will report directly to him .",
     "Current Chief Operating Officer Mike Butcher will report to Mr So ."),
    ("0", "3019446", "3019327", "The world 's two largest automakers said their sales declined .",
     "The world 's biggest automaker said its U.S. sales fell ."),
    newline="\r\n",
)
MRPC_DEV_IDS = tsv(("1330381", "1330521"), ("9999", "8888"))

STSB_HEADER = ("index", "genre", "filename", "year", "old_index", "source1", "source2", "sentence1", "sentence2",
               "score")
STSB = {
    "STS-B/train.tsv": tsv(
        STSB_HEADER,
        ("0", "main-captions", "MSRvid", "2012test", "0001", "none", "none", "A plane is taking off.",
         "An air plane is taking off.", "5.000"),
        ("1", "main-captions", "MSRvid", "2012test", "0004", "none", "none", "A man is playing a large flute.",
         "A man is playing a flute.", "3.800"),
        ("2", "main-news", "headlines", "2013", "0007", "none", "none", 'He said "no".', "The cat sat.",
         "0.000"),
    ),
    "STS-B/dev.tsv": tsv(STSB_HEADER, ("0", "main-captions", "MSRvid", "2012test", "0000", "none", "none",
                                       "A man with a hard hat is dancing.", "A man wearing a hard hat is dancing.",
                                       "5.000"),
                         ("1", "main-captions", "MSRvid", "2012test", "0002", "none", "none",
                          "A young child is riding a horse.", "A child is riding a horse.", "4.750")),
}

QQP_HEADER = ("id", "qid1", "qid2", "question1", "question2", "is_duplicate")
QQP = {
    "QQP/train.tsv": tsv(
        QQP_HEADER,
        ("133273", "213221", "213222", "How is the life of a math student? Could you describe your own experiences?",
         "Which level of prepration is enough for the exam jlpt5?", "0"),
        ("402555", "536040", "536041", 'How do I control my "horny" emotions?', "How do you control your horniness?",
         "1"),
        ("360472", "364011", "490273", "What causes stool color to change to yellow?",
         "What can cause stool to come out as little balls?", "0"),
    ),
    "QQP/dev.tsv": tsv(QQP_HEADER, ("201359", "303345", "303346", "Why are African-Americans so beautiful?",
                                    "Why are hispanics so beautiful?", "0")),
}

MNLI_TRAIN_HEADER = ("index", "promptID", "pairID", "genre", "sentence1_binary_parse", "sentence2_binary_parse",
                     "sentence1_parse", "sentence2_parse", "sentence1", "sentence2", "label1", "gold_label")
MNLI_DEV_HEADER = MNLI_TRAIN_HEADER[:11] + ("label2", "label3", "label4", "label5", "gold_label")


def _mnli_row(index: str, genre: str, premise: str, hypothesis: str, *labels: str) -> tuple[str, ...]:
    return (index, "31193", f"{index}n", genre, "( ( premise ) )", "( hypothesis )", "(ROOT (S premise))",
            "(ROOT (S hypothesis))", premise, hypothesis, *labels)


MNLI = {
    "MNLI/train.tsv": tsv(
        MNLI_TRAIN_HEADER,
        _mnli_row("0", "government", "Conceptually cream skimming has two basic dimensions - product and geography.",
                  "Product and geography are what make cream skimming work. ", "neutral", "neutral"),
        _mnli_row("1", "telephone", "you know during the season and i guess at at your level uh you lose them",
                  "You lose the things to the following level if the people recall.", "entailment", "entailment"),
        _mnli_row("2", "fiction", 'One of our number will carry out your "instructions" minutely.',
                  "A member of my team will execute your orders with immense precision.", "entailment",
                  "contradiction"),
    ),
    "MNLI/dev_matched.tsv": tsv(
        MNLI_DEV_HEADER,
        _mnli_row("0", "government", "The new rights are nice enough", "Everyone really likes the newest benefits ",
                  "neutral", "entailment", "neutral", "neutral", "neutral", "neutral"),
    ),
    "MNLI/dev_mismatched.tsv": tsv(
        MNLI_DEV_HEADER,
        _mnli_row("0", "letters", "Your contribution helped make it possible.", "Your contributions were of no help.",
                  "contradiction", "contradiction", "contradiction", "contradiction", "contradiction",
                  "contradiction"),
    ),
    "MNLI/test_matched.tsv": tsv(MNLI_DEV_HEADER[:10], _mnli_row("0", "government", "x", "y")),
    "MNLI/original/multinli_1.0_train.txt": "not extracted\n",
}

QNLI = {
    "QNLI/train.tsv": tsv(
        ("index", "question", "sentence", "label"),
        ("0", "When did the third Digimon series begin?", "Unlike the two seasons before it, the third season "
         "was more mature.", "not_entailment"),
        ("1", "Which missile batteries often have individual launchers?",
         "When MANPADS is operated by specialists, batteries may have several dozen teams.", "not_entailment"),
        ("2", "What two things does Popper argue Tarski's theory involves?",
         'He bases this on the notion of "truth" as correspondence.', "entailment"),
    ),
    "QNLI/dev.tsv": tsv(("index", "question", "sentence", "label"),
                        ("0", "What came into force after the new constitution was herald?",
                         "As of that day, the new constitution heralding the Second Republic came into force.",
                         "entailment")),
}

RTE = {
    "RTE/train.tsv": tsv(
        ("index", "sentence1", "sentence2", "label"),
        ("0", "No Weapons of Mass Destruction Found in Iraq Yet.", "Weapons of Mass Destruction Found in Iraq.",
         "not_entailment"),
        ("1", 'A place of sorrow, after Pope John Paul II died, became a place of "celebration".',
         "Pope Benedict XVI is the new leader of the Roman Catholic Church.", "not_entailment"),
        ("2", "Herceptin was already approved to treat the sickest breast cancer patients.",
         "Herceptin can be used to treat breast cancer.", "entailment"),
    ),
    "RTE/dev.tsv": tsv(("index", "sentence1", "sentence2", "label"),
                       ("0", "Dana Reeve, the widow of the actor Christopher Reeve, has died of lung cancer.",
                        "Christopher Reeve had an accident.", "not_entailment")),
}

# --- SNLI, SciTail, RACE, Story Cloze ----------------------------------------------------------------


def _snli(gold: str, premise: str, hypothesis: str) -> str:
    return json.dumps({"annotator_labels": [gold], "captionID": "3416050480.jpg#4", "gold_label": gold,
                       "pairID": "3416050480.jpg#4r1n", "sentence1": premise, "sentence1_binary_parse": "( x )",
                       "sentence1_parse": "(ROOT x)", "sentence2": hypothesis, "sentence2_binary_parse": "( y )",
                       "sentence2_parse": "(ROOT y)"}) + "\n"


SNLI = {
    "snli_1.0/snli_1.0_train.jsonl": _snli("neutral", "A person on a horse jumps over a broken down airplane.",
                                           "A person is training his horse for a competition.")
    + _snli("contradiction", "A person on a horse jumps over a broken down airplane.",
            "A person is at a diner, ordering an omelette.")
    + _snli("-", "Two women are embracing.", "The sisters are hugging.")
    + _snli("entailment", "Children smiling and waving at camera", "There are children present"),
    "snli_1.0/snli_1.0_dev.jsonl": _snli("neutral", "Two women are embracing while holding to go packages.",
                                         "The sisters are hugging goodbye."),
    "snli_1.0/snli_1.0_test.jsonl": _snli("contradiction", "This church choir sings to the masses.",
                                          "The church has cracks in the ceiling.")
    + _snli("-", "A woman with a green headscarf.", "The woman is young."),
    "snli_1.0/snli_1.0_train.txt": "not extracted\n",
    "__MACOSX/snli_1.0/._snli_1.0_train.jsonl": "resource fork\n",
}

SCITAIL = {
    "SciTailV1.1/tsv_format/scitail_1.0_train.tsv": tsv(
        ("Pluto rotates once on its axis every 6.39 Earth days;", "Earth rotates on its axis once times in one day.",
         "neutral"),
        ('Glaciers "carve" the land.', "Glaciers shape the landscape.", "entails"),
        ("The wind is air in motion.", "Wind is moving air.", "entails"),
    ),
    "SciTailV1.1/tsv_format/scitail_1.0_dev.tsv": tsv(("Cells divide.", "Cells split in mitosis.", "neutral")),
    "SciTailV1.1/tsv_format/scitail_1.0_test.tsv": tsv(("Ice melts at 0 C.", "Ice melts when warm.", "entails")),
    "SciTailV1.1/snli_format/scitail_1.0_train.txt": "not extracted\n",
}


def race_passage(article: str, questions: list[str], options: list[list[str]], answers: list[str],
                 ident: str) -> str:
    return json.dumps({"answers": answers, "options": options, "questions": questions, "article": article,
                       "id": ident})


RACE = {
    "RACE/train/middle/1.txt": race_passage(
        "Tom has a dog. It is black.", ["What colour is the dog?", "The dog belongs to _ ."],
        [["red", "white", "black", "blue"], ["Tom", "Ann", "Bob", "nobody"]], ["C", "A"], "middle1.txt"),
    "RACE/train/high/7.txt": race_passage(
        "The museum opens at nine.", ["When does the museum open?"], [["8:00", "8:30", "9:30", "9:00"]], ["D"],
        "high7.txt"),
    "RACE/dev/middle/2.txt": race_passage(
        "Mary likes tea.", ["What does Mary like?"], [["coffee", "tea", "milk", "juice"]], ["B"], "middle2.txt"),
    "RACE/test/high/3.txt": race_passage(
        "It rained all day.", ["How was the weather?"], [["rainy", "sunny", "windy", "snowy"]], ["A"], "high3.txt"),
}

STORY_HEADER = ["InputStoryid", "InputSentence1", "InputSentence2", "InputSentence3", "InputSentence4",
                "RandomFifthSentenceQuiz1", "RandomFifthSentenceQuiz2", "AnswerRightEnding"]


def story_csv(*rows: list[str]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(STORY_HEADER)
    writer.writerows(rows)
    return buffer.getvalue()


STORY_VAL = "cloze_test_val__spring2016 - cloze_test_ALL_val.csv"
STORY_TEST = "cloze_test_test__spring2016 - cloze_test_ALL_test.csv"
STORY_CLOZE = {
    STORY_VAL: story_csv(
        ["138d5bfb-05cc-41e3-bf2c-fa85ebad14e2", "Rick grew up in a troubled household.",
         "He never found good support in family, and turned to gangs.", "It wasn't long before Rick got shot.",
         'The incident caused him to turn a new leaf, "for good".', "He is happy now.", "He joined a gang.", "1"],
        ["bff9f820-9605-4875-b9af-fe6f14d04256", "Laverne needs to prepare something.", "She decides to bake.",
         "She bakes a pie.", "She brings it to her friends.", "Her friends love it.", "Her friends hate pie.", "1"],
        ["e8f628d5-9f97-40ed-8611-fc0e774673c4", "Sarah had been dreaming of visiting Europe.",
         "She saved money.", "She bought a ticket.", "She flew to Paris.", "Sarah never left home.",
         "Sarah loved Paris.", "2"],
    ),
    STORY_TEST: story_csv(
        ["b929f263-1dcd-4a0b-b267-5d5ff2fe65bb", "My friends all love to go to the club to dance.",
         "They think it's a lot of fun and always invite.", "I finally decided to tag along last Saturday.",
         "I danced terribly and broke a friend's toe.", "My friends decided to keep inviting me out.",
         "The next weekend, I was asked to please stay home.", "2"],
    ),
    "README.txt": "not a story file\n",
}
