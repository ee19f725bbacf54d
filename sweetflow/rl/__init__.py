"""The learning code: preference pairs, token sequences, log-probs, the losses, batching, the
training loop, SFT and preference training, candidates and the critic check."""
