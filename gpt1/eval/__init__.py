"""Measuring: metrics, intervals, baselines, zero-shot heuristics, Table 5 and Figure 2."""
