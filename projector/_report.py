"""A job's progress report, built from one committed manifest: every section comes from
the summary the manifest carries (the state's figures, and the projector's figures over
every page fetch, ``projector._fetches``), so a report costs the same whatever the size of
the job. A manifest written before those figures existed is reported the slow way, by SQL
over the archive views (``projector._report_sql``). The model and the sections are
``projector._report_model``'s."""

from __future__ import annotations

from collections import Counter

from projector._fetches import RELATIVE_ERROR, FetchFigures, quantiles
from projector._report_model import (
    Failures,
    Recoveries,
    Report,
    ResponseTimes,
    Retries,
    assemble,
    failures,
    recoveries,
    retries,
    throughput,
    top_reasons,
)
from projector._store import Manifest, Store
from projector._summary import Summary


def build_report(store: Store, *, lease_s: float, now: float, from_archive: bool = False) -> Report:
    """The report of the committed data; stuck = running, last event before ``now - lease_s``.

    Every section comes from the summary the manifest carries: the state's figures, and
    those the projector keeps over the log's page fetches. A manifest without the latter
    (written before them), or ``from_archive``, has them computed by SQL over the archive
    (with exact quantiles): the slow way, in proportion to the job.
    """
    manifest = store.read_manifest()
    summary = manifest.summary
    committed = bool(manifest.segments) or manifest.snapshot is not None
    if summary is not None and summary.fetches is not None and committed and not from_archive:
        return _report(manifest, summary, summary.fetches, lease_s=lease_s, now=now)
    from projector._report_sql import report_from_archive  # imports DuckDB

    return report_from_archive(store, lease_s=lease_s, now=now)


def _report(
    manifest: Manifest, summary: Summary, figures: FetchFigures, *, lease_s: float, now: float
) -> Report:
    return assemble(
        manifest,
        summary,
        events=manifest.events,
        throughput=throughput(figures.per_minute),
        failures=_failures(summary, figures),
        retries=_retries(summary, figures),
        response_times=_response_times(figures),
        recoveries=_recoveries(summary, figures),
        lease_s=lease_s,
        now=now,
        clock_offsets=figures.clock_offsets,
        robots=figures.robots,
    )


def _failures(summary: Summary, figures: FetchFigures) -> Failures:
    errors = top_reasons(Counter(figures.errors))
    return failures(
        summary,
        [(e.reason, e.count) for e in errors],
        sum(figures.errors.values()),
        figures.statuses,
    )


def _retries(summary: Summary, figures: FetchFigures) -> Retries:
    return retries(
        summary,
        pages_retried=figures.pages_retried,
        retry_fetches=figures.retry_fetches,
        released=figures.released,
    )


def _response_times(figures: FetchFigures) -> ResponseTimes:
    if not figures.fetches:
        return ResponseTimes(pages=0, avg_ms=None, p50_ms=None, p95_ms=None)
    p50, p95 = quantiles(figures.elapsed_buckets, (0.5, 0.95)) or (None, None)
    return ResponseTimes(
        pages=figures.fetches,
        avg_ms=figures.elapsed_sum_ms / figures.fetches,
        p50_ms=p50,
        p95_ms=p95,
        quantiles_error=RELATIVE_ERROR,
    )


def _recoveries(summary: Summary, figures: FetchFigures) -> Recoveries:
    return recoveries(
        summary,
        pages_refetched=figures.pages_refetched,
        extra_fetches=figures.extra_fetches,
        refetched=list(figures.refetched),
        unrecorded_refetches=figures.unrecorded_refetches,
    )
