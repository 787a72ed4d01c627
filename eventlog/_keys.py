"""Every Redis key crawlog uses, and the layout of what they hold, built in this one place.

All keys of a job share the hash tag ``{job}`` (``{job:p}`` for partition ``p``), so that a
server-side script can touch any of them atomically and a Redis Cluster keeps them in one
slot. The field names and member layouts below are read by the scripts of ``_scripts``
too: a change here is a change there.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cached_property

from eventlog._exceptions import ConfigError

PREFIX = "crawlog"
WORKERS_GROUP = "workers"
"""Consumer group of every task lane: a worker's pending entry list *is* its leases."""

LANE_HIGH = 0
LANE_NORMAL = 1
LANE_RECOVERY = 2
"""Recovered work goes here so it never pre-empts fresh work."""
LANES = (LANE_HIGH, LANE_NORMAL, LANE_RECOVERY)

EVENT_FIELD = b"e"
"""The one field of an entry of the log: the encoded event."""
TASK_FIELD = b"t"
"""The one field of an entry of a task lane: the encoded task."""

# Fields of the control hash (`JobKeys.control`), shared by its writers and by the park
# script, which must only park while a pause flag is set.
JOB_PAUSED = "job"
SITE_PREFIX = "site|"
TASK_PREFIX = "task|"
CIRCUIT_PREFIX = "circuit|"

SEEN_BUCKETS = 1 << 15
"""Hashes the job's fingerprints are spread over (`seen_slot`): few enough that their own
overhead stays small at a million URLs, many enough that each stays a compact listpack
(at most the server's ``hash-max-listpack-entries``) at ten million."""
SEEN_FIELD_BYTES = 6
_SEEN_FP_HEX = 16


def seen_slot(fingerprint: str) -> tuple[int, bytes]:
    """Where ``fingerprint`` is marked seen: its bucket (`JobKeys.seen_bucket`) and its
    field there, so that a URL costs its field's few bytes rather than a set member's
    string, pointers and header.

    A URL fingerprint (16 hex digits, 64 bits) gives its bucket from its first 15 bits and
    its field from its last 48, so the slot is as exact as 63 bits of the fingerprint; any
    other fingerprint (a Scrapy request's, a caller's own) is hashed to 64 bits first.
    """
    # Per link enqueued: a plain try is cheaper here than contextlib.suppress.
    try:
        raw = bytes.fromhex(fingerprint) if len(fingerprint) == _SEEN_FP_HEX else None
    except ValueError:
        raw = None
    if raw is None:
        raw = hashlib.blake2b(fingerprint.encode(), digest_size=8).digest()
    return raw[0] << 7 | raw[1] >> 1, raw[2:]


_JOB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


JOB_KEY_PATTERNS = (f"{PREFIX}:{{*}}:config", f"{PREFIX}:{{*}}:events")
"""SCAN patterns that find every job on a server: its settings (written by ``crawl``) or its
log (a job fed only through the API has no settings)."""
IDENTITY_KEY_PATTERN = f"{PREFIX}:{{*}}:identity"
"""SCAN pattern of every job's identity key on a server (`JobKeys.identity`)."""
_JOB_OF_KEY = re.compile(rf"{PREFIX}:\{{([^}}:]+)\}}:(?:config|events)")


def job_of_key(key: str) -> str | None:
    """The job a key found with :data:`JOB_KEY_PATTERNS` belongs to (None for a partition's
    key or anything else)."""
    matched = _JOB_OF_KEY.fullmatch(key)
    return matched[1] if matched and _JOB_NAME.fullmatch(matched[1]) else None


def check_job_name(job: str) -> str:
    """``job`` if it is a valid job name, else ``ConfigError`` saying what is allowed."""
    if not _JOB_NAME.fullmatch(job):
        raise ConfigError(
            f"invalid job name {job!r}: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return job


def site_pause_flag(site: str) -> str:
    """The control field set while ``site`` is paused."""
    return SITE_PREFIX + site


def task_pause_flag(task_id: str) -> str:
    """The control field set while task ``task_id`` is paused (its value: the task's site)."""
    return TASK_PREFIX + task_id


def circuit_flag(site: str) -> str:
    """The control field set while the circuit of ``site`` is open (its value: until when)."""
    return CIRCUIT_PREFIX + site


def action_field(task_id: str, action_id: str) -> str:
    """The field of an action's ``ctx.once`` marker in `JobKeys.actions`."""
    return f"{task_id}|{action_id}"


def awaiting_value(site: str, action_id: str) -> str:
    """What `JobKeys.awaiting` holds for a task paused for a person: its site (which has
    no ``|``) and the action (which may)."""
    return f"{site}|{action_id}"


def awaiting_action(value: str) -> str:
    """The action id of an `awaiting_value`."""
    return value.partition("|")[2]


def parked_prefix(site: str, task_id: str | None = None) -> str:
    """The start of the `JobKeys.parked` members of a site's tasks, or of one task's.

    Members are ``<site>|<task id>|<lane>|<task>``, all scored 0, so a site's or a task's
    are one lexicographic range (the scripts end it at ``}``, which sorts right after ``|``).
    """
    return f"{site}|" if task_id is None else f"{site}|{task_id}|"


def parked_member(site: str, task_id: str, lane: int, task: bytes) -> bytes:
    """A parked task's member of `JobKeys.parked` (see `parked_prefix`)."""
    return f"{parked_prefix(site, task_id)}{lane}|".encode() + task


IDENTITY_ID = "id"
IDENTITY_EPOCH = "epoch"
"""The fields of `JobKeys.identity`."""
RESTORED_EPOCH = ":epoch"
RESTORED_POSITION = ":position"
"""The fields of `JobKeys.restored` that are no task id (a task id has no colon)."""


BROWSER_SESSION_VERSION = "version"
BROWSER_SESSION_STATE = "state"
BROWSER_SESSION_SAVED_AT = "saved_at"
"""The fields of `JobKeys.browser_session`: written together by one script, never apart
(``saved_at``: the server's clock at the save, in ms; absent from sessions saved before it
was kept)."""


def cookie_field(domain: str, path: str, name: str) -> str:
    """The field of a cookie in `JobKeys.cookie_jar`: ``<domain>;<path>;<name>``, one per
    cookie as a cookie library keys them (a Set-Cookie's parts are split at ``;``, so
    none of the three holds one)."""
    return f"{domain};{path};{name}"


def delayed_member(lane: int, task: bytes) -> bytes:
    """A delayed task's member of `JobKeys.delayed`: ``<lane>|<task>``."""
    return f"{lane}|".encode() + task


@dataclass(frozen=True)
class JobKeys:
    """The keys of one job (or of one partition of a job)."""

    job: str
    partition: int | None = None

    def __post_init__(self) -> None:
        check_job_name(self.job)
        if self.partition is not None and self.partition < 0:
            raise ConfigError(f"partition must be >= 0, not {self.partition}")

    @cached_property
    def tag(self) -> str:
        """The hash tag: ``{job}`` or ``{job:p}``."""
        inner = self.job if self.partition is None else f"{self.job}:{self.partition}"
        return "{" + inner + "}"

    def _key(self, *parts: str | int) -> str:
        return ":".join((PREFIX, self.tag, *map(str, parts)))

    @cached_property
    def pattern(self) -> str:
        """The glob that matches every key of this job (or partition)."""
        return self._key("*")

    def short(self, key: str) -> str:
        """``key`` without this job's ``crawlog:{job}:`` prefix, as a person reads it
        (``tasks:1``); a key of anything else unchanged."""
        return key.removeprefix(self._key(""))

    @cached_property
    def events(self) -> str:
        """The progress log, read in order by the projector."""
        return self._key("events")

    def tasks(self, lane: int) -> str:
        """The work queue of one priority lane (consumer group ``workers``)."""
        if lane not in LANES:
            raise ConfigError(f"no task lane {lane}; lanes are {LANES}")
        return self._key("tasks", lane)

    @cached_property
    def lanes(self) -> tuple[str, ...]:
        """Every lane's stream, highest priority first."""
        return tuple(self.tasks(lane) for lane in LANES)

    @cached_property
    def seen(self) -> str:
        """The set of fingerprints a job kept before they were bucketed (`seen_bucket`):
        still read where it exists, so a job begun by an older crawlog enqueues nothing
        twice; never written."""
        return self._key("seen")

    def seen_bucket(self, bucket: int) -> str:
        """Hash field -> "": the fingerprints marked seen in one bucket (`seen_slot`): a
        URL is enqueued once."""
        return self._seen_prefix + str(bucket)

    @cached_property
    def _seen_prefix(self) -> str:
        # Built once: the enqueue of a page's links names a bucket for each of them.
        return self._key("seen", "")

    @cached_property
    def seen_count(self) -> str:
        """How many fingerprints the buckets hold (the ``--max-pages`` cap counts them)."""
        return self._key("seen", "count")

    @cached_property
    def ckpt(self) -> str:
        """Hash task id -> stream ID of its last checkpoint event (an index into the log)."""
        return self._key("ckpt")

    @cached_property
    def dead(self) -> str:
        """Dead letters: entries that could not be decoded or processed."""
        return self._key("dead")

    @cached_property
    def delayed(self) -> str:
        """Tasks waiting for a retry time: a ZSET scored by due time (server ms)."""
        return self._key("delayed")

    @cached_property
    def parked(self) -> str:
        """Tasks of paused sites and paused tasks, until resumed (a ZSET, see CONTROL)."""
        return self._key("parked")

    @cached_property
    def redirected(self) -> str:
        """Hash fingerprint -> the task that fetches that URL through a redirect: its URL is
        in ``seen`` too, so no task is enqueued for it, and a retry of that task may follow
        the same redirect again."""
        return self._key("redirected")

    @cached_property
    def retries(self) -> str:
        """Hash task id -> the attempt an operator's retry started from (``crawlog retry``):
        a second retry of the same ended attempt is refused, so a task is enqueued once."""
        return self._key("retries")

    @cached_property
    def actions(self) -> str:
        """Hash "<task id>|<action id>" -> "intended" or "done": ``ctx.once`` markers."""
        return self._key("actions")

    @cached_property
    def awaiting(self) -> str:
        """Hash task id -> "<site>|<action id>": tasks paused for a person to decide about
        an uncertain action (``crawlog resolve``)."""
        return self._key("awaiting")

    @cached_property
    def control(self) -> str:
        """Hash of pause flags and open circuits, polled by every worker."""
        return self._key("control")

    @cached_property
    def cookie_sites(self) -> str:
        """Set of the sites that have a cookie jar (``--cookies``): what `cookie_jar` and
        `cookie_version` are kept for."""
        return self._key("cookies")

    def cookie_jar(self, site: str) -> str:
        """Hash `cookie_field` -> the cookie (a msgpack ``StoredCookie``) of ``site``'s
        jar, shared by every worker of the job."""
        return self._key("cookies", site)

    def cookie_version(self, site: str) -> str:
        """Counter bumped by every change of ``site``'s jar (never deleted, not even by a
        clear): a worker whose copy has the same number has the whole jar."""
        return self._key("cookies", site, "version")

    @cached_property
    def browser_sessions(self) -> str:
        """Set of the identities (`eventlog.SessionIdentity.key`) that have a browser
        session: what `browser_session` is kept for."""
        return self._key("browser-sessions")

    def browser_session(self, identity: str) -> str:
        """Hash of one identity's browser login state: `BROWSER_SESSION_VERSION` (a
        counter) and `BROWSER_SESSION_STATE` (a msgpack ``SessionState``), replaced together
        by ``BROWSER_SESSION_SAVE``."""
        return self._key("browser-sessions", identity)

    @cached_property
    def config(self) -> str:
        """The job's configuration, written by ``crawlog crawl``."""
        return self._key("config")

    @cached_property
    def start_requests(self) -> str:
        """Integer: how many of the spider's ``start_requests()`` the crawl has enqueued
        (`eventlog._jobs.start_requests_done`): a crawl resumed after a kill goes on after them."""
        return self._key("start_requests")

    @cached_property
    def run(self) -> str:
        """Hash ``run`` -> the job's latest run (absent: the first crawl's, 1), ``state`` ->
        ``running`` from the moment ``crawlog recrawl`` starts it, ``finished`` once every
        task of it ended (`eventlog._runs`)."""
        return self._key("run")

    @cached_property
    def identity(self) -> str:
        """Hash ``id`` -> the job's identity (minted at its creation, recorded in every
        projector manifest too), ``epoch`` -> its fencing epoch (raised by each
        ``crawlog restore``): a store without it, or with another, is not the job's store."""
        return self._key("identity")

    @cached_property
    def restored(self) -> str:
        """Hash task id -> ``<lane>|<entry id>`` of each task the last ``crawlog restore``
        put back in a lane, and `RESTORED_EPOCH` / `RESTORED_POSITION` -> that restore's
        epoch and committed position: a journal flush adopts there the writes a worker made
        before the loss (``SETTLE``), for a task nobody claimed since."""
        return self._key("restored")

    @cached_property
    def write_probe(self) -> str:
        """Never created: a worker's offline ride sets it only if it exists (``SET XX``),
        a write the server refuses as it refuses any other (`eventlog._probe`)."""
        return self._key("probe")

    @cached_property
    def projector(self) -> str:
        """The projector's committed position, published for those who wait for it."""
        return self._key("projector")

    # -- The projector's lease (one projector per job, wherever it runs) -----------------

    @cached_property
    def projector_lease(self) -> str:
        """Held by the job's one projector while it runs, wherever it runs: its value is
        the holder (`ProjectorHolder`, JSON), its TTL renewed (``_projector_lease``)."""
        return self._key("projector", "lease")

    @cached_property
    def projector_committer(self) -> str:
        """The holder (`ProjectorHolder`, JSON) whose commit last moved the published
        position and trimmed the log: where the job's archive is."""
        return self._key("projector", "committer")

    def evidence(self, task_id: str) -> str:
        """The response a recovered task's worker got before it parsed it (an `Evidence`,
        msgpack, expiring): what the task's abort carries if that worker dies too."""
        return self._key("evidence", task_id)

    def event_ids(self, generation: int) -> str:
        """Event ids appended during one dedup-window generation."""
        return self._key("eids", generation)

    @cached_property
    def crawl_lock(self) -> str:
        """Held while a ``crawlog crawl`` of the job runs (``hold_job_crawl``)."""
        return self._key("crawl")

    def worker_lock(self, worker: str) -> str:
        """Held while a process lives under the worker name ``worker``."""
        return self._key("worker", worker)

    def host_slots(self, host: str) -> str:
        """Zset of the politeness slots held on ``host``: token -> expiry (server ms)."""
        return self._key("host", host, "slots")

    def host_next(self, host: str) -> str:
        """The server time (ms) before which no request to ``host`` may start."""
        return self._key("host", host, "next")

    def host_delay(self, host: str) -> str:
        """A per-host delay (ms) set by a worker, e.g. from robots.txt's Crawl-delay."""
        return self._key("host", host, "delay")

    def host_adapted_delay(self, host: str) -> str:
        """The delay (ms) of ``host`` adapted to its latency (``--autothrottle``), every
        worker's samples folded in by `POLITENESS_OBSERVE`."""
        return self._key("host", host, "adapted")

    def slots_held(self, holder: str) -> str:
        """Hash slot token -> host of the politeness slots ``holder`` (a worker name)
        holds: what its take-back or the recovery of its tasks frees."""
        return self._key("held", holder)

    def fetches_started(self, holder: str) -> str:
        """Hash task id -> '' of the tasks ``holder`` (a worker name) took a politeness slot
        for since their last write: set by `POLITENESS_ACQUIRE` with the slot, before the
        request goes, and cleared by the `SETTLE` that records the page (any mode but
        'note'). A task taken again after a lost lease (a take-back, a reclaim) with an
        entry here may have had a request on its way that the log never heard of."""
        return self._key("started", holder)

    def host_slot_keys(self, host: str, holder: str) -> list[str]:
        """The keys of a slot on ``host`` taken by ``holder``, as `POLITENESS_ACQUIRE`
        takes them (a release frees the slot in the first and the fourth)."""
        return [
            self.host_slots(host),
            self.host_next(host),
            self.host_delay(host),
            self.slots_held(holder),
            self.host_adapted_delay(host),
            self.fetches_started(holder),
        ]

    def robots(self, site: str) -> str:
        """The robots.txt response of ``site`` (`eventlog.RobotsFile`, msgpack), kept for
        its lifetime (PX): fetched once per job by one worker, read by every other."""
        return self._key("robots", site)

    def robots_fetch(self, site: str) -> str:
        """Held (PX) by the worker fetching ``site``'s robots.txt: the others wait."""
        return self._key("robots", site, "fetch")

    def robots_ready(self, site: str) -> str:
        """A one-element list pushed once ``site``'s robots.txt is stored: the workers
        waiting for it block on it (BLMOVE onto itself, so each one sees the element)."""
        return self._key("robots", site, "ready")
