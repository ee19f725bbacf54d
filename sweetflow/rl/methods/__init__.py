"""The policy-training methods, one module each, named as the method (`policies.<name>.method`):
`training_data(p, source)` of sweetflow.rl.policy_methods' contract."""
