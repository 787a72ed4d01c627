"""``crawlog evidence``: the last response a failed or aborted task got, written to files.

What evidence is and how it is read and summed up is the library's (``crawler.ops``).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import anyio
import click
import msgspec

from crawler.cli._options import data_dir_option, job_option
from crawler.ops import (
    BODY_STEM,
    SCREENSHOT_FILE,
    Failure,
    body_extension,
    evidence_summary,
    flow_tail,
    last_report,
    open_job,
    response_text,
    task_id_of,
)
from eventlog import ConfigError, LogEntry, TaskAborted, TaskEnqueued, TaskFailed, TaskPaused


@click.command(
    "evidence",
    epilog="Examples:  crawlog evidence --job shop 3f9c0e4d2a1b7c55 --out ./why\n\n"
    "           crawlog evidence --job shop 'https://shop.example.com/item/7' --out ./why",
)
@job_option
@data_dir_option
@click.argument("target", metavar="TASK_ID|URL")
@click.option(
    "--out",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    metavar="DIR",
    help="The directory to write into (made if missing).",
)
def evidence_command(job: str, data_dir: Path | None, target: str, out: Path) -> None:
    """Write the last response a failed or aborted task got: DIR/response.txt (status
    line and headers), DIR/body.EXT (the start of the body, as served), DIR/meta.json
    (task, URL, attempt, error, when, worker). For a flow that handed its task to a
    person, its report: the live page's HTML as body.html, DIR/screenshot.jpg, and the
    step and cursor in meta.json's error.

    A task that failed before any response (a timeout, a refused connection) has none;
    exits 2 then, and for a task the job does not have.
    """
    task_id, url = task_id_of(target)

    async def run() -> list[LogEntry]:
        from projector import task_history

        async with open_job(data_dir, job) as opened:
            return await task_history(opened.client, opened.store, [task_id])

    entries = anyio.run(run)
    what = f"{url} (task {task_id})" if url else f"task {task_id}"
    if not entries or not any(getattr(e.event, "task_id", None) == task_id for e in entries):
        raise ConfigError(f"job {job} has no {what} (crawlog history shows why)")
    found = last_report(task_id, entries)
    if found is None:
        raise ConfigError(
            f"{what} has not failed nor been aborted (nor handed to a person): it has no evidence"
        )
    entry, failure = found
    evidence = failure.evidence
    if evidence is None:
        error = failure.last_error if isinstance(failure, TaskAborted) else None
        assert not isinstance(failure, TaskPaused), "found for its evidence"
        raise ConfigError(
            f"{what} ended with no response to keep ({error or failure.reason}): no evidence"
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
        body_path = out / (BODY_STEM + body_extension(evidence))
        (out / "response.txt").write_text(response_text(evidence), encoding="utf-8")
        body_path.write_bytes(evidence.body)
        written = [out / "response.txt", body_path]
        if evidence.screenshot:
            (out / SCREENSHOT_FILE).write_bytes(evidence.screenshot)
            written.append(out / SCREENSHOT_FILE)
        meta = _meta(job, task_id, entries, entry, failure, body_path.name)
        (out / "meta.json").write_bytes(msgspec.json.format(msgspec.json.encode(meta)) + b"\n")
    except OSError as exc:
        raise ConfigError(f"cannot write the evidence to {out}: {exc.strerror or exc}") from None
    files = ", ".join(str(path) for path in [*written, out / "meta.json"])
    click.echo(f"{what}: {evidence_summary(evidence)}; wrote {files}")


def _meta(
    job: str,
    task_id: str,
    entries: list[LogEntry],
    entry: LogEntry,
    failure: Failure | TaskPaused,
    body: str,
) -> dict[str, object]:
    """What meta.json says of the evidence: the task, its failure, the files written, and
    a flow's last events (`flow_tail`; null for a task of no flow)."""
    evidence = failure.evidence
    assert evidence is not None, "only a failure with evidence is written"
    enqueued = [
        e.event for e in entries if isinstance(e.event, TaskEnqueued) and e.event.task_id == task_id
    ]
    return {
        "job": job,
        "task": task_id,
        "url": enqueued[0].url if enqueued else evidence.url,
        "response_url": evidence.url,
        "status": evidence.status,
        "attempt": None if isinstance(failure, TaskPaused) else failure.attempt,
        "outcome": _outcome(failure),
        "error": failure.reason,
        "when": dt.datetime.fromtimestamp(failure.at, dt.UTC).isoformat(),
        "worker": failure.actor,
        "stream_id": entry.stream_id,
        "content_type": evidence.content_type,
        "body_bytes": evidence.body_bytes,
        "body_kept_bytes": len(evidence.body),
        "truncated": evidence.truncated,
        "body_file": body,
        "screenshot_file": SCREENSHOT_FILE if evidence.screenshot else None,
        "flow": msgspec.to_builtins(flow_tail(entries, task_id)),
    }


def _outcome(event: Failure | TaskPaused) -> str:
    if isinstance(event, TaskPaused):
        return "needs a person"
    return "failed" if isinstance(event, TaskFailed) else "aborted"
