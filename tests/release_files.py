"""Where tests find the original ParallelBench release's frozen test files, and what they say when absent.

The files are data of the public release (github.com/furiosa-ai/ParallelBench, commit 72de8f7,
folder `dataset/parallel_bench/data/output/test`); the project never copies them. Tests read them
from `$PARALLELBENCH_RELEASE`, else from `../shared/official-parallelbench` beside the repository.
"""

from __future__ import annotations

import os
from pathlib import Path

RELEASE_ENV = "PARALLELBENCH_RELEASE"
DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "official-parallelbench"  # ../shared/... from the repo root
RELEASE = Path(os.environ.get(RELEASE_ENV) or DEFAULT)
HOW_TO_GET = (
    "clone the public release (git clone https://github.com/furiosa-ai/ParallelBench && "
    "git -C ParallelBench checkout 72de8f7) and set "
    f"{RELEASE_ENV}=<clone>/dataset/parallel_bench/data/output/test, or put that folder at "
    "../shared/official-parallelbench beside the repository (see docs/data.md)"
)
MISSING = f"the original release's test files are not at {RELEASE}: {HOW_TO_GET}"


def missing(path: Path) -> str:
    """Skip reason for one absent file of the release."""
    return f"{path} is not available: {HOW_TO_GET}"
