"""The checks that localise a defect beyond the dump: the per-op meta check, the single-op check
(and the ops it does not judge), subgraph isolation and its standalone repro."""
