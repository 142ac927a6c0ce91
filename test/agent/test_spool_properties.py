"""The spool's invariants under random interleavings of what writers and a delivery run do.

Writers enqueue alerts and ban-tool messages; the one delivery run (the lock
makes it one) claims, delivers, fails (release), refuses (bury) or is killed
(the connection dropped with a claim outstanding, a new one opened, the claim
put back as the next run does). Whatever the order:

- the bound holds: per queue, at most NOTIFY_SPOOL_MAX messages wait, plus
  the one a run has out;
- every alert is delivered exactly once or is a dead letter (never both,
  never lost);
- every ban-tool message is delivered once, a dead letter, or counted as
  dropped (announced with a delivered message, or still to be).
"""

from __future__ import annotations

import collections
import shutil
import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from hostguard.notify import spool
from hostguard.notify.message import Message
from hostguard.notify.spool import ALERTS, EVENTS, Spool


class SpoolMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.directory = tempfile.mkdtemp(prefix="hg-spool-")
        self.spool_max = 1
        self.spool = Spool(self.spool_max, self.directory)
        self.sent: dict[int, list[str]] = {ALERTS: [], EVENTS: []}
        self.delivered: collections.Counter[str] = collections.Counter()
        self.dead: collections.Counter[str] = collections.Counter()
        self.announced = 0
        self.claimed: Message | None = None
        self.dropped_at_claim = 0

    @initialize(spool_max=st.integers(min_value=1, max_value=4))
    def start(self, spool_max: int) -> None:
        self.spool_max = spool_max
        self.spool.close()
        self.spool = Spool(spool_max, self.directory)

    @rule(queue=st.sampled_from([ALERTS, EVENTS]))
    def enqueue(self, queue: int) -> None:
        token = f"{'AB'[queue]}{len(self.sent[queue])}"
        self.sent[queue].append(token)
        self.spool.enqueue(token, None, queue)

    @precondition(lambda self: self.claimed is None)
    @rule()
    def claim(self) -> None:
        self.claimed = self.spool.claim_next()
        self.dropped_at_claim = self.spool.dropped()

    @precondition(lambda self: self.claimed is not None)
    @rule()
    def deliver(self) -> None:
        assert self.claimed is not None
        self.delivered.update(self.claimed.text.split("\n\n"))
        self.spool.delivered(self.claimed.id, self.dropped_at_claim)
        self.announced += self.dropped_at_claim
        self.claimed = None

    @precondition(lambda self: self.claimed is not None)
    @rule()
    def release(self) -> None:
        assert self.claimed is not None
        self.spool.release(self.claimed.id)
        self.claimed = None

    @precondition(lambda self: self.claimed is not None)
    @rule()
    def bury(self) -> None:
        assert self.claimed is not None
        self.dead.update(self.claimed.text.split("\n\n"))
        self.spool.bury(self.claimed.id, "HTTP 400 invalid_payload")
        self.claimed = None

    @rule()
    def crash_and_reopen(self) -> None:
        # A run killed at any point between two steps: its claim stays in the
        # database; the next run's connection puts it back (unclaim_all).
        self.spool.close()
        self.spool = Spool(self.spool_max, self.directory)
        self.spool.unclaim_all()
        self.claimed = None

    @invariant()
    def bound_holds(self) -> None:
        db = self.spool.db()
        for queue in (ALERTS, EVENTS):
            waiting = db.execute(
                "SELECT count(*) FROM message WHERE queue = ? AND merged_into IS NULL", (queue,)
            ).fetchone()[0]
            assert waiting <= self.spool_max + 1, (queue, waiting)

    @invariant()
    def nothing_twice(self) -> None:
        assert all(n == 1 for n in (self.delivered + self.dead).values()), self.delivered + self.dead

    def teardown(self) -> None:
        try:
            self.drain_and_check()
        finally:
            self.spool.close()
            shutil.rmtree(self.directory, ignore_errors=True)

    def drain_and_check(self) -> None:
        if self.claimed is not None:
            self.release()
        for _ in range(10000):
            self.claim()
            if self.claimed is None:
                break
            self.deliver()
        assert self.spool.pending() == 0
        done = self.delivered + self.dead
        assert all(n == 1 for n in done.values())
        assert set(done) <= set(self.sent[ALERTS]) | set(self.sent[EVENTS])
        assert set(self.sent[ALERTS]) <= set(done), set(self.sent[ALERTS]) - set(done)
        missing_bans = set(self.sent[EVENTS]) - set(done)
        assert len(missing_bans) == self.announced + self.spool.dropped()


SpoolMachine.TestCase.settings = hsettings(max_examples=80, stateful_step_count=60, deadline=None)
TestSpool = SpoolMachine.TestCase


def test_a_step_that_fails_midway_leaves_the_connection_usable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A statement failing inside a write step (a full disk, say) rolls the step back; the next step runs."""
    box = spool.Spool(10, str(tmp_path))
    first = box.enqueue("alert one")
    claimed = box.claim_next()
    assert claimed is not None and claimed.id == first

    def fail(*_: object) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(box, "_set_state", fail)
    with pytest.raises(sqlite3.OperationalError):
        box.delivered(first)
    monkeypatch.undo()
    # Rolled back: the message is still there, and the connection takes the next step.
    assert not box.db().in_transaction
    assert box.outcome(first) == "pending"
    second = box.enqueue("alert two")
    assert box.pending() == 2
    box.delivered(first)
    assert (box.outcome(first), box.outcome(second)) == ("delivered", "pending")
