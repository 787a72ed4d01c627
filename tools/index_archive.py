"""Index the archive of a job projected before segment indexes, so that ``crawlog
history`` reads only the row groups of a task (``projector.index_archive``).

    python tools/index_archive.py --data-dir DIR --job JOB

Stop the job's projector first (the command takes its lock). Each committed segment
without an index is written again (same rows, same name) in small row groups, then
indexed; the manifest does not change. Prints a table (segment, events, seconds) and a
last-line JSON object (segments rewritten, events, seconds).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from projector import Store, index_archive


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--job", required=True)
    args = parser.parse_args()
    store = Store(args.data_dir, args.job)
    events = {s.name: s.events for s in store.read_manifest().segments}
    start = time.perf_counter()
    done = index_archive(store)
    took = time.perf_counter() - start
    for name in done:
        print(f"{name}  {events[name]:>9,}")
    result = {
        "segments": len(done),
        "events": sum(events[n] for n in done),
        "seconds": round(took, 2),
    }
    print(f"{len(done)} segments rewritten and indexed, {result['events']:,} events, {took:.1f} s")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
