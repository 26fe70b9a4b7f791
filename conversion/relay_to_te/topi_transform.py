"""TE computes for relay operators: transform (registered into strategies.STRATEGIES)."""
