"""Hostile cases run in a child process under an address-space cap (RLIMIT_AS), so a case that would blow up
memory fails in the child (and is seen as such) instead of taking the test run down with it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

GIB = 1 << 30

_PRELUDE = """
import json, resource, sys, traceback
resource.setrlimit(resource.RLIMIT_AS, ({cap}, {cap}))
def _report(**kw):
    print("RESULT " + json.dumps(kw), flush=True)
try:
{body}
except BaseException as _e:
    _report(error=type(_e).__name__, message=str(_e)[:2000], mro=[c.__name__ for c in type(_e).__mro__],
            trace=traceback.format_exc()[-2000:])
"""


def run_limited(code: str, cap: int = 2 * GIB, timeout: float = 300, env: dict | None = None) -> dict:
    """Run `code` (which may call `_report(**values)`) in a child with RLIMIT_AS = `cap`; returns the last
    report (error=class name, message=..., mro=[...] when it raised), plus the exit code as `rc`."""
    src = _PRELUDE.format(cap=int(cap), body=textwrap.indent(textwrap.dedent(code), "    "))
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    path = os.pathsep.join(p for p in (root, here, os.environ.get("PYTHONPATH", "")) if p)
    proc = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": path, **(env or {})})
    reports = [ln[7:] for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    out = json.loads(reports[-1]) if reports else {}
    out.update(rc=proc.returncode, stderr=proc.stderr[-3000:])
    return out
