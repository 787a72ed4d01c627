"""The demo's worker loop, run as a subprocess that tests kill at chosen moments.

    python -m tests.eventlog.worker_process URL JOB NAME PAGES [--stop-at STEP:N] [--reclaim]

It prints one line per step (claimed, fetching, checkpointed, finished); with
``--stop-at STEP:N`` it prints ``PAUSED`` when it reaches STEP for the Nth time and waits
there to be killed. ``--reclaim`` takes over other workers' leases without waiting for them
to expire.
"""

from __future__ import annotations

import argparse
import sys

import anyio

from crawler.demo import run_worker


class Stepper:
    def __init__(self, stop_at: str | None) -> None:
        step, _, count = (stop_at or ":").partition(":")
        self.stop_step, self.stop_count = step, int(count or 0)
        self.seen = 0

    async def step(self, name: str, detail: str) -> None:
        print(name, detail, flush=True)
        if name == self.stop_step:
            self.seen += 1
            if self.seen == self.stop_count:
                print("PAUSED", flush=True)
                await anyio.sleep_forever()


async def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("job")
    parser.add_argument("name")
    parser.add_argument("pages", type=int)
    parser.add_argument("--stop-at")
    parser.add_argument("--reclaim", action="store_true")
    args = parser.parse_args(argv)
    await run_worker(
        args.url, args.job, args.name, pages=args.pages, page_time_s=0,
        reclaim_idle_ms=0 if args.reclaim else None, on_step=Stepper(args.stop_at).step,
    )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main, sys.argv[1:]))
