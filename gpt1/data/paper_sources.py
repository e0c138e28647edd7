"""The paper profile's sources: where GPT-1's data lives upstream, each pinned to its sha256.

These sources need the internet (or a folder the user registered for), so they are not the offline
default. Every URL is pinned to the sha256 that huggingface/datasets published for that exact URL in
`datasets/{glue,snli,scitail,race,bookcorpusopen}/dataset_infos.json` (`download_checksums`). For GLUE,
MRPC and SNLI the same values appear in TensorFlow Datasets' `url_checksums/{glue,snli}.txt` (GLUE there
under its older firebase URLs: the same bytes). MRPC comes as Microsoft's two TSV files as SentEval
mirrors them plus GLUE's list of dev ids, which is exactly what GLUE's download script combines.
"""

from __future__ import annotations

from gpt1.data.sources import LocalFolder, Source
from gpt1.data.downloads import UrlArchive

GLUE_URL = "https://dl.fbaipublicfiles.com/glue/data/"  # where GLUE's download_glue_data.py fetches from
SENTEVAL_URL = "https://dl.fbaipublicfiles.com/senteval/senteval_data/"


def _glue(name: str, zip_name: str, folder: str, files: tuple[str, ...], sha256: str, licence: str,
          description: str) -> Source:
    archive = UrlArchive(url=GLUE_URL + zip_name, filename=zip_name, sha256=sha256)
    return Source(name=name, archive=archive, members=tuple(f"{folder}/{f}" for f in files), licence=licence,
                  description=description)


def _file(name: str, url: str, sha256: str, licence: str, description: str) -> Source:
    """A single plain file (not an archive); it lands as `data/raw/<name>/<its file name>`."""
    filename = url.rsplit("/", 1)[1]
    return Source(name=name, archive=UrlArchive(url=url, filename=filename, sha256=sha256), members=(filename,),
                  licence=licence, description=description)


_MRPC_LICENCE = "Microsoft Research Paraphrase Corpus terms (research use); SentEval's copy of Microsoft's files"
_SOURCE_LIST = [
    _glue("glue_cola", "CoLA.zip", "CoLA", ("train.tsv", "dev.tsv"),
          "f212fcd832b8f7b435fb991f101abf89f96b933ab400603bf198960dfc32cbff",
          "no licence stated; example sentences quoted from the linguistics literature (research use)",
          "CoLA, Corpus of Linguistic Acceptability (Warstadt et al. 2018), GLUE release"),
    _glue("glue_sst2", "SST-2.zip", "SST-2", ("train.tsv", "dev.tsv"),
          "d67e16fb55739c1b32cdce9877596db1c127dc322d93c082281f64057c16deaa",
          "no licence stated; Rotten Tomatoes review sentences (research use)",
          "SST-2, Stanford Sentiment Treebank, binary (Socher et al. 2013), GLUE release"),
    _file("glue_mrpc_train", SENTEVAL_URL + "msr_paraphrase_train.txt",
          "60a9b09084528f0673eedee2b69cb941920f0b8cd0eeccefc464a98768457f89", _MRPC_LICENCE,
          "MRPC, Microsoft Research Paraphrase Corpus (Dolan & Brockett 2005): training pairs, labelled"),
    _file("glue_mrpc_test", SENTEVAL_URL + "msr_paraphrase_test.txt",
          "a04e271090879aaba6423d65b94950c089298587d9c084bf9cd7439bd785f784", _MRPC_LICENCE,
          "MRPC test pairs, labelled (the pairs of GLUE's MRPC test set)"),
    _file("glue_mrpc_dev_ids", GLUE_URL + "mrpc_dev_ids.tsv",
          "971d7767d81b997fd9060ade0ec23c4fc31cbb226a55d1bd4a1bac474eb81dc7", "GLUE (split definition only)",
          "GLUE's MRPC dev split: the (#1 ID, #2 ID) pairs taken out of msr_paraphrase_train.txt"),
    _glue("glue_stsb", "STS-B.zip", "STS-B", ("train.tsv", "dev.tsv"),
          "e60a6393de5a8b5b9bac5020a1554b54e3691f9d600b775bd131e613ac179c85",
          "per-source terms of the SemEval STS 2012-2017 data (research use)",
          "STS-B, Semantic Textual Similarity Benchmark (Cer et al. 2017), scores 0-5, GLUE release"),
    _glue("glue_qqp", "QQP-clean.zip", "QQP", ("train.tsv", "dev.tsv"),
          "40e7c862c04eb26ee04b67fd900e76c45c6ba8e6d8fab4f8f1f8072a1a3fbae0",
          "Quora Terms of Service (non-commercial use)",
          "QQP, Quora Question Pairs (Iyer et al. 2017), GLUE's cleaned release"),
    _glue("glue_mnli", "MNLI.zip", "MNLI", ("train.tsv", "dev_matched.tsv", "dev_mismatched.tsv"),
          "e7c1d896d26ed6caf700110645df426cc2d8ebf02a5ab743d5a5c68ac1c83633",
          "OANC licence for most genres; fiction under several permissive licences (incl. CC BY-SA 3.0)",
          "MultiNLI, Multi-Genre Natural Language Inference (Williams et al. 2018), GLUE release"),
    _glue("glue_qnli", "QNLIv2.zip", "QNLI", ("train.tsv", "dev.tsv"),
          "e634e78627a29adaecd4f955359b22bf5e70f2cbd93b493f2d624138a0c0e5f5", "CC BY-SA 4.0 (from SQuAD v1.1)",
          "QNLI, Question NLI built from SQuAD v1.1 (Rajpurkar et al. 2016), GLUE v2 release"),
    _glue("glue_rte", "RTE.zip", "RTE", ("train.tsv", "dev.tsv"),
          "6bf86de103ecd335f3441bd43574d23fef87ecc695977a63b82d5efb206556ee",
          "PASCAL RTE challenge data; no licence stated (research use)",
          "RTE, Recognizing Textual Entailment 1, 2, 3 and 5 (Dagan et al. 2006 ...), GLUE release"),
    Source(name="snli", archive=UrlArchive(url="https://nlp.stanford.edu/projects/snli/snli_1.0.zip",
                                           filename="snli_1.0.zip",
                                           sha256="afb3d70a5af5d8de0d9d81e2637e0fb8c22d1235c2749d83125ca43dab0dbd3e"),
           members=("snli_1.0/snli_1.0_train.jsonl", "snli_1.0/snli_1.0_dev.jsonl", "snli_1.0/snli_1.0_test.jsonl"),
           licence="CC BY-SA 4.0",
           description="SNLI 1.0, Stanford Natural Language Inference (Bowman et al. 2015)"),
    Source(name="scitail",
           archive=UrlArchive(url="http://data.allenai.org.s3.amazonaws.com/downloads/SciTailV1.1.zip",
                              filename="SciTailV1.1.zip",
                              sha256="3fccd37350a94ca280b75998568df85fc2fc62843a3198d644fcbf858e6943d5"),
           members=tuple(f"SciTailV1.1/tsv_format/scitail_1.0_{s}.tsv" for s in ("train", "dev", "test")),
           licence="Apache-2.0 (as AI2 lists it)",
           description="SciTail 1.1 (Khot et al. 2018), tsv_format; also served at "
                       "https://ai2-public-datasets.s3.amazonaws.com/scitail/SciTailV1.1.zip"),
    Source(name="race", archive=UrlArchive(url="http://www.cs.cmu.edu/~glai1/data/race/RACE.tar.gz",
                                           filename="RACE.tar.gz",
                                           sha256="b2769cc9fdc5c546a693300eb9a966cec6870bd349fbc44ed5225f8ad33006e5"),
           members=("RACE/train/*.txt", "RACE/dev/*.txt", "RACE/test/*.txt"),
           licence="non-commercial research use only (CMU RACE terms)",
           description="RACE, ReAding Comprehension from Examinations (Lai et al. 2017), middle + high school"),
    Source(name="story_cloze", archive=LocalFolder(key="story_cloze"),
           members=("*cloze_test_val__spring2016*.csv", "*cloze_test_test__spring2016*.csv"),
           licence="registration-only (University of Rochester ROCStories agreement); not redistributable",
           description="Story Cloze Test spring 2016 val + test CSVs (Mostafazadeh et al. 2016); request them at "
                       "https://cs.rochester.edu/nlp/rocstories/ and set data.local_paths.story_cloze"),
    Source(name="books", archive=LocalFolder(key="books"), members=("*.txt",),
           licence="BooksCorpus: unpublished Smashwords books; no redistribution licence",
           description="BooksCorpus-style corpus: a folder of UTF-8 .txt files, one book per file "
                       "(set data.local_paths.books)"),
]
# The public re-collection of BooksCorpus ("books1", Shawn Presser, 17,868 books), pinned as HF `bookcorpusopen`
# pins it: data.corpus `books1` downloads it (2.4 GB; its host has been offline at times: data.mirrors.books1 names
# another copy), where `books` reads a folder of one's own (data.local_paths.books).
_SOURCE_LIST.append(Source(
    name="books1",
    archive=UrlArchive(url="https://the-eye.eu/public/AI/pile_preliminary_components/books1.tar.gz",
                       filename="books1.tar.gz",
                       sha256="e3c993cc825df2bdf0f78ef592f5c09236f0b9cd6bb1877142281acc50f446f9"),
    members=("*.epub.txt",),
    licence="BooksCorpus re-collection from Smashwords; no redistribution licence",
    description="books1 (bookcorpusopen): 17,868 books as .epub.txt files",
))
PAPER_SOURCES: dict[str, Source] = {source.name: source for source in _SOURCE_LIST}

