"""TE computes for relay operators: image (registered into strategies.STRATEGIES)."""
