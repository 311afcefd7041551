"""examples/two_models_priorities.py: the high-priority model's requests complete first, whichever it is."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import two_models_priorities as tm  # noqa: E402


def test_high_priority_stream_finishes_its_requests_first():
    models = {"squeezenet": tm._session("squeezenet"), "shufflenet": tm._session("shufflenet")}
    for sess, feeds in models.values():
        sess.run(None, feeds)
    for high, low in (("squeezenet", "shufflenet"), ("shufflenet", "squeezenet")):
        means = tm.serve(models, {high: 0, low: 1}, requests=3)
        assert means[high] < means[low], means
