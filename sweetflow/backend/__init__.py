"""ColBench backend programming: tasks, the sandbox, scoring, the simulated human and scripted agents."""
