"""The Prometheus text format of a /metrics scrape: parsing it and reading series.

A parsed scrape maps (metric name, frozenset of (label, value) pairs) to the
sample's value, so that a series is looked up by its name and labels.
"""

from __future__ import annotations

import re

METRIC_LINE_RE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)$")
LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')

Metrics = dict[tuple[str, frozenset], float]


def parse(text: str) -> Metrics:
    """Every sample of a scrape: {(name, frozenset(labels)): value}.

    Comments, blank lines, lines that are not samples and values that are not
    numbers are skipped; label values are kept as written (escapes not undone).
    """
    out: Metrics = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = METRIC_LINE_RE.match(line)
        if not m:
            continue
        labels = frozenset(LABEL_RE.findall(m.group(3) or ""))
        try:
            out[(m.group(1), labels)] = float(m.group(4))
        except ValueError:
            pass
    return out


def value(metrics: Metrics, name: str, **labels: str) -> float:
    """The sum of the series `name` whose labels include these (every model's
    series when no `model` label is given); 0.0 when the scrape has none."""
    wanted = set(labels.items())
    return sum(v for (n, have), v in metrics.items() if n == name and wanted <= have)


def series(metrics: Metrics, name: str) -> dict[frozenset, float]:
    """Every series of the metric `name`: {frozenset(labels): value}."""
    return {labels: v for (n, labels), v in metrics.items() if n == name}
