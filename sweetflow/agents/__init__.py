"""Agents (policies) backed by a model: a local checkpoint generating in process (`transformers`),
a served model (`openai`), and a recorded dialogue replayed before a policy takes over (`replay`).
The domains' scripted agents are in their packages. Every agent implements `sweetflow.dialogue.Agent`."""
