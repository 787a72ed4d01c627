"""Flows: one task's long browser interaction, checkpointed at its business boundaries.

A flow is declared once, on the spider, with the names of its steps and its recovery path
(the idempotent moves that bring a fresh browser back to where a checkpoint was: navigate,
set the filters, go to page N)::

    FLOW = Flow("ship-orders", steps=("filter", "ship"), recover=back_to)

    async def parse(self, response):
        run = await FLOW.enter(response)      # the recovery path is run on a resume
        for key in run.remaining(keys_on_page):
            await run.once(f"confirm:{key}", confirm, policy="verify", verify=confirmed)
            await run.checkpoint("ship", page=n, last_key=key, items=[Item(key, {...})])

`FlowRun.checkpoint` writes the items it is given and a checkpoint in one fenced step
(`crawler.TaskProgress.save`): its `FlowState` — the flow's name, the hash of its step names,
the step reached, the page and the last item key done there, the flow's own data — is
the checkpoint's ``Cursor.state``. A task resumed from it fetches the same page again, runs
the recovery path, and `FlowRun.remaining` skips the items up to and including the last
key: a page half done goes on after its last item, never repeating it.

An action that must not run twice (`FlowRun.once`) is the task's two-phase marker, as
``response.once``: its intent logged before it runs, its completion after. Found intended
on a resume (the worker died in between, the outcome unknown), its declared policy says
what happens — never a blind retry: ``verify`` runs a read-only check (done: its
completion is logged and it is skipped; not done: it runs), ``ask`` pauses the task for a
person (``crawlog resolve --done|--redo|--abort``), ``abort`` fails the task.

A flow whose definition changed since its checkpoint (other step names, or the same in
another order) is refused on resume (`FlowChanged`), not run from a wrong place.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, Literal, TypeVar

import msgspec

from crawler._spider import Item, Response, TaskProgress
from eventlog import CrawlogError, Evidence

T = TypeVar("T")

DEFAULT_STEP_ATTEMPTS: Final = 3
"""Tries of one step (the recovery path run between two) before a person is asked."""
SCREENSHOT_QUALITY: Final = 60
"""JPEG quality of a report's screenshot: enough to read a page, small enough to log."""

Policy = Literal["verify", "ask", "abort"]
"""What a flow does with an action whose intent is logged and its outcome not."""
POLICIES: Final[tuple[Policy, ...]] = ("verify", "ask", "abort")
HASH_CHARS: Final = 16
HTML: Final = "text/html; charset=utf-8"

Recover = Callable[[Any, "FlowState"], Awaitable[None]]
"""The recovery path: given the live page and the state resumed from, it brings the page
back to where that state was taken (idempotent: it may run several times)."""


class FlowChanged(CrawlogError):
    """A flow's steps are not those its checkpoint was taken with: it is not resumed."""


class FlowAborted(CrawlogError):
    """A flow stopped rather than guess: an uncertain action whose policy is ``abort``,
    or one whose check could not tell."""


class FlowState(msgspec.Struct, frozen=True, kw_only=True):
    """Where a flow stands, as its checkpoint keeps it (``Cursor.state``, JSON)."""

    flow: str
    definition: str
    """`definition_hash` of the flow's steps when the checkpoint was taken."""
    step: str
    page: int = 1
    last_key: str | None = None
    """The last item done on ``page`` (None: none yet)."""
    data: dict[str, Any] = msgspec.field(default_factory=dict)


def definition_hash(name: str, steps: Sequence[str]) -> str:
    """What a flow's definition comes to: its name and its step names, in order."""
    text = "\n".join((name, *steps))
    return hashlib.blake2b(text.encode(), digest_size=HASH_CHARS // 2).hexdigest()


def after_last(keys: Sequence[str], last_key: str | None) -> list[str]:
    """The keys of a page still to do, its last done being ``last_key``: those after it
    (all of them if it is None or not on the page: the page is not the one it was on)."""
    if last_key is None or last_key not in keys:
        return list(keys)
    return list(keys[keys.index(last_key) + 1 :])


def encode_state(state: FlowState) -> str:
    return msgspec.json.encode(state).decode()


def decode_state(text: str | None) -> FlowState | None:
    """The flow state a checkpoint's ``Cursor.state`` holds; None if it holds none (a task
    on its first run, or one checkpointed by no flow)."""
    if not text:
        return None
    try:
        return msgspec.json.decode(text, type=FlowState)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None


def refusal(state: FlowState, name: str, definition: str) -> str | None:
    """Why a flow ``name`` defined as ``definition`` must not resume from ``state``."""
    if state.flow != name:
        return f"the checkpoint is of flow {state.flow!r}, not {name!r}"
    if state.definition != definition:
        return (
            f"flow {name!r} changed since its checkpoint (definition {state.definition}, "
            f"now {definition}): its steps are not those it stopped in; start the task "
            "afresh (crawlog retry) once the change is meant"
        )
    return None


def uncertain_outcome(policy: Policy, verified: bool | None) -> Literal["skip", "run", "ask"]:
    """What becomes of an action found intended and not done: ``verified`` is what its
    check said (None: no check, or it could not tell)."""
    if policy == "verify" and verified is not None:
        return "skip" if verified else "run"
    if policy == "abort":
        raise FlowAborted("its outcome is unknown and its policy is abort")
    return "ask"


async def _no_recovery(page: Any, state: FlowState) -> None:
    return None


class Flow:
    """A flow's definition: its ``name``, its ``steps`` (names, in order: their hash
    guards a resume) and its recovery path ``recover``."""

    def __init__(
        self,
        name: str,
        *,
        steps: Sequence[str],
        recover: Recover = _no_recovery,
        step_attempts: int = DEFAULT_STEP_ATTEMPTS,
    ) -> None:
        if not steps or len(set(steps)) != len(steps):
            raise ValueError(f"flow {name!r}: steps must be distinct names, at least one")
        self.name, self.steps, self.recover = name, tuple(steps), recover
        self.definition = definition_hash(name, self.steps)
        self.step_attempts = step_attempts
        """K: failures of one step in a row that hand the task to a person."""

    async def enter(self, response: Response) -> FlowRun:
        """The flow at work on ``response``'s page: fresh at its first step, or resumed from
        the task's checkpoint, the recovery path run first (`FlowChanged` if the flow's
        steps are not those of the checkpoint)."""
        if response.progress is None:
            raise FlowAborted("a flow runs in a worker's task (response.progress is None)")
        resumed = decode_state(response.resume.state if response.resume else None)
        if resumed is not None and (why := refusal(resumed, self.name, self.definition)):
            raise FlowChanged(why)
        run = FlowRun(self, response, resumed)
        if resumed is not None:
            await self.recover(response.browser_page, resumed)
        return run


class FlowRun:
    """A flow on one task's page: its state, its checkpoints, its once-only actions."""

    def __init__(self, flow: Flow, response: Response, resumed: FlowState | None) -> None:
        assert response.progress is not None
        self.flow, self.response = flow, response
        self._progress: TaskProgress = response.progress
        self.resumed = resumed
        """The state this run resumed from (None: a first run)."""
        self.state = resumed or FlowState(
            flow=flow.name, definition=flow.definition, step=flow.steps[0]
        )

    def remaining(self, keys: Sequence[str], page: int | None = None) -> list[str]:
        """Of the keys of ``page`` (the state's page if None), those not done yet."""
        if page is not None and page != self.state.page:
            return list(keys)
        return after_last(keys, self.state.last_key)

    async def checkpoint(
        self,
        step: str,
        *,
        page: int = 1,
        last_key: str | None = None,
        data: dict[str, Any] | None = None,
        items: Sequence[Item] = (),
    ) -> None:
        """Write ``items`` and the flow's state (``step`` reached, ``last_key`` the last item
        done on ``page``, ``data`` its own, kept if None) in one step."""
        if step not in self.flow.steps:
            raise ValueError(f"flow {self.flow.name!r} has no step {step!r}")
        state = FlowState(
            flow=self.flow.name,
            definition=self.flow.definition,
            step=step,
            page=page,
            last_key=last_key,
            data=self.state.data if data is None else data,
        )
        await self._progress.save(encode_state(state), items)
        self.state = state

    async def once(
        self,
        name: str,
        action: Callable[[], Awaitable[T]],
        *,
        policy: Policy,
        verify: Callable[[], Awaitable[bool]] | None = None,
    ) -> T | None:
        """Run ``action`` at most once for the task (None if it ran already); an intent
        found without its outcome goes by ``policy`` (module doc)."""
        if policy not in POLICIES:
            raise ValueError(f"action {name!r}: policy {policy!r} is not one of {POLICIES}")
        if policy == "verify" and verify is None:
            raise ValueError(f"action {name!r}: policy verify needs a verify check")
        progress = self._progress
        mark = await progress.mark(name)
        if mark == "done":
            return None
        if mark == "aborted":
            raise FlowAborted(f"action {name!r}: a person decided to stop the flow")
        if mark == "intended":
            verified = None if verify is None else await _checked(verify)
            try:
                outcome = uncertain_outcome(policy, verified)
            except FlowAborted as aborted:
                raise FlowAborted(f"action {name!r}: {aborted}") from None
            if outcome == "skip":
                await progress.done(name, "verified")
                return None
            if outcome == "ask":
                why = f"uncertain action {name}: {policy} asks a person"
                await progress.ask(name, self._where(why), await self.report())
        else:
            await progress.intend(name)
        value = await action()
        await progress.done(name)
        return value

    async def step(
        self, name: str, action: Callable[[], Awaitable[T]], *, item: str | None = None
    ) -> T | None:
        """Run step ``name`` (for ``item``, if it is about one): on a failure the recovery
        path runs and the step again, up to the flow's ``step_attempts``; then the task is
        handed to a person with a report (`report`). Their decision (``crawlog resolve``)
        is the step's: ``--done`` skips it (None), ``--redo`` tries it afresh, ``--abort``
        fails the task (`FlowAborted`)."""
        if name not in self.flow.steps:
            raise ValueError(f"flow {self.flow.name!r} has no step {name!r}")
        action_id = f"step:{name}" if item is None else f"step:{name}:{item}"
        if self.resumed is not None:
            # Only a resumed run can find a person's decision (or a park cut short).
            mark = await self._progress.mark(action_id)
            if mark == "done":
                return None
            if mark == "aborted":
                raise FlowAborted(f"step {name!r}: a person decided to stop the flow")
            if mark == "intended":
                await self._progress.ask(action_id, self._where(f"step {name} waits"))
        failure: Exception | None = None
        for attempt in range(self.flow.step_attempts):
            if attempt:
                await self.flow.recover(self.response.browser_page, self.state)
            try:
                return await action()
            except CrawlogError:
                raise  # crawlog's own (a lease lost, a person asked): not the step's failure
            except Exception as exc:  # the spider's step: any other failure counts
                failure = exc
        assert failure is not None
        why = f"step {name} failed {self.flow.step_attempts} times: {_said(failure)}"
        await self._progress.intend(action_id)  # what a person's decision is about
        await self._progress.ask(action_id, self._where(why), await self.report())
        return None  # not reached: asking parks the task

    def _where(self, why: str) -> str:
        """``why``, with where the flow stands: its step and cursor."""
        state = self.state
        after = f"after {state.last_key}" if state.last_key else "at its start"
        return f"flow {self.flow.name}: {why} (step {state.step}, page {state.page} {after})"

    async def report(self) -> Evidence | None:
        """What a person sees of the live page: its URL, its HTML and a screenshot (None
        without a live page, or if it cannot be read any more)."""
        page = self.response.browser_page
        if page is None:
            return None
        try:
            html = (await page.content()).encode()
            image = await page.screenshot(type="jpeg", quality=SCREENSHOT_QUALITY)
        except Exception:  # a page that crashed: the reason says the rest
            return None
        evidence = Evidence.of(page.url, self.response.status, (), html, content_type=HTML)
        return evidence.with_screenshot(image)


def _said(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__


async def _checked(verify: Callable[[], Awaitable[bool]]) -> bool | None:
    """What a read-only check says; None if it raised (then a person decides)."""
    try:
        return bool(await verify())
    except Exception:
        return None


__all__ = [
    "DEFAULT_STEP_ATTEMPTS",
    "POLICIES",
    "Flow",
    "FlowAborted",
    "FlowChanged",
    "FlowRun",
    "FlowState",
    "Policy",
    "after_last",
    "decode_state",
    "definition_hash",
    "encode_state",
    "refusal",
    "uncertain_outcome",
]
