"""adgrad's own fuzzer: generators (gen.py), properties (check.py), a campaign (__main__.py).

tests/test_fuzz.py runs a bounded number of cases under hypothesis in CI;
`python -m tests.fuzz --n 100000 --seed S` runs a long campaign and reports counts.
"""
