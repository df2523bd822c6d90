"""Judging's writes: executing evaluations (execute, fair, inline, score), budgets, re-scoring,
results and the sweeper; see each module."""
