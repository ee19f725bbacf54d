"""The policy-training methods, one folder each, named as the method (`policies.<name>.method`): its
`params.py` holds its knobs and its `training.py` what it trains on; `registry` finds them by name."""
