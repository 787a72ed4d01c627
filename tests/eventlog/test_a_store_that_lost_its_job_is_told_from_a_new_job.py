"""`store_verdict`: a store is the job's own, new to it, or one that lost it (pure)."""

from __future__ import annotations

import pytest

from eventlog import ArchiveFacts, JobIdentity, StoreFacts, StoreLost, store_verdict

ARCHIVED = ArchiveFacts(job_id="a1", epoch=1, position="100-0", events=50)


def test_a_new_job_gets_an_identity() -> None:
    store = StoreFacts(identity=None, has_keys=False, last_id=None)
    assert store_verdict("j", store, ArchiveFacts()) == "create"


def test_a_job_begun_before_identities_gets_one_where_its_keys_are() -> None:
    store = StoreFacts(identity=None, has_keys=True, last_id="120-0")
    assert store_verdict("j", store, ArchiveFacts(position="100-0", events=5)) == "create"


def test_the_job_s_own_store_is_ok() -> None:
    store = StoreFacts(identity=JobIdentity(job_id="a1"), has_keys=True, last_id="120-0")
    assert store_verdict("j", store, ARCHIVED) == "ok"


@pytest.mark.parametrize(
    ("store", "said"),
    [
        (StoreFacts(identity=None, has_keys=False, last_id=None), "keys are gone"),
        (StoreFacts(identity=None, has_keys=True, last_id="900-0"), "identity key is gone"),
        (
            StoreFacts(identity=JobIdentity(job_id="b2"), has_keys=True, last_id="900-0"),
            "another job",
        ),
        (
            StoreFacts(identity=JobIdentity(job_id="a1"), has_keys=True, last_id="99-5"),
            "before the archive's committed position",
        ),
        (
            StoreFacts(identity=JobIdentity(job_id="a1", epoch=1), has_keys=True, last_id="900-0"),
            None,
        ),
    ],
)
def test_a_store_behind_its_archive_is_lost(store: StoreFacts, said: str | None) -> None:
    if said is None:
        assert store_verdict("j", store, ARCHIVED) == "ok"
        return
    with pytest.raises(StoreLost, match=said) as raised:
        store_verdict("j", store, ARCHIVED)
    assert "crawlog restore --job j" in str(raised.value)


def test_a_store_restarted_from_an_older_copy_is_lost() -> None:
    store = StoreFacts(identity=JobIdentity(job_id="a1", epoch=1), has_keys=True, last_id="900-0")
    with pytest.raises(StoreLost, match="epoch 1"):
        store_verdict("j", store, ArchiveFacts(job_id="a1", epoch=2, position="100-0", events=9))
