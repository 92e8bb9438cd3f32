"""A stand-in for Triton in pkb's host tests: a version and nothing else."""
__version__ = "0+stub"
