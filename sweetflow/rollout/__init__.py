"""Episodes: the engine that runs many collaborations at once, their trajectories and metrics."""
