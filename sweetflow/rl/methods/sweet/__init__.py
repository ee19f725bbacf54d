"""SWEET-RL (`method: sweet`): the preference loss on the step pairs a critic ranked, with the NLL term
on the chosen actions."""
