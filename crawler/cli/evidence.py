"""``crawlog evidence``: the last response a failed or aborted task got, written to files.

The worker keeps that response with the task's terminal event (`eventlog.Evidence`): its
status, headers and the start of its body, compressed. It is read back from the
projector's archive and the stream's tail (`projector.task_history`), so it is there
after the stream is trimmed. Also what ``crawlog history`` and the console's "Needs a
person" page show of it (`last_failure`, `evidence_summary`).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TypeAlias

import anyio
import click
import msgspec

from crawler.cli._operator import open_job, task_id_of
from crawler.cli._options import data_dir_option, job_option
from eventlog import ConfigError, Evidence, LogEntry, TaskAborted, TaskEnqueued, TaskFailed

Failure: TypeAlias = TaskFailed | TaskAborted
"""A task's end that may carry evidence."""
BODY_STEM = "body"
UNKNOWN_EXTENSION = ".bin"
"""The body file's extension when its content type names none."""


def last_failure(task_id: str, entries: list[LogEntry]) -> tuple[LogEntry, Failure] | None:
    """The task's last failed or aborted end among ``entries`` (its history), if any."""
    for entry in reversed(entries):
        event = entry.event
        if isinstance(event, TaskFailed | TaskAborted) and event.task_id == task_id:
            return entry, event
    return None


def evidence_summary(evidence: Evidence) -> str:
    """One line: the response's status, content type and body size."""
    kept = f"{evidence.body_bytes} B body"
    if evidence.truncated:
        kept += f", its first {len(evidence.body)} B kept"
    return f"HTTP {evidence.status}, {evidence.content_type or 'no content type'}, {kept}"


def export_command_line(job: str, task_id: str) -> str:
    """The command that writes a task's evidence to files."""
    return f"crawlog evidence --job {job} {task_id} --out evidence-{task_id}"


def body_extension(evidence: Evidence) -> str:
    """The body file's extension, from the content type (``.html``, ``.json``...)."""
    import mimetypes  # here: its import is a share of every command's start

    media = (evidence.content_type or "").partition(";")[0].strip().lower()
    return (mimetypes.guess_extension(media) if media else None) or UNKNOWN_EXTENSION


def response_text(evidence: Evidence) -> str:
    """The response's status line and headers, as they came (repeated ones each on a line)."""
    import http

    try:
        phrase = http.HTTPStatus(evidence.status).phrase
    except ValueError:
        phrase = ""
    lines = [f"HTTP {evidence.status} {phrase}".rstrip()]
    lines += [f"{name}: {value}" for name, value in evidence.headers]
    if evidence.headers_truncated:
        lines.append("# (more headers were left out: past the size evidence keeps)")
    return "\n".join(lines) + "\n"


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
    enqueued = [
        e.event for e in entries if isinstance(e.event, TaskEnqueued) and e.event.task_id == task_id
    ]
    task_url = enqueued[0].url if enqueued else evidence.url
    try:
        out.mkdir(parents=True, exist_ok=True)
        body_path = out / (BODY_STEM + body_extension(evidence))
        (out / "response.txt").write_text(response_text(evidence), encoding="utf-8")
        body_path.write_bytes(evidence.body)
        meta = {
            "job": job,
            "task": task_id,
            "url": task_url,
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
            "body_file": body_path.name,
        }
        (out / "meta.json").write_bytes(msgspec.json.format(msgspec.json.encode(meta)) + b"\n")
    except OSError as exc:
        raise ConfigError(f"cannot write the evidence to {out}: {exc.strerror or exc}") from None
    click.echo(
        f"{what}: {evidence_summary(evidence)}; wrote {out / 'response.txt'}, {body_path}, "
        f"{out / 'meta.json'}"
    )
