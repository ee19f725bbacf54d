"""Rejection fine-tuning (`method: rft`): SFT on the offline trajectories whose reward reaches the
domain's `min_reward`."""
