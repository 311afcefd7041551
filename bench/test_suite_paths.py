"""README's `pytest` collects bench/ beside tests/ (pyproject's testpaths): a bench script must not shadow an
installed package for the tests that import it after collection or after a test ran a bench script
(bench/transformers.py vs Hugging Face's, which tests/torch_compile imports inside its tests)."""
import importlib.machinery
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent


def test_bench_scripts_do_not_shadow_installed_packages():
    elsewhere = [p for p in sys.path if Path(p or ".").resolve() != BENCH]
    shadowed = []
    for script in sorted(BENCH.glob("*.py")):
        installed = importlib.machinery.PathFinder.find_spec(script.stem, elsewhere)
        if installed is None or not installed.origin or Path(installed.origin).resolve().is_relative_to(ROOT):
            continue   # no package of that name outside this repository
        found = importlib.machinery.PathFinder.find_spec(script.stem, sys.path)
        if found is not None and found.origin and Path(found.origin).parent == BENCH:
            shadowed.append(f"{script.name} shadows {installed.origin}")
    assert not shadowed, "\n".join(shadowed)


def test_no_two_test_files_share_a_name():
    """tests/ and bench/ are rootless (no __init__.py): pytest imports each test file by its basename, so a second
    file of the same name fails collection ("import file mismatch": tests/torch_compile/test_streams.py beside
    bench/test_streams.py did)."""
    seen: dict[str, Path] = {}
    clashes = []
    for path in sorted([*ROOT.joinpath("tests").rglob("test_*.py"), *BENCH.glob("test_*.py")]):
        if path.name in seen:
            clashes.append(f"{seen[path.name].relative_to(ROOT)} and {path.relative_to(ROOT)}")
        seen.setdefault(path.name, path)
    assert not clashes, "test files sharing a name:\n" + "\n".join(clashes)
