"""The seam's ``ProjectorFence`` contract, on each backend: a handle that holds one version
set never folds after another set's refold, either because the refold is refused while it
holds (``others``) or because its next fold sees that the tables changed (``changed``)."""

from __future__ import annotations

from forkline_es.testing.backends import BackendOpener


def test_a_refold_to_another_set_is_refused_or_seen_by_the_holder(open_backend_handle: BackendOpener) -> None:
    holder, upgrader = open_backend_handle(), open_backend_handle()
    with holder.transaction("hold") as cur:
        holder.projectors.gate(cur)
        holder.projectors.hold(cur, 1)
    with holder.transaction("fold") as cur:
        assert not holder.projectors.changed(cur)  # nothing happened since the hold
    with upgrader.transaction("refold") as cur:
        upgrader.projectors.gate(cur)
        assert not upgrader.projectors.others(cur, 1)  # the same set never stands in the way
        refused = upgrader.projectors.others(cur, 2)
        if not refused:
            cur.execute("CREATE TABLE refolded (x integer)")  # what a refold's DDL does
            upgrader.projectors.hold(cur, 2)
    with holder.transaction("fold") as cur:
        assert refused or holder.projectors.changed(cur)


def test_a_handle_that_holds_nothing_has_nothing_to_check(open_backend_handle: BackendOpener) -> None:
    idle, other = open_backend_handle(), open_backend_handle()
    with other.transaction("ddl") as cur:
        cur.execute("CREATE TABLE moved (x integer)")
    with idle.transaction("fold") as cur:
        assert not idle.projectors.changed(cur)
        assert not idle.projectors.others(cur, 7)  # no holder anywhere
