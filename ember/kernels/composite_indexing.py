"""Composite indexing operators (CompositeImplicitAutograd): written with public ember ops."""
import ember


def argwhere(self):
    return ember.nonzero(self)
