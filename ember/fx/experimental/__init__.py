"""ember.fx.experimental (torch.fx.experimental): make_fx lives in proxy_tensor."""
