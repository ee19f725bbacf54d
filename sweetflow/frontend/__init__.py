"""ColBench frontend design: HTML tasks, rendering to screenshots and visual-similarity rewards."""
