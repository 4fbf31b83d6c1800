"""The oracle: facts, memory and reference inference from the model alone."""
