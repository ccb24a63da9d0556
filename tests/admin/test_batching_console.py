"""What the console shows of batches (the run's events and their count) and
of singletons (a skipped trigger, a replaced run and the run replacing it)."""

from __future__ import annotations

import re

from tests.support.workflows import emit, runs
from tests.workflows.test_batching import comment, digest
from tests.workflows.test_singleton import by_trigger, request, sync


def test_a_batched_run_shows_its_count_key_and_events(admin, use_workflow, work):
    use_workflow(digest(max_=3))
    for n in range(3):
        comment(n)
    work()
    (row,) = runs("comment-digest")
    page = admin.get(f"/admin/runs/{row.run_id}").get_data(as_text=True)
    assert re.search(r'data-testid="admin-run-batch">3 events · <code>p1</code></dd>', page)
    listed = re.search(r'data-testid="admin-run-batch-events">(.*?)</ol>', page, re.S)
    assert listed and listed.group(1).count("<li>") == 3
    assert [m for m in re.findall(r"<code>(c\d)</code>", listed.group(1))] == ["c0", "c1", "c2"]


def test_singleton_skips_and_replacements_link_the_runs(admin, use_workflow, work):
    use_workflow(sync("replace"))
    request(1)
    work()
    request(2)
    work()
    old, new = by_trigger(1), by_trigger(2)
    page = admin.get(f"/admin/runs/{old.run_id}").get_data(as_text=True)
    assert f'data-testid="admin-run-replaced-by"><a href="/admin/runs/{new.run_id}">' in page
    page = admin.get(f"/admin/runs/{new.run_id}").get_data(as_text=True)
    assert f'data-testid="admin-run-replaces"><a href="/admin/runs/{old.run_id}">' in page
    assert 'data-testid="admin-run-singleton"><code>a1</code>' in page


def test_a_singleton_skip_says_why(admin, use_workflow, work):
    use_workflow(sync("skip"))
    request(1)
    request(2)
    work()
    skipped = by_trigger(2)
    page = admin.get(f"/admin/runs/{skipped.run_id}").get_data(as_text=True)
    assert "a run of its singleton key was open (singleton)" in page
    assert (
        f'data-testid="admin-run-skipped-for"><a href="/admin/runs/{by_trigger(1).run_id}">' in page
    )
    emit("sync.finished", {}, aggregate_id="f1")
