"""What a resumable directory records and when a run may continue it (hifi.run.resume); the
kill-and-resume runs themselves are in tests/e2e/test_kill_and_resume.py."""

from __future__ import annotations

import pytest

from hifi.errors import ScenarioError
from hifi.run import resume
from hifi.run.zarr_output import MAX_CHUNK_FRAMES, MIN_CHUNKS, chunk_frames


def test_identity_differs_by_each_recorded_value():
    base = resume.identity("a = 1\n", 3, 2.0)
    assert resume.mismatch(base, resume.identity("a = 1\n", 3, 2.0)) is None
    assert "another scenario" in resume.mismatch(base, resume.identity("a = 2\n", 3, 2.0))
    assert "seed 3" in resume.mismatch(base, resume.identity("a = 1\n", 4, 2.0))
    assert "duration" in resume.mismatch(base, resume.identity("a = 1\n", 3, 2.5))
    older = dict(base, hifi_version="0.0.1")
    assert "hifi version '0.0.1'" in resume.mismatch(older, base)
    assert "netCDF" in resume.mismatch(None, base)


def test_plan_continues_the_matching_partial_and_refuses_another(tmp_path):
    out = tmp_path / "out"
    ident = resume.identity("x\n", 1, 1.0)
    assert resume.plan(out, ident, "INCOMPLETE") == (None, False)          # nothing: start
    partial = tmp_path / ".out.partial-abc"
    partial.mkdir()
    (partial / "INCOMPLETE").write_text("")
    resume.write_identity(partial, ident)
    assert resume.plan(out, ident, "INCOMPLETE") == (partial, False)
    with pytest.raises(ScenarioError, match=r"--resume: cannot resume .*seed 1.*delete that directory"):
        resume.plan(out, resume.identity("x\n", 2, 1.0), "INCOMPLETE")
    out.mkdir()
    resume.write_identity(out, ident)
    assert resume.plan(out, ident, "INCOMPLETE") == (None, True)           # finished: nothing to do


@pytest.mark.parametrize("frame_bytes,n,expected", [
    (13_000_000, 80, 1),                         # an HDL-64E frame: a chunk each
    (100, 100_000, MAX_CHUNK_FRAMES),            # tiny frames, many: the most per chunk
    (100, 600, 600 // MIN_CHUNKS),               # a GNSS receiver's epochs: 64 chunks at least
    (100, 3, 1),                                 # fewer frames than MIN_CHUNKS: a chunk each
    (300_000, 10_000, 3),                        # about 1 MiB a chunk
])
def test_chunk_frames(frame_bytes, n, expected):
    # Expected values: the rule's closed form, min(256, 1 MiB // frame bytes, n // 64), at least 1.
    assert chunk_frames(frame_bytes, n) == expected
