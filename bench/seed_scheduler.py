"""The seed note's Python scheduler, extracted verbatim from the design note.

extract_seed_scheduler() reads ../shared/seed/token-budget-scheduler.zh.md (or
$TOKENBATCH_SEED_NOTE), takes the Python sketch (from `import asyncio` up to the
next section heading) and executes it, returning the TokenBudgetBatchScheduler
class. Nothing of the seed's code is copied into this repository.
"""
import os
import pathlib

DEFAULT_NOTE = pathlib.Path(__file__).resolve().parents[1] / ".." / "shared" / "seed" / "token-budget-scheduler.zh.md"


def extract_seed_source(note_path=None):
    path = pathlib.Path(note_path or os.environ.get("TOKENBATCH_SEED_NOTE", DEFAULT_NOTE))
    text = path.read_text(encoding="utf-8")
    start = text.index("import asyncio")
    end = text.index("混合极端长短文本压测对照实测", start)
    return text[start:end]


def extract_seed_scheduler(note_path=None):
    namespace = {}
    exec(compile(extract_seed_source(note_path), "seed_scheduler", "exec"), namespace)
    return namespace["TokenBudgetBatchScheduler"]
