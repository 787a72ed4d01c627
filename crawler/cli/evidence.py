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
    Failure,
    body_extension,
    evidence_summary,
    last_failure,
    open_job,
    response_text,
    task_id_of,
)
from eventlog import ConfigError, LogEntry, TaskAborted, TaskEnqueued, TaskFailed


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
    (task, URL, attempt, error, when, worker).

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
    found = last_failure(task_id, entries)
    if found is None:
        raise ConfigError(f"{what} has not failed nor been aborted: it has no evidence")
    entry, failure = found
    evidence = failure.evidence
    if evidence is None:
        error = failure.last_error if isinstance(failure, TaskAborted) else None
        raise ConfigError(
            f"{what} ended with no response to keep ({error or failure.reason}): no evidence"
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
        body_path = out / (BODY_STEM + body_extension(evidence))
        (out / "response.txt").write_text(response_text(evidence), encoding="utf-8")
        body_path.write_bytes(evidence.body)
        meta = _meta(job, task_id, entries, entry, failure, body_path.name)
        (out / "meta.json").write_bytes(msgspec.json.format(msgspec.json.encode(meta)) + b"\n")
    except OSError as exc:
        raise ConfigError(f"cannot write the evidence to {out}: {exc.strerror or exc}") from None
    click.echo(
        f"{what}: {evidence_summary(evidence)}; wrote {out / 'response.txt'}, {body_path}, "
        f"{out / 'meta.json'}"
    )


def _meta(
    job: str, task_id: str, entries: list[LogEntry], entry: LogEntry, failure: Failure, body: str
) -> dict[str, object]:
    """What meta.json says of the evidence: the task, its failure, the files written."""
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
        "attempt": failure.attempt,
        "outcome": "failed" if isinstance(failure, TaskFailed) else "aborted",
        "error": failure.reason,
        "when": dt.datetime.fromtimestamp(failure.at, dt.UTC).isoformat(),
        "worker": failure.actor,
        "stream_id": entry.stream_id,
        "content_type": evidence.content_type,
        "body_bytes": evidence.body_bytes,
        "body_kept_bytes": len(evidence.body),
        "truncated": evidence.truncated,
        "body_file": body,
    }
