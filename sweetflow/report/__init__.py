"""The final report: reading the evaluations, checking the paper's ordering, writing tables and plots."""
