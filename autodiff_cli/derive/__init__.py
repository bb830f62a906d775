"""Derivatives as graphs: recorded by running the derivative rules over an
algebra that records (record.py), simplified as they are made, printed as
formulas or code (printers.py), propagated forward (forward.py), and checked
against finite differences (check.py)."""
