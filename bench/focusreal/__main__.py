"""``python -m bench.focusreal``: the focus benchmark on real documentation sites (bench/focusreal/benchmark.py)."""

from bench.focusreal.benchmark import main

if __name__ == "__main__":
    main()
