"""Rows of points in, rows of results out, below the command line.

A source (sources.py) yields chunks of points from one point's worth of
text, CSV/TSV, JSON Lines, Parquet or standard input; a computation
(computations.py) turns a chunk's columns into its result columns (value
and gradient, Hessian entries, check verdicts); a writer (writers.py, one
registry for every format) writes them. pipeline.py runs the three in this
process, all or nothing; dask_engine.py runs the same pipeline one task per
file on a Dask cluster, and depends on it, never the reverse. The pipeline
takes typed options (options.BatchOptions), never the command line's own.
"""
