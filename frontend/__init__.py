"""Frontends: models from other frameworks into relay."""
