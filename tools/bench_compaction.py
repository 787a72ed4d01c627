"""Count how many times the archive's compaction writes each event, by commit size.

    python tools/bench_compaction.py [--events N] [--baseline REV]

The projector writes one segment per commit, and ``projector._compaction.plan`` decides
which runs of small segments are merged (rewritten) into one. This replays that decision
for a log of N events (default 3,000,000) committed in segments of a given size (a crawl
committing every second writes segments of its events per second: 100 for a slow crawl,
tens of thousands for a projector catching up), with sizes steady or jittered by up to
80 % either way, and counts every event written: once by its commit, once more by each
merge it goes through. Each merge's CPU and disk are in proportion to the events it
writes. Nothing is timed: the counts are exact and the same on any machine.

``--baseline REV`` plays the ``plan`` of git revision REV beside this tree's, on the same
sizes. Prints a table, then as its last line one JSON object: per case the writes per
event, the segments left and the most there ever were, and the small ones left.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import types
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from projector._archive import SegmentInfo  # noqa: E402
from projector._compaction import SMALL_SEGMENT_EVENTS, plan  # noqa: E402

Plan = Callable[[Sequence[SegmentInfo]], "tuple[int, int] | None"]
COMMIT_SIZES = (100, 500, 2_500, 10_000, 55_000)
JITTERS = (0.0, 0.8)


def baseline_plan(rev: str) -> Plan:
    """``plan`` as git revision ``rev`` of this repository had it."""
    source = subprocess.run(
        ["git", "show", f"{rev}:projector/_compaction.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    module = types.ModuleType("baseline_compaction")
    exec(compile(source, f"{rev}:projector/_compaction.py", "exec"), module.__dict__)
    return module.plan  # type: ignore[no-any-return]


def play(planner: Plan, commit_events: int, jitter: float, events: int) -> dict[str, float]:
    """Commit ``events`` in segments of about ``commit_events``, merging what ``planner``
    says after each commit (one merge a commit at most, as the committer does), and count
    what was written."""
    rng = random.Random(commit_events)  # the same sizes for every planner
    segments: list[SegmentInfo] = []
    written = committed = most = 0
    while committed < events:
        size = max(1, round(commit_events * (1 + jitter * (2 * rng.random() - 1))))
        segments.append(SegmentInfo(name="", first_id="0-0", last_id="0-0", events=size))
        committed += size
        written += size
        if (run := planner(segments)) is not None:
            start, end = run
            merged = sum(s.events for s in segments[start:end])
            written += merged
            info = SegmentInfo(name="", first_id="0-0", last_id="0-0", events=merged)
            segments[start:end] = [info]
        most = max(most, len(segments))
    return {
        "writes_per_event": round(written / committed, 3),
        "segments": len(segments),
        "most_segments": most,
        "small_segments": sum(s.events < SMALL_SEGMENT_EVENTS for s in segments),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Count the archive compaction's writes per event, by commit size.",
        epilog="Example: python tools/bench_compaction.py --baseline HEAD~1",
    )
    parser.add_argument("--events", type=int, default=3_000_000, help="events per case")
    parser.add_argument("--baseline", metavar="REV", help="also play this git revision's plan")
    args = parser.parse_args()
    if args.events < 1:
        parser.error("--events must be at least 1")
    planners: dict[str, Plan] = {"this tree": plan}
    if args.baseline:
        try:
            planners[args.baseline] = baseline_plan(args.baseline)
        except subprocess.CalledProcessError as exc:
            parser.error(f"cannot read {args.baseline}'s plan: {exc.stderr.strip()}")
    cases = []
    print(
        f"{'plan':>12} {'commit ev':>10} {'jitter':>7} {'writes/ev':>10} {'segments':>9} "
        f"{'most':>5} {'small':>6}"
    )
    for size in COMMIT_SIZES:
        for jitter in JITTERS:
            for name, planner in planners.items():
                result = play(planner, size, jitter, args.events)
                print(
                    f"{name:>12} {size:>10,} {jitter:>7.1f} {result['writes_per_event']:>10.2f} "
                    f"{result['segments']:>9} {result['most_segments']:>5} "
                    f"{result['small_segments']:>6}"
                )
                cases.append({"plan": name, "commit_events": size, "jitter": jitter, **result})
    print(json.dumps({"events": args.events, "cases": cases}))


if __name__ == "__main__":
    main()
