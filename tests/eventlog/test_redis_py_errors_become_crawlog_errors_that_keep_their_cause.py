"""`redis_errors` turns what redis-py raises into crawlog's errors (each with the redis-py
error as its cause), the one error of a task group too; anything else goes through as it
was."""

from __future__ import annotations

import pytest
import redis.exceptions

from eventlog import (
    ServerCannotPersist,
    ServerError,
    ServerOutOfMemory,
    ServerUnreachable,
    StoreLost,
    redis_errors,
)

TRANSLATED: list[tuple[redis.exceptions.RedisError, type[Exception]]] = [
    (redis.exceptions.ConnectionError("gone"), ServerUnreachable),
    (redis.exceptions.TimeoutError("slow"), ServerUnreachable),
    (redis.exceptions.OutOfMemoryError("OOM command not allowed"), ServerOutOfMemory),
    (redis.exceptions.ResponseError("MISCONF Errors writing to disk"), ServerCannotPersist),
    (redis.exceptions.ResponseError("NOGROUP No such key 'crawlog:{j1}:tasks'"), StoreLost),
    (redis.exceptions.ResponseError("ERR something else"), ServerError),
]


@pytest.mark.parametrize(("raised", "kind"), TRANSLATED)
def test_a_redis_py_error_becomes_crawlog_s(
    raised: redis.exceptions.RedisError, kind: type[Exception]
) -> None:
    with pytest.raises(kind) as caught, redis_errors("doing a thing"):
        raise raised
    assert caught.value.__cause__ is raised


@pytest.mark.parametrize(("raised", "kind"), TRANSLATED)
def test_the_one_error_of_a_task_group_becomes_crawlog_s(
    raised: redis.exceptions.RedisError, kind: type[Exception]
) -> None:
    group = ExceptionGroup("a task group", [raised])
    with pytest.raises(kind) as caught, redis_errors("doing a thing"):
        raise group
    assert caught.value.__cause__ is raised
    assert raised.__cause__ is group


def test_the_message_says_what_was_being_done() -> None:
    with (
        pytest.raises(ServerUnreachable, match="while claiming tasks"),
        redis_errors("claiming tasks"),
    ):
        raise redis.exceptions.ConnectionError("gone")


def test_another_redis_py_error_goes_through_alone_or_out_of_its_group() -> None:
    raised = redis.exceptions.DataError("cannot send None")
    with pytest.raises(redis.exceptions.DataError) as caught, redis_errors("doing a thing"):
        raise raised
    assert caught.value is raised
    group = ExceptionGroup("a task group", [raised])
    with pytest.raises(redis.exceptions.DataError) as caught, redis_errors("doing a thing"):
        raise group
    assert caught.value is raised and raised.__cause__ is group


def test_other_errors_and_groups_of_several_go_through_as_they_were() -> None:
    with pytest.raises(ValueError), redis_errors("doing a thing"):
        raise ValueError("not redis-py's")
    group = ExceptionGroup(
        "two", [redis.exceptions.ConnectionError("a"), redis.exceptions.ConnectionError("b")]
    )
    with pytest.raises(ExceptionGroup) as caught, redis_errors("doing a thing"):
        raise group
    assert caught.value is group
