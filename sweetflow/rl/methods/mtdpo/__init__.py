"""Multi-turn DPO (`method: mtdpo`): the preference loss on the trajectory pairs, every agent turn of a
trajectory in one segment (the policy's view)."""
