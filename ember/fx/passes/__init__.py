"""Graph passes (torch.fx.passes): shape propagation; dead-code elimination is Graph.eliminate_dead_code."""
