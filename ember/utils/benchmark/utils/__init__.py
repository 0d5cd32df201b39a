"""torch.utils.benchmark.utils: the Timer, Measurement and Compare modules."""
